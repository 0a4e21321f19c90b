#include "trafo/model/layers.h"

#include <cmath>

#include <torch/torch.h>

namespace trafo::model {

TokenEmbeddingImpl::TokenEmbeddingImpl(int64_t vocab_size, int64_t d_model, int64_t pad_id)
    : scale_(std::sqrt(static_cast<double>(d_model))) {
  embedding = register_module(
      "embedding", torch::nn::Embedding(torch::nn::EmbeddingOptions(vocab_size, d_model).padding_idx(pad_id)));
}

torch::Tensor TokenEmbeddingImpl::forward(const torch::Tensor& tokens) {
  return embedding(tokens) * scale_;  // [B,T,d]
}

FeedForwardImpl::FeedForwardImpl(int64_t d_model, int64_t d_ff, double dropout, Activation activation)
    : activation_(activation) {
  linear1 = register_module("linear1", Linear(d_model, d_ff));
  linear2 = register_module("linear2", Linear(d_ff, d_model));
  dropout_ = register_module("dropout", Dropout(dropout));
}

torch::Tensor FeedForwardImpl::forward(const torch::Tensor& x) {
  auto hidden = linear1(x);  // [B,T,d_ff]
  switch (activation_) {
    case Activation::kRelu: hidden = torch::relu(hidden); break;
    case Activation::kGelu: hidden = torch::gelu(hidden); break;
    case Activation::kSwish: hidden = torch::silu(hidden); break;
  }
  return linear2(dropout_(hidden));  // [B,T,d]
}

ResidualImpl::ResidualImpl(int64_t d_model, double dropout, bool pre_norm) : pre_norm_(pre_norm) {
  norm = register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d_model})));
  dropout_ = register_module("dropout", Dropout(dropout));
}

torch::Tensor ResidualImpl::forward(const torch::Tensor& x,
                                    const std::function<torch::Tensor(const torch::Tensor&)>& sublayer) {
  if (pre_norm_) return x + dropout_(sublayer(norm(x)));
  return norm(x + dropout_(sublayer(x)));
}

}  // namespace trafo::model
