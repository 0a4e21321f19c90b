// `trafo score-pairs`: how likely a model finds each target line given its source line, one line of
// output per pair, for filtering noisy pairs (as marian-scorer and fairseq's --score-reference).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
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

struct ScorePairsOptions {
  inference::RuntimeOptions runtime;
  std::string source, target;
  int64_t batch_tokens = 4096;
  bool normalize = false;    // divide by the target's pieces + eos
  bool word_scores = false;  // add each piece's log p
};

int run_score_pairs(const ScorePairsOptions& options) {
  if (options.batch_tokens <= 0) throw InputError("--batch-tokens must be positive");
  data::check_parallel_files(options.source, options.target);
  inference::SearchOptions search;
  search.batch_tokens = options.batch_tokens;
  const inference::Translation engine(
      std::make_shared<const inference::LoadedModel>(inference::load_for_translation(options.runtime)), search);
  const auto& loaded = engine.loaded();
  const auto sources = util::read_lines(options.source), targets = util::read_lines(options.target);
  inference::require_targets(loaded, sources, options.source);
  const auto started = std::chrono::steady_clock::now();
  const auto scores = engine.score(engine.prepare(sources), targets, options.word_scores);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  int64_t pieces = 0;
  for (const auto& score : scores) pieces += score.pieces;
  spdlog::info("scored {} pairs ({} target pieces) in {:.3f} s: {:.0f} target pieces/s", scores.size(), pieces, seconds,
               static_cast<double>(pieces) / std::max(seconds, 1e-9));
  int64_t unscored = 0;
  std::string out;
  for (const auto& score : scores) {
    unscored += score.scored() ? 0 : 1;
    const double value =
        options.normalize && score.scored() ? score.log_prob / static_cast<double>(score.pieces) : score.log_prob;
    out += fmt::format("{:.6f}", value);
    if (options.word_scores) {
      out += " |||";
      for (const double piece : score.piece_log_probs) out += fmt::format(" {:.6f}", piece);
    }
    out += '\n';
  }
  std::cout << out;
  std::cout.flush();
  if (!std::cout) throw RunError("cannot write the scores to standard output");
  if (unscored > 0) {
    spdlog::warn("{} pairs are longer than the model's {} positions: their score is nan", unscored,
                 loaded.model->config().max_positions);
  }
  return 0;
}

}  // namespace

CommandRunner add_score_pairs_command(CLI::App& app) {
  auto options = std::make_shared<ScorePairsOptions>();
  CLI::App* command = app.add_subcommand(
      "score-pairs",
      "score line pairs with a model: one line per pair, the sum of log p of the target's pieces and eos given "
      "the source (teacher forcing, no label smoothing; summed and divided by the pieces, it is trafo eval's loss, "
      "negated); higher is more likely");
  add_runtime_flags(*command, options->runtime);
  command->add_option("--src,-s", options->source, "source sentences, one a line")->required();
  command->add_option("--tgt,-t", options->target, "target sentences, line-aligned with --src")->required();
  command->add_flag("--normalize", options->normalize, "divide each score by the target's pieces + eos");
  command->add_flag("--word-scores", options->word_scores,
                    "after the score, ' ||| ' and each target piece's log p, eos last");
  command
      ->add_option("--batch-tokens", options->batch_tokens, "padded pieces per batch; the scores do not depend on it")
      ->capture_default_str();
  add_number_checks(*command);
  return [options] { return run_score_pairs(*options); };
}

}  // namespace trafo::cli
