// Packs what a resumed run needs into the checkpoint's training state and back.
#pragma once

#include <cstdint>
#include <string>

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
  double best_metric = 0.0;         // of the early-stopping metric
  int64_t best_step = -1;           // -1: no validation yet
  int64_t bad_validations = 0;      // validations since the best
};

// The optimizer's moments as tensors ("optimizer/exp_avg/NAME", ...), and in the JSON the progress
// and the CPU random generator's state (base64).
checkpoint::TrainingState pack_training_state(const Progress& progress, torch::optim::Optimizer& optimizer,
                                              const NamedParameters& parameters);
// Restores the optimizer's state and the CPU random generator (a format 2 checkpoint's too: the
// optimizer's own archive); returns the progress.
Progress unpack_training_state(const checkpoint::TrainingState& state, torch::optim::Optimizer& optimizer,
                               const NamedParameters& parameters);

}  // namespace trafo::train
