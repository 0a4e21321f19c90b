// `trafo import`: a model of another toolkit as a trafo checkpoint. Today one kind: a Hugging Face
// MarianMT folder (deploy/marian_import.h), such as an OPUS-MT model saved by transformers.
#include <memory>
#include <string>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "trafo/checkpoint/checkpoint.h"
#include "trafo/deploy/marian_import.h"
#include "trafo/errors.h"
#include "trafo/inference_cli/commands.h"
#include "trafo/util/files.h"

namespace trafo::cli {
namespace {

struct ImportOptions {
  std::string from;
  std::string out;
  bool force = false;  // replace an existing --out
};

int run_import(const ImportOptions& options) {
  util::refuse_overwriting("--out", options.out, {{"--from", options.from}});
  std::error_code error;
  if (std::filesystem::exists(options.out, error) && !options.force) {
    throw InputError("--out " + options.out + " exists: give --force to replace it");
  }
  const auto imported = deploy::import_marian(options.from);
  checkpoint::save(options.out, imported);
  const auto& c = imported.model_config;
  spdlog::info("wrote {} from the MarianMT model {}: {}+{} layers, d_model {}, {} heads, {} pieces, {}, {}{}{}",
               options.out, options.from, c.encoder_layers, c.decoder_layers, c.d_model, c.heads, c.vocab_size,
               c.activation, c.tie_embeddings ? "tied embeddings with an output bias" : "untied embeddings",
               imported.inference.tags.empty() ? "" : ", language tags: ",
               imported.inference.tags.empty() ? "" : std::to_string(imported.inference.tags.size()));
  return 0;
}

}  // namespace

CommandRunner add_import_command(CLI::App& app) {
  auto options = std::make_shared<ImportOptions>();
  CLI::App* command = app.add_subcommand(
      "import", "turn a Hugging Face MarianMT folder (an OPUS-MT model) into a trafo checkpoint");
  command->add_option("--from", options->from,
                      "the model folder: config.json, model.safetensors or pytorch_model.bin, vocab.json, source.spm, "
                      "target.spm (as transformers' save_pretrained writes them)")
      ->required();
  command->add_option("--out,-o", options->out, "the checkpoint to write")->required();
  command->add_flag("--force", options->force, "replace --out when it exists");
  return [options] { return run_import(*options); };
}

}  // namespace trafo::cli
