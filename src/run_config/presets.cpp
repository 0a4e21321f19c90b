#include "trafo/run_config/presets.h"

#include <algorithm>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "trafo/errors.h"
#include "trafo/run_config/config_keys.h"
#include "trafo/run_config/run_identity.h"

namespace trafo::run_config {
namespace {

// Corpora below this many pairs get the small-corpus presets (a domain or a low-resource pair).
constexpr int64_t kSmallCorpusPairs = 200'000;
// Untimed, budgets up to this many seconds are short: the model is still learning when they end.
constexpr double kShortBudgetSeconds = 7200.0;
// Epoch budgets up to this many are short too: small-short's smaller batches led the built-in
// defaults at equal epochs in every run measured, up to 94 epochs. At equal updates the built-in
// defaults' larger batches lead, so a --max-steps budget stays long.
constexpr int64_t kShortBudgetEpochs = 100;
// UTF-8 bytes per piece of a training side with the built-in 8,000-piece vocabulary (4.37 for the
// English side of gettext-enfr, 4.45 for the French): an epoch's target tokens before any tokenizer.
constexpr double kBytesPerPiece = 4.4;

const Preset& named(const std::string& name) {
  if (const Preset* preset = find_preset(name)) return *preset;
  throw InputError("unknown preset '" + name + "': expected auto, " + preset_names());
}

struct Budget {
  std::string words;  // the budget, and what it buys where that was timed
  bool short_budget = false;
  bool timed = false;
};

Budget budget_of(const TrainConfig& c, const CorpusSize& corpus, const DefaultsSpeed& speed) {
  const bool epochs = was_given(c, "max-epochs") && c.stop.max_epochs > 0;
  if (epochs && c.stop.max_epochs <= kShortBudgetEpochs) {
    return {fmt::format("--max-epochs {}", c.stop.max_epochs), true};
  }
  const double seconds = parse_duration(c.stop.max_time);
  if (seconds > 0) {
    const double tokens_per_s = speed ? speed(c) : 0.0;
    if (tokens_per_s <= 0) {
      return {fmt::format("--max-time {} (untimed: two hours or less is short)", c.stop.max_time),
              seconds <= kShortBudgetSeconds};
    }
    const double epoch_tokens =  // pieces, and an end of sentence per pair
        std::max(1.0, static_cast<double>(corpus.target_bytes) / kBytesPerPiece + static_cast<double>(corpus.pairs));
    const double budget_epochs = seconds * tokens_per_s / epoch_tokens;
    const bool starved = budget_epochs < kComputeStarvedEpochs;
    return {fmt::format("--max-time {}: the built-in defaults train {:.0f} target tokens/s here (timed), about {:.1f} "
                        "epochs of ~{:.0f} target tokens in the budget, {} {:.0f}",
                        c.stop.max_time, tokens_per_s, budget_epochs, epoch_tokens, starved ? "under" : "not under",
                        kComputeStarvedEpochs),
            starved, true};
  }
  if (was_given(c, "max-steps") && c.stop.max_steps > 0) {
    return {fmt::format("--max-steps {}", c.stop.max_steps), false};
  }
  if (epochs) return {fmt::format("--max-epochs {}", c.stop.max_epochs), false};
  return {"no limit given (early stopping, or --max-steps " + std::to_string(c.stop.max_steps) + ")", false};
}

PresetChoice choose_by_facts(const TrainConfig& c, const CorpusSize& corpus, const DefaultsSpeed& speed) {
  if (c.run.preset != "auto") return {&named(c.run.preset), "asked for (--preset " + c.run.preset + ")"};
  if (!c.init_from.empty()) {
    return {&named("standard"), "--preset auto: fine-tuning from --init-from, whose checkpoint fixes the model"};
  }
  if (corpus.pairs >= kSmallCorpusPairs) {
    return {&named("standard"), fmt::format("--preset auto: {} training pairs (200,000 or more)", corpus.pairs)};
  }
  const auto budget = budget_of(c, corpus, speed);
  return {&named(budget.short_budget ? "small-short" : "small-long"),
          fmt::format("--preset auto: {} training pairs (under 200,000) and {}", corpus.pairs, budget.words),
          budget.timed};
}

}  // namespace

const std::vector<Preset>& presets() {
  static const std::vector<Preset> all = {
      {"standard", "the built-in defaults: corpora of 200,000 pairs or more, fine-tuning", {}},
      {"small-short",
       "a corpus under 200,000 pairs and a budget in which the built-in defaults would train under 40 epochs "
       "(timed on this machine), or of 100 epochs or less: smaller batches and vocabulary (4,000 pieces for two "
       "languages, 2,000 more for each further one), for more updates in the time, and a higher peak learning "
       "rate, for more learning in each",
       {{"batch-tokens", "2048"}, {"vocab-size", "4000"}, {"lr", "0.002"}}},
      {"small-long",
       "a corpus under 200,000 pairs and a longer budget (a --max-time of 40 epochs or more of the built-in "
       "defaults, --max-epochs over 100, --max-steps) or none: the built-in defaults (every regularisation "
       "measured here slowed them)",
       {}},
      // Distilled students (trafo distill), as Bergamot's: a deep encoder, which runs once a sentence,
      // and a shallow decoder, which runs once a piece: the decoder is where the time goes.
      {"student-tiny",
       "a student to distill into (trafo distill): width 256, 8 heads, 6 encoder and 2 decoder layers, "
       "feed-forward 1536, tied embeddings",
       {{"d-model", "256"}, {"heads", "8"}, {"encoder-layers", "6"}, {"decoder-layers", "2"}, {"d-ff", "1536"},
        {"tie-embeddings", "true"}}},
      {"student-base",
       "a larger student (trafo distill): width 512, 8 heads, 6 encoder and 2 decoder layers, feed-forward 2048, "
       "tied embeddings",
       {{"d-model", "512"}, {"heads", "8"}, {"encoder-layers", "6"}, {"decoder-layers", "2"}, {"d-ff", "2048"},
        {"tie-embeddings", "true"}}},
  };
  return all;
}

const Preset* find_preset(const std::string& name) {
  for (const auto& preset : presets()) {
    if (preset.name == name) return &preset;
  }
  return nullptr;
}

std::string preset_names() {
  std::string names;
  for (const auto& preset : presets()) names += (names.empty() ? "" : ", ") + preset.name;
  return names;
}

int corpus_languages(const TrainConfig& c) {
  std::set<std::string> languages;
  for (const auto& corpus : data_files(c).train) {
    languages.insert(source_language(corpus, c.data));
    languages.insert(target_language(corpus, c.data));
  }
  return static_cast<int>(languages.size());
}

int64_t preset_vocab_size(int64_t pair_pieces, int languages) {
  if (languages <= 2) return pair_pieces;
  return std::max(pair_pieces, std::min(kMostPresetPieces, pair_pieces * languages / 2));
}

PresetChoice choose_preset(const TrainConfig& c, const CorpusSize& corpus, const DefaultsSpeed& speed) {
  auto choice = choose_by_facts(c, corpus, speed);
  choice.languages = corpus_languages(c);
  for (const auto& [name, value] : choice.preset->values) {
    if (name != "vocab-size" || choice.languages <= 2 || was_given(c, name)) continue;
    choice.why +=
        fmt::format("; its corpora cover {} languages: {} vocabulary pieces for every two", choice.languages, value);
  }
  return choice;
}

const Preset* second_look(const std::string& chosen, double epochs) {
  if (chosen == "small-short" && epochs >= kComputeStarvedEpochs * kSecondLookMargin) return &named("small-long");
  if (chosen == "small-long" && epochs < kComputeStarvedEpochs / kSecondLookMargin) return &named("small-short");
  return nullptr;
}

std::vector<std::string> apply_preset(TrainConfig& c, const PresetChoice& choice, bool resuming) {
  std::vector<std::string> set;
  for (const auto& [name, value] : choice.preset->values) {
    if (was_given(c, name) || (resuming && defines_run(name))) continue;
    const ConfigKey* key = find_config_key(name);
    if (key == nullptr) throw std::logic_error("preset " + choice.preset->name + " names no key " + name);
    parse_value(
        *key, name == "vocab-size" ? std::to_string(preset_vocab_size(std::stoll(value), choice.languages)) : value, c);
    set.push_back(name);
  }
  c.run.preset = choice.preset->name;
  return set;
}

}  // namespace trafo::run_config
