// Dropout: each element kept with probability 1 − p and scaled by 1 / (1 − p). On the CPU in fp32
// and bf16 through ops::hashed_dropout (a counter-based mask, parallel, seeded from LibTorch's default CPU
// generator: torch::manual_seed makes runs repeatable, whatever the thread count).
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include "trafo/ops/dispatch.h"

namespace trafo::model {

// x unchanged unless training and p > 0; the kernel is ops::dropout's choice.
using ops::dropout;

// The module form: dropout(x, p, is_training()).
class DropoutImpl : public torch::nn::Module {
 public:
  explicit DropoutImpl(double p) : p_(p) {}
  torch::Tensor forward(const torch::Tensor& x);

 private:
  double p_;
};
TORCH_MODULE(Dropout);

}  // namespace trafo::model
