// Under bf16 autocast each weight is cast at its first use in a forward pass, and its gradient cast
// back on its own in the backward pass: two small kernels a weight and a step (about 400 on
// transformer-base, 1.6 ms of an 18 ms step on an H200). While a CastWeights scope is open, the
// model::Linear layers of a model take their weights and biases from one cast of all of them
// together, and their gradients go back to fp32 in one cast: a handful of kernels, and the same
// values, bit for bit, as autocast's own casts.
#pragma once

#include <vector>

#include <c10/core/ScalarType.h>
#include <torch/nn/module.h>

namespace trafo::model {

class LinearImpl;

class CastWeights {
 public:
  // Every model::Linear under `root` (not root itself) whose weight is a float parameter, less the
  // one whose weight is `except` (the output projection, which the loss casts itself; may be
  // undefined), runs on copies of its weight and bias in `dtype` until the scope closes. The copies
  // are made here, as one autograd node: a backward pass through them reaches the fp32 parameters,
  // and a weight the pass did not use keeps no gradient.
  CastWeights(torch::nn::Module& root, c10::ScalarType dtype, const at::Tensor& except);
  ~CastWeights();
  CastWeights(const CastWeights&) = delete;
  CastWeights& operator=(const CastWeights&) = delete;

 private:
  std::vector<std::shared_ptr<LinearImpl>> layers_;
};

}  // namespace trafo::model
