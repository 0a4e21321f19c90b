// `trafo eval`: a model on a test set. Loss = unsmoothed NLL per non-padding target token (eos
// included) under teacher forcing, ppl = exp(loss); then the sources are translated and scored
// against the references with sacreBLEU-compatible BLEU and chrF.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "trafo/inference_cli/commands.h"
#include "decode_flags.h"
#include "trafo/data/corpus.h"
#include "trafo/errors.h"
#include "trafo/eval/evaluator.h"
#include "trafo/metrics/bleu.h"
#include "trafo/metrics/chrf.h"
#include "trafo/metrics/language_id.h"
#include "trafo/ops/eligibility.h"
#include "trafo/util/files.h"
#include "trafo/util/language_tag.h"

namespace trafo::cli {
namespace {

struct EvalOptions {
  inference::RuntimeOptions runtime;
  inference::SearchOptions decode;
  std::string source;  // source sentences, one a line
  std::string reference;  // their reference translations, line-aligned
  std::string output;  // where to write the translations (none when empty)
  bool json = false;   // one JSON object on one line instead of text
  std::string glossary;  // a file of term pairs the translations must use ("": none)
};

// A model of several target languages whose checkpoint holds a language identifier: the share of the
// translations it labels another language than the one asked (--tgt-lang's, or the line's own code),
// over those whose reference it labels as asked (metrics::OffTarget), the same share over every
// translation it labels, and the share of the references it labels as asked. Null otherwise.
nlohmann::json off_target(const inference::LoadedModel& loaded, const eval::EvalSet& set,
                          const std::vector<std::string>& hypotheses) {
  const auto codes = loaded.inference.target_languages();
  if (codes.size() < 2 || !inference::identifier_knows(loaded.inference.language_id, codes)) return nullptr;
  const auto identifier = metrics::LanguageId::from_json(loaded.inference.language_id);
  std::string chosen;  // the code of the tag put before every source, if any
  for (const auto& [tag, id] : inference::corpus_tag_ids(loaded.inference, loaded.tokenizer)) {
    if (id == loaded.tag && !util::tag_language(tag).empty()) chosen = util::tag_language(tag);
  }
  std::vector<std::string> asked;
  for (const auto& source : set.sources) {
    asked.push_back(chosen.empty() ? std::string(util::tag_language(util::leading_tag(source))) : chosen);
  }
  const auto counts = metrics::OffTarget::count(identifier, asked, set.references, hypotheses);
  if (counts.references > 0 && counts.references_identified() < 0.98) {
    spdlog::warn("the language identifier labels {:.1f}% of the references as the language asked (under 98%): "
                 "the off-target rate says little", 100.0 * counts.references_identified());
  }
  std::vector<int64_t> line_numbers;
  for (const int64_t i : counts.off_lines) line_numbers.push_back(i + 1);
  return {{"rate", counts.rate()},
          {"lines", counts.off()},
          {"line_numbers", line_numbers},
          {"judged", counts.judged},
          {"labelled_rate", counts.labelled_rate()},
          {"labelled_lines", counts.labelled_off},
          {"labelled", counts.labelled},
          {"references_identified", counts.references_identified()},
          {"references_judged", counts.references}};
}

int run_eval(const EvalOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  inference::validate(options.decode);
  std::vector<util::NamedPath> inputs = {
      {"--src", options.source}, {"--ref", options.reference}, {"--checkpoint", options.runtime.checkpoint}};
  for (const auto& path : options.runtime.ensemble) inputs.push_back({"--checkpoint", path});
  if (!options.glossary.empty()) inputs.push_back({"--glossary", options.glossary});
  util::refuse_overwriting("--output", options.output, inputs);
  const int64_t sentences = data::check_parallel_files(options.source, options.reference);
  // The glossary's form is checked before the model loads; its terms are cut by the model's tokenizer.
  const auto glossary = options.glossary.empty() ? inference::Glossary::File{} : inference::read_glossary(options.glossary);
  const inference::Translation engine(
      std::make_shared<const inference::LoadedModel>(inference::load_for_translation(options.runtime)), options.decode,
      glossary);
  const auto& loaded = engine.loaded();
  const auto set = eval::EvalSet::read(options.source, options.reference, loaded.tokenizer,
                                       loaded.model->config().max_positions, 0, loaded.tag);
  inference::require_targets(loaded, set.sources, options.source);
  auto models = loaded.models();
  const auto evaluated = eval::Evaluator(engine.options())
                             .run(models, set, [&](const std::vector<std::string>& sources) {
                               return engine.translate_best(sources);
                             });
  const auto& loss = evaluated.loss;
  const auto& hypotheses = evaluated.hypotheses;
  const auto off = off_target(loaded, set, hypotheses);
  const auto& bleu = evaluated.bleu;
  const auto& chrf = evaluated.chrf;
  const double mean_loss = loss.mean();
  if (!options.output.empty()) {
    std::string text;
    for (const auto& hypothesis : hypotheses) text += hypothesis + "\n";
    util::write_file_atomically(options.output, text);
  }

  const metrics::BleuOptions bleu_options;
  const metrics::ChrfOptions chrf_options;
  const auto bleu_signature = metrics::bleu_signature(bleu_options, 1);
  const auto chrf_signature = metrics::chrf_signature(chrf_options, 1);
  const std::chrono::duration<double> seconds = std::chrono::steady_clock::now() - start;

  if (options.json) {
    nlohmann::json result = {{"bleu", bleu.score},
                                   {"chrf", chrf.score},
                                   {"loss", mean_loss},
                                   {"ppl", std::exp(mean_loss)},
                                   {"sentences", sentences},
                                   {"seconds", seconds.count()},
                                   {"loss_seconds", evaluated.loss_seconds},
                                   {"translate_seconds", evaluated.translate_seconds},
                                   {"repetition_loops", evaluated.repetition_loops},
                                   {"target_tokens", loss.tokens},
                                   {"loss_pairs", loss.pairs},
                                   {"beam", options.decode.beam},
                                   {"precision", loaded.bf16 ? "bf16" : "fp32"},
                                   {"cpu_kernels", loaded.model->parameters().front().device().is_cpu()
                                                       ? ops::isa_name(ops::cpu_isa())
                                                       : "cuda"},
                                   {"signature", bleu_signature},
                                   {"chrf_signature", chrf_signature},
                                   {"bleu_verbose", metrics::format(bleu)},
                                   {"checkpoint", options.runtime.checkpoint}};
    if (!off.is_null()) result["off_target"] = off;
    if (engine.options().language_check) result["retry_off_target"] = engine.options().retry_off_target;
    std::cout << result.dump() << '\n';
  } else {
    std::printf("loss %.4f  ppl %.2f  (%lld target tokens in %lld pairs)\n", mean_loss, std::exp(mean_loss),
                static_cast<long long>(loss.tokens), static_cast<long long>(loss.pairs));
    std::cout << metrics::format(bleu, 2, bleu_signature) << '\n' << metrics::format(chrf, 2, chrf_signature) << '\n';
    if (!off.is_null()) {
      std::printf("off-target: %.1f%% of %lld translations in another language than asked, of those whose reference "
                  "the identifier labels as asked (%.1f%% of all %lld it labels; it labels %.1f%% of the references "
                  "as asked)\n",
                  100.0 * off["rate"].get<double>(), static_cast<long long>(off["judged"].get<int64_t>()),
                  100.0 * off["labelled_rate"].get<double>(), static_cast<long long>(off["labelled"].get<int64_t>()),
                  100.0 * off["references_identified"].get<double>());
    }
    std::printf("repetition loops: %lld of %lld translations repeat an n-gram 4 or more times in a row\n",
                evaluated.repetition_loops, static_cast<long long>(hypotheses.size()));
    std::printf("%lld sentences in %.1f s (translation %.1f s, beam %d)\n", static_cast<long long>(sentences),
                seconds.count(), evaluated.translate_seconds, options.decode.beam);
  }
  std::cout.flush();
  if (!std::cout) throw RunError("cannot write the results to standard output");
  return 0;
}

}  // namespace

CommandRunner add_eval_command(CLI::App& app) {
  auto options = std::make_shared<EvalOptions>();
  CLI::App* command = app.add_subcommand(
      "eval",
      "evaluate a model on a test set: loss and perplexity of the references under teacher forcing "
      "(unsmoothed NLL per target token, eos included), then BLEU and chrF of its translations "
      "(sacreBLEU 2 compatible, signature printed)");
  add_runtime_flags(*command, options->runtime, /*with_precision=*/true, /*ensemble=*/true);
  command->add_option("--src,-s", options->source, "source sentences, one a line")->required();
  command->add_option("--ref,-r", options->reference, "reference translations, line-aligned with --src")->required();
  command->add_option("--output,-o", options->output, "also write the translations to this file");
  command->add_flag("--json", options->json, "print one JSON object on one line");
  add_decode_flags(*command, options->decode, /*with_n_best=*/false);
  add_language_check_flag(*command, options->decode);
  command->add_option("--glossary", options->glossary,
                      "a file of terms, 'source term<TAB>target term' a line, that the translations must use, as "
                      "translate --glossary");
  add_number_checks(*command);
  return [options] { return run_eval(*options); };
}

}  // namespace trafo::cli
