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

SinusoidalPositionsImpl::SinusoidalPositionsImpl(int64_t max_positions, int64_t d_model) {
  auto position = torch::arange(max_positions, torch::kFloat).unsqueeze(1);               // [P,1]
  auto even = torch::arange(0, d_model, 2, torch::kFloat);                                // [d/2]
  auto inverse_frequency = torch::exp(even * (-std::log(10000.0) / static_cast<double>(d_model)));
  auto angles = position * inverse_frequency;                                             // [P,d/2]
  auto table = torch::zeros({max_positions, d_model});
  table.index_put_({torch::indexing::Slice(), torch::indexing::Slice(0, torch::indexing::None, 2)}, torch::sin(angles));
  auto odd = torch::cos(angles).narrow(1, 0, d_model / 2);
  table.index_put_({torch::indexing::Slice(), torch::indexing::Slice(1, torch::indexing::None, 2)}, odd);
  table_ = register_buffer("table", table);
}

torch::Tensor SinusoidalPositionsImpl::forward(const torch::Tensor& x, int64_t offset) {
  const int64_t length = x.size(1);
  TORCH_CHECK(offset + length <= table_.size(0), "sequence of ", offset + length,
              " positions exceeds max-positions ", table_.size(0));
  return x + table_.narrow(0, offset, length).to(x.dtype());  // [B,T,d]
}

FeedForwardImpl::FeedForwardImpl(int64_t d_model, int64_t d_ff, double dropout, const std::string& activation)
    : gelu_(activation == "gelu") {
  linear1 = register_module("linear1", Linear(d_model, d_ff));
  linear2 = register_module("linear2", Linear(d_ff, d_model));
  dropout_ = register_module("dropout", Dropout(dropout));
}

torch::Tensor FeedForwardImpl::forward(const torch::Tensor& x) {
  auto hidden = linear1(x);  // [B,T,d_ff]
  hidden = gelu_ ? torch::gelu(hidden) : torch::relu(hidden);
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
