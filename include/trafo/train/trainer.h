// `trafo train` as a library call: data → tokenizer → model → the training loop, with
// validation, checkpoints, exact resume and a metrics log in the run folder.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "trafo/run_config/options.h"

namespace trafo::train {

struct TrainResult {
  std::string reason;     // steps | time | epochs | early-stop | signal
  int64_t step = 0;
  std::string last_checkpoint;
  std::string best_checkpoint;
  double best_metric = 0.0;
};

// The checks every rank would make before training, made once before `--nproc` starts the ranks,
// so that bad input is one line, not one per rank: the options and the data files. Throws
// InputError.
void check_before_launch(const run_config::TrainConfig& config);

class Trainer {
 public:
  // `config` as given: the run settles a copy of it (a resume's options from its run, a new run's
  // from --init-from), which goes into checkpoints and config.toml as run_config::to_toml (config_file.h).
  // `stop_requested` (may be null) is polled after every step: when set, the run saves and ends.
  explicit Trainer(run_config::TrainConfig config, const std::atomic<bool>* stop_requested = nullptr);
  ~Trainer();
  // Throws InputError for bad data or a run folder that cannot be resumed, RunError for
  // failures during training (repeated NaN loss, a full disk).
  TrainResult run();

 private:
  const run_config::TrainConfig config_;
  const std::atomic<bool>* stop_requested_;
};

}  // namespace trafo::train
