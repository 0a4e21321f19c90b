// Packs what a resumed run needs into the checkpoint's training state and back.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/optim/optimizer.h>

#include "trafo/checkpoint/checkpoint.h"
#include "trafo/data/batcher.h"
#include "trafo/train/optimizer.h"

namespace trafo::train {

struct Progress {
  int64_t step = 0;                 // updates done
  data::StreamPosition data;        // where the data stream continues (every corpus)
  // The first corpus's position, by which epochs are counted.
  data::BatchPosition first_corpus() const { return data.corpora.empty() ? data::BatchPosition{} : data.corpora[0]; }
  double elapsed_s = 0.0;           // wall-clock time of all sessions of the run
  double best_metric = 0.0;         // of the early-stopping metric: checkpoint-best's
  int64_t best_step = -1;           // -1: no validation yet
  // Early stopping watches the mean of the last kSmoothedValidations values of the metric, so that
  // one lucky validation does not start the count: `recent` holds them, `best_smoothed` the best
  // mean, `bad_validations` the validations since that mean last improved.
  std::vector<double> recent;
  double best_smoothed = 0.0;
  int64_t bad_validations = 0;
};

constexpr size_t kSmoothedValidations = 3;

// Takes one validation's value of the early-stopping metric (lower is better for "loss"); returns
// whether the smoothed value improved, and counts bad_validations. Call it before updating
// best_metric and best_step (the raw best that checkpoint-best.pt follows), which are the caller's.
bool watch_plateau(Progress& progress, const std::string& metric, double value);

// The optimizer's moments as tensors ("optimizer/exp_avg/NAME", ...), and in the JSON the progress
// and the CPU random generator's state (base64).
checkpoint::TrainingState pack_training_state(const Progress& progress, torch::optim::Optimizer& optimizer,
                                              const NamedParameters& parameters);
// Restores the optimizer's state and the CPU random generator (a format 2 checkpoint's too: the
// optimizer's own archive); returns the progress.
Progress unpack_training_state(const checkpoint::TrainingState& state, torch::optim::Optimizer& optimizer,
                               const NamedParameters& parameters);

}  // namespace trafo::train
