// The model a run trains and what its optimizer keeps of it: the optimizer, the moving average of the
// weights (--ema) and where the run stands. Parts of a train::Session; internal to train/.
#pragma once

#include <memory>
#include <optional>

#include <c10/core/Device.h>
#include <torch/optim/optimizer.h>

#include "trafo/checkpoint/checkpoint.h"
#include "trafo/model/transformer.h"
#include "trafo/run_config/options.h"
#include "trafo/train/ema.h"
#include "trafo/train/training_state.h"
#include "replicas.h"
#include "resume_choice.h"

namespace trafo::train {

// In training mode on `device`, with rank 0's weights on every rank. The seed is set first: it
// draws a new run's weights (a resumed run's generator is restored from its checkpoint after, by
// OptimizerState). A checkpoint saved with --ema holds the average as its weights: training goes on
// from the raw ones. `config` is final: its model's vocabulary is the tokenizer's.
model::Transformer make_model(const run_config::TrainConfig& config, const ResumePoint& resume,
                              const c10::Device& device, Replicas& replicas);

struct OptimizerState {
  // A new optimizer over `model`'s parameters, as the optimisation group `optim` says (with its moving
  // average, --ema, on rank 0), with a resumed run's state, progress and random generator restored;
  // then `resume` lets its checkpoints go. InputError for a checkpoint whose training state does not
  // unpack.
  OptimizerState(const run_config::OptimOptions& optim, const model::Transformer& model, ResumePoint& resume,
                 bool main_rank);
  OptimizerState(const OptimizerState&) = delete;
  OptimizerState& operator=(const OptimizerState&) = delete;

  // `about` (what the run is: model config, tokenizer, options, languages) with the model's weights and
  // the training state as they are now, `progress.elapsed_s` set to `elapsed_s`; with --ema, the
  // weights are the average's and the raw ones are in the training state.
  checkpoint::Checkpoint checkpoint(const checkpoint::Checkpoint& about, const model::Transformer& model,
                                    double elapsed_s);

  std::optional<WeightAverage> average;  // rank 0's, with --ema
  const std::unique_ptr<torch::optim::Optimizer> optimizer;
  Progress progress;
};

}  // namespace trafo::train
