// The small pieces a transformer is stacked from: embeddings, feed-forward, residual (positions:
// positions.h).
#pragma once

#include <functional>
#include <string>

#include <torch/nn/module.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include "trafo/model/config.h"
#include "trafo/model/dropout.h"
#include "trafo/model/linear.h"

namespace trafo::model {

// Token ids [B,T] -> vectors [B,T,d] scaled by sqrt(d_model) (Vaswani et al. 3.4).
class TokenEmbeddingImpl : public torch::nn::Module {
 public:
  TokenEmbeddingImpl(int64_t vocab_size, int64_t d_model, int64_t pad_id);
  torch::Tensor forward(const torch::Tensor& tokens);
  torch::nn::Embedding embedding{nullptr};

 private:
  double scale_;
};
TORCH_MODULE(TokenEmbedding);

// linear2(dropout(activation(linear1(x)))): [B,T,d] -> [B,T,d] through [B,T,d_ff].
class FeedForwardImpl : public torch::nn::Module {
 public:
  FeedForwardImpl(int64_t d_model, int64_t d_ff, double dropout, Activation activation);
  torch::Tensor forward(const torch::Tensor& x);
  Linear linear1{nullptr}, linear2{nullptr};

 private:
  Activation activation_;
  Dropout dropout_{nullptr};
};
TORCH_MODULE(FeedForward);

// Pre-norm: x + dropout(f(norm(x))). Post-norm: norm(x + dropout(f(x))).
class ResidualImpl : public torch::nn::Module {
 public:
  ResidualImpl(int64_t d_model, double dropout, bool pre_norm);
  torch::Tensor forward(const torch::Tensor& x, const std::function<torch::Tensor(const torch::Tensor&)>& sublayer);
  torch::nn::LayerNorm norm{nullptr};

 private:
  bool pre_norm_;
  Dropout dropout_{nullptr};
};
TORCH_MODULE(Residual);

}  // namespace trafo::model
