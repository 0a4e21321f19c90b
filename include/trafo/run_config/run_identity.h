// What makes a run folder's run the run it is: the options that define its model, its tokenizer
// and its data. A resume must ask for the same values, and a checkpoint whose own values differ
// (another run's, copied in) is never resumed from. Every other option (limits, validation,
// checkpoints, logs, optimisation, machine, precision) may change at a resume (README "Resuming").
#pragma once

#include <string>
#include <vector>

#include "trafo/run_config/options.h"

namespace trafo::run_config {

// The keys of the groups Data, Vocabulary and Model define a run, except the dropout rates (--dropout,
// --attention-dropout, --activation-dropout, --encoder-layerdrop, --decoder-layerdrop: training knobs);
// data-dir and the four file keys are compared as the files they resolve to.
// One entry per defining option whose values differ: `src-lang "en" vs "de"` (a's value first).
std::vector<std::string> run_differences(const TrainConfig& a, const TrainConfig& b);

// Whether the key called `name` defines a run's model, tokenizer or data (a resume keeps the run's value),
// rather than being a training knob a resume may change (the dropout rates, the optimisation options).
bool defines_run(const std::string& name);

// The data a config trains and validates on: its corpora, else one corpus of the explicit training
// paths or DATA_DIR/train.LANG; the dev files, explicit or DATA_DIR/dev.LANG; the test files, explicit
// or DATA_DIR/test.LANG where both exist (else empty).
struct DataFiles {
  std::vector<CorpusSpec> train;
  std::string dev_src, dev_tgt;
  std::string test_src, test_tgt;
};
DataFiles data_files(const TrainConfig& config);

// A resume takes the run's options where the request leaves them out (was_given): each defining
// option not given, and each dropout rate not given, becomes `run`'s value. The data files (data-dir, train-src,
// train-tgt, dev-src, dev-tgt) and the corpora name the data as one: taken when none is given.
void take_run_options(TrainConfig& config, const TrainConfig& run);

// A new run from --init-from takes the model and vocabulary options of the checkpoint's config
// `theirs` and its model config `model`; each dropout rate is the one given, else the checkpoint's. An
// option given whose value differs from the checkpoint's throws trafo::InputError naming both values.
void take_initial_options(TrainConfig& config, const TrainConfig& theirs, const model::ModelConfig& model);

// The run a config text describes (config.toml, or the config stored in a checkpoint): its keys
// over the defaults. Throws trafo::InputError naming `where` when the text is not a trafo config.
TrainConfig read_run_config(const std::string& text, const std::string& where);

// "a, b and c" for messages.
std::string join_differences(const std::vector<std::string>& differences);

}  // namespace trafo::run_config
