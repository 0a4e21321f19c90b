// Defaults that fit the corpus and the budget (--preset). `trafo train` with no config looks at the
// training pairs and at the budget (--max-time, --max-steps, --max-epochs, or none) and picks a preset:
// values for options the command line and config file left out. An option given always wins; the
// run's config.toml records the preset by name, and a resume keeps it. docs/design.md "Presets" says
// what each preset holds and the measurements behind it.
#pragma once

#include <cstdint>
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
  std::string why;  // one sentence: the facts it was chosen from
};

// The preset `config.preset` names; for "auto", the one the facts call for: `pairs` training pairs (all
// corpora), the budget, and whether the run starts from --init-from. InputError for an unknown name.
PresetChoice choose_preset(const TrainConfig& config, int64_t pairs);

// Sets each value of `choice` that `config` was not given (was_given), and config.preset to its name;
// `resuming`: only the training knobs, as the run's model, tokenizer and data are its own. Returns the
// keys it set.
std::vector<std::string> apply_preset(TrainConfig& config, const PresetChoice& choice, bool resuming = false);

}  // namespace trafo::run_config
