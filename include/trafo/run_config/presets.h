// Defaults that fit the corpus and the budget (--preset). `trafo train` with no config looks at the
// training pairs and at the budget (--max-time, --max-steps, --max-epochs, or none) and picks a preset
// (a --max-time budget by the epochs the built-in defaults train in it on this machine, timed):
// values for options the command line and config file left out. An option given always wins; the
// run's config.toml records the preset by name, and a resume keeps it. docs/design.md "Presets" says
// what each preset holds and the measurements behind it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "trafo/run_config/options.h"

namespace trafo::run_config {

struct Preset {
  std::string name;
  std::string summary;                                     // what it is for, for --help and the log
  std::vector<std::pair<std::string, std::string>> values;  // config key and value, as a config file writes them
};

// Every preset, "standard" (the built-in defaults) first.
const std::vector<Preset>& presets();

// The preset called `name`, or nullptr; and every name, "standard, ...", for messages.
const Preset* find_preset(const std::string& name);
std::string preset_names();

struct PresetChoice {
  const Preset* preset = nullptr;
  std::string why;     // one sentence: the facts it was chosen from
  bool timed = false;  // auto chose by the epochs a --max-time budget buys, timed: second_look may revise it
  int languages = 2;   // the languages the training corpora cover (preset_vocab_size)
};

// The languages the training corpora cover, sources and targets together (a corpus without its own
// languages has the run's --src-lang and --tgt-lang): 2 for one direction, 4 for English into French,
// Spanish and Italian.
int corpus_languages(const TrainConfig& config);

// A preset's vocabulary is for one pair of languages, shared by their two sides; corpora that cover more
// languages get as many pieces per language (4,000 for two gives 8,000 for four), up to kMostPresetPieces.
// docs/design.md "Presets" has the measurement.
int64_t preset_vocab_size(int64_t pair_pieces, int languages);
inline constexpr int64_t kMostPresetPieces = 16000;

// What auto knows of the training corpora (all of them): pairs, and the bytes of their target sides.
struct CorpusSize {
  int64_t pairs = 0;
  int64_t target_bytes = 0;
};

// Target tokens per second of the built-in defaults' training steps on this machine, for the config
// given (train::defaults_tokens_per_s); 0 where it is not timed.
using DefaultsSpeed = std::function<double(const TrainConfig&)>;

// The preset `config.run.preset` names; for "auto", the one the facts call for: the corpus, the budget,
// and whether the run starts from --init-from. A --max-time budget is short where the built-in
// defaults would train fewer than kComputeStarvedEpochs epochs in it: `speed` times them (asked only
// then); untimed (0, or no `speed`), two hours or less is short. InputError for an unknown name.
PresetChoice choose_preset(const TrainConfig& config, const CorpusSize& corpus, const DefaultsSpeed& speed = {});

// The epochs below which a --max-time budget gets the small-short preset.
inline constexpr double kComputeStarvedEpochs = 40.0;

// Auto's second look at a timed choice (PresetChoice::timed), once the run has trained a while:
// `epochs` is what the rest of the budget buys at the run's own pace (small-short and the built-in
// defaults go through a corpus at about the same pace, docs/performance.md "Small corpora"). The
// other preset where the first look was wrong by more than kSecondLookMargin either side of
// kComputeStarvedEpochs, else nullptr: a run starts again only for a clear difference.
const Preset* second_look(const std::string& chosen, double epochs);
inline constexpr double kSecondLookMargin = 1.25;

// Sets each value of `choice` that `config` was not given (was_given), the vocabulary as many pieces a
// language as the preset gives a pair (preset_vocab_size), and config.run.preset to its name;
// `resuming`: only the training knobs, as the run's model, tokenizer and data are its own. Returns the
// keys it set.
std::vector<std::string> apply_preset(TrainConfig& config, const PresetChoice& choice, bool resuming = false);

}  // namespace trafo::run_config
