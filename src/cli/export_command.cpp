// `trafo export`: a checkpoint as a model folder another inference engine loads. One format so
// far, CTranslate2 (src/deploy/ctranslate2.cpp).
#include <memory>
#include <string>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "commands.h"
#include "trafo/checkpoint/checkpoint.h"
#include "trafo/deploy/ctranslate2.h"
#include "trafo/util/files.h"

namespace trafo::cli {
namespace {

struct ExportOptions {
  std::string checkpoint;
  std::string format = "ctranslate2";
  std::string out;
  std::string quantization = "float32";
  bool force = false;  // replace a non-empty --out
};

int run_export(const ExportOptions& options) {
  const auto quantization = deploy::parse_quantization(options.quantization);
  util::refuse_overwriting("--out", options.out, {{"--checkpoint", options.checkpoint}});
  const auto checkpoint = checkpoint::load(options.checkpoint, /*with_training_state=*/false);
  deploy::export_ctranslate2(checkpoint, options.out, quantization, options.force);
  spdlog::info("wrote the CTranslate2 model {} ({}) from {}", options.out, options.quantization, options.checkpoint);
  return 0;
}

}  // namespace

CommandRunner add_export_command(CLI::App& app) {
  auto options = std::make_shared<ExportOptions>();
  CLI::App* command = app.add_subcommand(
      "export",
      "write a checkpoint as a CTranslate2 model folder (model.bin, config.json, shared_vocabulary.json, "
      "sentencepiece.model) for ctranslate2.Translator");
  command->add_option("--checkpoint,-c", options->checkpoint, "model checkpoint written by trafo train or average")
      ->required();
  command->add_option("--format", options->format, "ctranslate2 (the only format so far)")
      ->check(CLI::IsMember({"ctranslate2"}))
      ->capture_default_str();
  command->add_option("--out,-o", options->out, "the model folder to write (new or empty)")->required();
  command->add_option("--quantization", options->quantization,
                      "weights as int8 (= int8_float32: int8 matrices, float32 scales), bfloat16 or float32")
      ->check(CLI::IsMember(deploy::quantization_names()))
      ->capture_default_str();
  command->add_flag("--force", options->force, "replace --out when it holds files");
  return [options] { return run_export(*options); };
}

}  // namespace trafo::cli
