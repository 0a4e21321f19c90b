// y = x Wᵀ + b, with inference on the CPU through a copy of W packed once (trafo/ops/packed_gemm.h).
// at::linear goes to MKL's sgemm, which repacks W on every call: at the few rows of a decoding
// step that costs more than the product itself.
//
// A packed copy lives only inside a PackedInference scope: it is made from W as it is at its first
// use in the scope and dropped when the scope closes. Nothing that updates weights between two
// scopes (an optimizer step, which the fused Adam does without bumping version counters, an average,
// a moving average, a checkpoint load) can meet a stale copy; weights do not change inside a scope.
//
// Several threads may decode with one model inside one scope (trafo serve's decoders): the copies
// and the count of open scopes change under a lock, and each call multiplies with its own reference
// to the panels, so a scope closing meanwhile frees nothing under it.
#pragma once

#include <memory>
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include "trafo/ops/dispatch.h"

namespace trafo::model {

// W packed for inference while a PackedInference scope over its owner is open.
class PackedWeight {
 public:
  // x [..., in] · Wᵀ + b; bias may be undefined. Through the packed copy when a scope is open and
  // ops::packed_gemm_applies (CPU fp32, no gradient, no autocast, AVX-512, or AVX2 with at most
  // ops::kMaxPackedRows rows); else at::linear. Safe from several threads at once.
  torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias);
  // Whether a packed copy is held (tests: the fast path was taken, not silently skipped).
  bool holds_copy() const { return packed_.panels.defined(); }

 private:
  friend class PackedInference;
  int scopes_ = 0;             // PackedInference scopes open over this weight
  ops::PackedPanels packed_;
};

// A module that holds PackedWeights (model::Linear, the Transformer's tied output projection).
class PackedWeightOwner {
 public:
  virtual ~PackedWeightOwner() = default;
  virtual std::vector<PackedWeight*> packed_weights() = 0;
};

// Opens packed inference over every PackedWeightOwner in `root` (itself included) for the scope's
// lifetime: decoding, validation, a benchmark's decoding round. Scopes nest; the copies go when the
// outermost one closes. The weights must not change while a scope is open.
class PackedInference {
 public:
  explicit PackedInference(torch::nn::Module& root);
  ~PackedInference();
  PackedInference(const PackedInference&) = delete;
  PackedInference& operator=(const PackedInference&) = delete;

 private:
  std::vector<std::shared_ptr<torch::nn::Module>> owners_;
  std::vector<PackedWeight*> weights_;
};

// torch::nn::Linear's parameters, initialization and state-dict names, with PackedWeight inside.
class LinearImpl : public torch::nn::Module, public PackedWeightOwner {
 public:
  LinearImpl(int64_t in_features, int64_t out_features);
  torch::Tensor forward(const torch::Tensor& x);  // [..., in] -> [..., out]
  // Off: every product goes through at::linear (tests compare the two paths).
  void set_packed(bool packed) { use_packed_ = packed; }
  const PackedWeight& packed_weight() const { return packed_; }
  std::vector<PackedWeight*> packed_weights() override { return {&packed_}; }

  torch::Tensor weight;  // [out, in]
  torch::Tensor bias;    // [out]

 private:
  friend class CastWeights;
  bool use_packed_ = true;
  PackedWeight packed_;
  torch::Tensor cast_weight_, cast_bias_;  // set while a CastWeights scope is open (model/cast_weights.h)
};
TORCH_MODULE(Linear);

}  // namespace trafo::model
