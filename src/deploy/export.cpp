#include "trafo/deploy/export.h"

#include <algorithm>

#include "trafo/deploy/ctranslate2.h"
#include "trafo/errors.h"
#include "trafo/util/files.h"

namespace trafo::deploy {

const std::vector<ExportFormat>& export_formats() {
  static const std::vector<ExportFormat> formats = {
      {"ctranslate2",
       "a CTranslate2 model folder (model.bin, config.json, shared_vocabulary.json, sentencepiece.model) for "
       "ctranslate2.Translator",
       {"float32", "int8", "int8_float32", "bfloat16"}, ctranslate2_files},
  };
  return formats;
}

const ExportFormat& export_format(const std::string& name) {
  std::string names;
  for (const auto& format : export_formats()) {
    if (name == format.name) return format;
    names += (names.empty() ? "" : ", ") + std::string(format.name);
  }
  throw InputError("--format must be one of " + names + ", not '" + name + "'");
}

std::string pick_quantization(const ExportFormat& format, const std::string& asked) {
  if (asked.empty()) return format.quantizations.front();
  if (std::find(format.quantizations.begin(), format.quantizations.end(), asked) != format.quantizations.end()) {
    return asked;
  }
  std::string names;
  for (const auto& name : format.quantizations) names += (names.empty() ? "" : ", ") + name;
  throw InputError("--format " + std::string(format.name) + " takes --quantization " + names + ", not '" + asked + "'");
}

void export_model(const checkpoint::Checkpoint& checkpoint, const std::filesystem::path& source,
                  const ExportFormat& format, const std::string& quantization, const std::filesystem::path& out,
                  bool replace) {
  std::vector<std::pair<std::string, std::string>> files;
  try {
    files = format.files(checkpoint, quantization);
  } catch (const InputError& e) {
    throw InputError(source.string() + ": " + e.what());  // what in this checkpoint the format cannot take
  }
  util::write_folder_atomically(out, files, replace);
}

}  // namespace trafo::deploy
