#include "trafo/deploy/export.h"

#include <algorithm>

#include "trafo/deploy/argos.h"
#include "trafo/deploy/ctranslate2.h"
#include "trafo/deploy/huggingface.h"
#include "trafo/errors.h"
#include "trafo/util/files.h"

namespace trafo::deploy {

const std::vector<ExportFormat>& export_formats() {
  static const std::vector<ExportFormat> formats = {
      {"ctranslate2",
       "a CTranslate2 model folder (model.bin, config.json, shared_vocabulary.json, sentencepiece.model) for "
       "ctranslate2.Translator",
       {"float32", "int8", "int8_float32", "bfloat16"}, ctranslate2_files},
      {"argos",
       "an Argos Translate package (one .argosmodel file: the CTranslate2 model, the SentencePiece model and "
       "metadata.json with the languages) that argostranslate installs and LibreTranslate serves",
       {"float32", "int8", "int8_float32", "bfloat16"}, argos_files, /*single_file=*/true},
      {"huggingface",
       "a Hugging Face transformers folder (config.json, model.safetensors, vocab.json, source.spm, target.spm, "
       "tokenizer files) for AutoModelForSeq2SeqLM and AutoTokenizer: MarianMT for --norm post, Pegasus for --norm "
       "pre (tied embeddings)",
       {"float32"}, huggingface_files},
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
  if (!format.single_file) {
    util::write_folder_atomically(out, files, replace);
    return;
  }
  if (std::filesystem::is_directory(out)) throw InputError("--out " + out.string() + " is a folder: name the package file");
  if (std::filesystem::exists(out) && !replace) {
    throw InputError("--out " + out.string() + " exists: give --force to replace it");
  }
  util::write_file_atomically(out, files.front().second);
}

}  // namespace trafo::deploy
