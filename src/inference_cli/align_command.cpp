// `trafo align`: word alignments of given line pairs (a corpus and its translation, or a test set and
// its references) from a model's cross-attention, one line of Pharaoh links per pair, as
// marian-scorer --alignment prints them. A model trained with --guided-alignment aligns with its
// guided head.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>
#include <string>

#include "trafo/inference_cli/commands.h"
#include "decode_flags.h"
#include "trafo/data/corpus.h"
#include "trafo/errors.h"
#include "trafo/inference/translation.h"
#include "trafo/util/files.h"

namespace trafo::cli {
namespace {

struct AlignOptions {
  inference::RuntimeOptions runtime;
  std::string source, target;
};

int run_align(const AlignOptions& options) {
  data::check_parallel_files(options.source, options.target);
  const inference::Translation engine(
      std::make_shared<const inference::LoadedModel>(inference::load_for_translation(options.runtime)), {});
  const auto& loaded = engine.loaded();
  const auto head = inference::default_alignment_head(loaded.model->config());
  spdlog::info("aligning with {}", head.head >= 0 ? fmt::format("the guided head (decoder layer {}, head 1)", head.layer + 1)
                                                   : std::string("every decoder layer's cross-attention, heads averaged"));
  const auto sources = util::read_lines(options.source), targets = util::read_lines(options.target);
  inference::require_targets(loaded, sources, options.source);
  const auto started = std::chrono::steady_clock::now();
  const auto links = engine.align(sources, targets);
  spdlog::info("aligned {} pairs in {:.3f} s", links.size(),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  std::string out;
  for (const auto& pair : links) out += inference::pharaoh(pair) + '\n';
  std::cout << out;
  std::cout.flush();
  if (!std::cout) throw RunError("cannot write the alignments to standard output");
  return 0;
}

}  // namespace

CommandRunner add_align_command(CLI::App& app) {
  auto options = std::make_shared<AlignOptions>();
  CLI::App* command = app.add_subcommand(
      "align",
      "word alignments of line pairs from a model's cross-attention: one line of Pharaoh links (SRC-TGT word "
      "numbers, 0-based, words split at spaces) per pair; a model trained with --guided-alignment aligns with "
      "its guided head");
  add_runtime_flags(*command, options->runtime);
  command->add_option("--src,-s", options->source, "source sentences, one a line")->required();
  command->add_option("--tgt,-t", options->target, "target sentences, line-aligned with --src")->required();
  add_number_checks(*command);
  return [options] { return run_align(*options); };
}

}  // namespace trafo::cli
