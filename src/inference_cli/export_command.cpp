// `trafo export`: a checkpoint as a model folder another inference engine loads, in one of the
// formats of deploy::export_formats().
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "trafo/inference_cli/commands.h"
#include "trafo/checkpoint/checkpoint.h"
#include "trafo/deploy/export.h"
#include "trafo/util/files.h"

namespace trafo::cli {
namespace {

struct ExportOptions {
  std::string checkpoint;
  std::string format = "ctranslate2";
  std::string out;
  std::string quantization;  // empty: the format's default
  bool force = false;  // replace a non-empty --out
};

int run_export(const ExportOptions& options) {
  const auto& format = deploy::export_format(options.format);
  const auto quantization = deploy::pick_quantization(format, options.quantization);
  util::refuse_overwriting("--out", options.out, {{"--checkpoint", options.checkpoint}});
  const auto checkpoint = checkpoint::load(options.checkpoint, /*with_training_state=*/false);
  deploy::export_model(checkpoint, options.checkpoint, format, quantization, options.out, options.force);
  spdlog::info("wrote the {} model {} ({}) from {}", format.name, options.out, quantization, options.checkpoint);
  return 0;
}

// "ctranslate2: a CTranslate2 model folder (...); quantization float32 (default), int8, ..." per format.
std::string formats_help() {
  std::string text;
  for (const auto& format : deploy::export_formats()) {
    text += std::string(text.empty() ? "" : "; ") + format.name + ": " + format.description + "; --quantization ";
    for (size_t i = 0; i < format.quantizations.size(); ++i) {
      text += (i > 0 ? ", " : "") + format.quantizations[i] + (i == 0 ? " (default)" : "");
    }
  }
  return text;
}

}  // namespace

CommandRunner add_export_command(CLI::App& app) {
  auto options = std::make_shared<ExportOptions>();
  CLI::App* command = app.add_subcommand("export", "write a checkpoint as a model folder or package for another inference engine");
  command->add_option("--checkpoint,-c", options->checkpoint, "model checkpoint written by trafo train or average")
      ->required();
  std::vector<std::string> names;
  for (const auto& format : deploy::export_formats()) names.push_back(format.name);
  command->add_option("--format", options->format, formats_help())->check(CLI::IsMember(names))->capture_default_str();
  command->add_option("--out,-o", options->out, "the model folder to write (new or empty); for a package format (argos), the file")->required();
  command->add_option("--quantization", options->quantization,
                      "how the weights are stored, as the format allows (see --format); int8 = int8_float32: int8 "
                      "matrices, float32 scales");
  command->add_flag("--force", options->force, "replace --out when it holds files");
  return [options] { return run_export(*options); };
}

}  // namespace trafo::cli
