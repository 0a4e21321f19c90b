// Dropout: each element kept with probability 1 − p and scaled by 1 / (1 − p). On the CPU in fp32
// and bf16 through ops::hashed_dropout (a counter-based mask, parallel, seeded from LibTorch's default CPU
// generator: torch::manual_seed makes runs repeatable, whatever the thread count).
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

namespace trafo::model {

// x unchanged unless training and p > 0. Where ops::hashed_dropout_applies (CPU float32 or bfloat16)
// the hashed mask; any other tensor (CUDA, fp16, fp64) goes to torch::dropout.
torch::Tensor dropout(const torch::Tensor& x, double p, bool training);

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
