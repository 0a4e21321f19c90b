// Dropout with a counter-based mask. LibTorch's CPU dropout draws one Bernoulli sample per element
// from a serial generator (14% of a training step here); this hashes (seed, element index) on all
// threads instead. Same semantics: each element kept with probability 1 − p and scaled by
// 1 / (1 − p). One seed per call comes from LibTorch's default CPU generator, so
// torch::manual_seed makes runs repeatable, whatever the thread count.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

namespace trafo::model {

// x unchanged unless training and p > 0. CPU float tensors take the hashed mask; any other
// tensor (CUDA, bf16) goes to torch::dropout.
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
