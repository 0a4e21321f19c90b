#include "trafo/model/linear.h"

#include <cmath>
#include <mutex>

#include <torch/torch.h>

#include "trafo/ops/dispatch.h"

namespace trafo::model {

namespace {

// Several threads may decode with one model (trafo serve's decoders): the packed copies and the
// count of open scopes change under this lock. A call copies the panels out (a reference each) and
// multiplies with its copy, so a scope that closes meanwhile cannot free them under it.
std::mutex packed_lock;

}  // namespace

torch::Tensor PackedWeight::linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  if (__atomic_load_n(&scopes_, __ATOMIC_ACQUIRE) == 0) return ops::linear(x, weight, bias, nullptr);
  ops::PackedPanels packed;
  {
    std::lock_guard lock(packed_lock);
    packed = packed_;
  }
  const auto before = packed.panels;
  auto y = ops::linear(x, weight, bias, &packed);
  if (!packed.panels.is_same(before)) {  // packed here: kept for the scope's other calls
    std::lock_guard lock(packed_lock);
    if (scopes_ > 0) packed_ = packed;
  }
  return y;
}

PackedInference::PackedInference(torch::nn::Module& root) {
  for (const auto& module : root.modules(/*include_self=*/true)) {
    if (auto* owner = dynamic_cast<PackedWeightOwner*>(module.get())) {
      for (auto* weight : owner->packed_weights()) weights_.push_back(weight);
      owners_.push_back(module);  // kept alive until the scope closes
    }
  }
  std::lock_guard lock(packed_lock);
  for (auto* weight : weights_) __atomic_add_fetch(&weight->scopes_, 1, __ATOMIC_ACQ_REL);
}

PackedInference::~PackedInference() {
  std::lock_guard lock(packed_lock);
  for (auto* weight : weights_) {
    if (__atomic_sub_fetch(&weight->scopes_, 1, __ATOMIC_ACQ_REL) > 0) continue;
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
  if (cast_weight_.defined()) return at::linear(x, cast_weight_, cast_bias_);
  if (!use_packed_) return at::linear(x, weight, bias);
  return packed_.linear(x, weight, bias);
}

}  // namespace trafo::model
