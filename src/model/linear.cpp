#include "trafo/model/linear.h"

#include <cmath>

#include <torch/torch.h>

#include "trafo/ops/dispatch.h"

namespace trafo::model {

torch::Tensor PackedWeight::linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  return ops::linear(x, weight, bias, scopes_ > 0 ? &packed_ : nullptr);
}

PackedInference::PackedInference(torch::nn::Module& root) {
  for (const auto& module : root.modules(/*include_self=*/true)) {
    if (auto* owner = dynamic_cast<PackedWeightOwner*>(module.get())) {
      for (auto* weight : owner->packed_weights()) weights_.push_back(weight);
      owners_.push_back(module);  // kept alive until the scope closes
    }
  }
  for (auto* weight : weights_) ++weight->scopes_;
}

PackedInference::~PackedInference() {
  for (auto* weight : weights_) {
    if (--weight->scopes_ > 0) continue;
    weight->packed_ = ops::PackedPanels{};
  }
}

LinearImpl::LinearImpl(int64_t in_features, int64_t out_features) {
  weight = register_parameter("weight", torch::empty({out_features, in_features}));
  bias = register_parameter("bias", torch::empty({out_features}));
  // torch::nn::Linear's reset(), so a model draws the same random numbers as with it.
  torch::NoGradGuard no_grad;
  torch::nn::init::kaiming_uniform_(weight, std::sqrt(5.0));
  const double bound = 1.0 / std::sqrt(static_cast<double>(in_features));
  torch::nn::init::uniform_(bias, -bound, bound);
}

torch::Tensor LinearImpl::forward(const torch::Tensor& x) {
  if (!use_packed_) return at::linear(x, weight, bias);
  return packed_.linear(x, weight, bias);
}

}  // namespace trafo::model
