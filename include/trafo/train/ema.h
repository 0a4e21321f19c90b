// An exponential moving average of a model's parameters (`--ema`; Marian calls it exponential
// smoothing), kept beside them in fp32 on their device. After optimizer step t (1, 2, ...):
//   average = d_t · average + (1 − d_t) · w,   d_t = min(decay, (1 + t) / (10 + t)),
// the warm-up of d_t keeping the early average from being dominated by the random initial weights.
// Validation and checkpoints' `weights` use the average; training goes on from the raw weights,
// which a checkpoint keeps in its training state under "raw_weights/<name>" for an exact resume.
// Buffers (the position table) are not averaged: the model's are used as they are.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include "trafo/checkpoint/checkpoint.h"

namespace trafo::train {

class WeightAverage {
 public:
  // Starts from `module`'s parameters as they are now; `decay` in [0, 1). The parameters must stay
  // the same tensors (updated in place) for the average's lifetime.
  WeightAverage(const torch::nn::Module& module, double decay);

  // d_t of optimizer step `step` (the first step is 1).
  double decay_at(int64_t step) const;
  // Folds the parameters as they are after optimizer step `step` into the average: one fused lerp
  // over all of them, no host sync.
  void update(int64_t step);

  // The average by parameter name, copied to the CPU (a checkpoint's weights).
  std::map<std::string, at::Tensor> named() const;
  // Sets the average from `weights` (a checkpoint's), which must hold every parameter's name and shape.
  void load(const std::map<std::string, at::Tensor>& weights);

  // While it lives, the module's parameters hold the average and the raw ones wait aside; they come
  // back bit for bit when it ends. Open it before any model::PackedInference scope (model/linear.h):
  // packed copies are made from the weights as they are when a scope first uses them.
  class Applied {
   public:
    explicit Applied(WeightAverage& average);
    ~Applied();
    Applied(const Applied&) = delete;
    Applied& operator=(const Applied&) = delete;

   private:
    WeightAverage& average_;
    std::vector<at::Tensor> raw_;
  };

 private:
  double decay_;
  std::vector<std::string> names_;
  std::vector<at::Tensor> parameters_;  // the module's
  std::vector<at::Tensor> average_;     // fp32, on the parameters' devices
};

// With EMA on, a checkpoint's `weights` are the average's and its training state keeps the raw
// parameters: moves `checkpoint.weights`' parameters into `checkpoint.training` (which must be
// set) under "raw_weights/<name>" and puts the average's in their place.
void store_average(const WeightAverage& average, checkpoint::Checkpoint& checkpoint);

// The raw parameters that store_average kept, by name; empty for a checkpoint saved without EMA.
std::map<std::string, at::Tensor> raw_weights(const checkpoint::TrainingState& state);

}  // namespace trafo::train
