#include "trafo/inference/attention_weights.h"

#include <torch/torch.h>

namespace trafo::inference {
namespace {

// Keeps the weights of every attention module (the plain path) for as long as it lives.
class KeepWeights {
 public:
  explicit KeepWeights(model::Transformer& model) : model_(model), was_training_(model->is_training()) {
    model_->eval();
    model_->set_keep_attention_weights(true);
  }
  ~KeepWeights() {
    model_->set_keep_attention_weights(false);
    if (was_training_) model_->train();
  }
  KeepWeights(const KeepWeights&) = delete;
  KeepWeights& operator=(const KeepWeights&) = delete;

 private:
  model::Transformer& model_;
  bool was_training_;
};

}  // namespace

std::vector<torch::Tensor> attention_weights(model::Transformer& model, const torch::Tensor& src,
                                             const torch::Tensor& tgt_in) {
  torch::NoGradGuard no_grad;
  KeepWeights keep(model);
  const auto device = model->parameters().front().device();
  model->forward(src.to(device), tgt_in.to(device));
  std::vector<torch::Tensor> weights;
  for (const auto& attention : model->attention_modules()) {
    weights.push_back(attention->last_weights().to(torch::kCPU, torch::kFloat));  // [B,h,Tq,Tk]
  }
  return weights;
}

}  // namespace trafo::inference
