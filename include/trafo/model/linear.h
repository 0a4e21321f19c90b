// y = x Wᵀ + b, with inference on the CPU through a copy of W packed once (src/model/row_gemm.h).
// at::linear goes to MKL's sgemm, which repacks W on every call: at the 1-64 rows of a decoding
// step that costs more than the product itself.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

namespace trafo::model {

// W packed for inference. The copy is remade when W is another tensor or its version counter has
// moved (every in-place update does that: optimizer steps, checkpoint loads, zero_()).
class PackedWeight {
 public:
  // x [..., in] · Wᵀ + b; bias may be undefined. Through the packed copy when x is a CPU fp32
  // tensor of at most 64 rows, no gradient is wanted, autocast is off and the CPU has AVX2 and
  // FMA; else at::linear.
  torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias);
  // Forgets the copy; linear() makes a new one when next used.
  void clear();
  // Whether a packed copy is held (tests: the fast path was taken, not silently skipped).
  bool holds_copy() const { return packed_.defined(); }

 private:
  torch::Tensor source_;  // the weight packed (shares its version counter)
  int64_t version_ = -1;  // its version then
  torch::Tensor packed_;
};

// torch::nn::Linear's parameters, initialization and state-dict names, with PackedWeight inside.
class LinearImpl : public torch::nn::Module {
 public:
  LinearImpl(int64_t in_features, int64_t out_features);
  torch::Tensor forward(const torch::Tensor& x);  // [..., in] -> [..., out]
  // Off: every product goes through at::linear (tests compare the two paths).
  void set_packed(bool packed);
  const PackedWeight& packed_weight() const { return packed_; }

  torch::Tensor weight;  // [out, in]
  torch::Tensor bias;    // [out]

 private:
  bool use_packed_ = true;
  PackedWeight packed_;
};
TORCH_MODULE(Linear);

}  // namespace trafo::model
