#include "trafo/model/linear.h"

#include <cmath>

#include <ATen/Parallel.h>
#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "row_gemm.h"

namespace trafo::model {
namespace {

// Up to this many rows the packed kernel wins; past it MKL's repacking is amortized and its cache
// blocking (which the kernel lacks) matters more.
constexpr int64_t kMaxPackedRows = 64;

bool packable(const torch::Tensor& x, const torch::Tensor& weight) {
  static const bool supported = detail::row_gemm_supported();
  return supported && x.device().is_cpu() && weight.device().is_cpu() && x.scalar_type() == torch::kFloat &&
         weight.scalar_type() == torch::kFloat && !weight.is_inference() && !torch::GradMode::is_enabled() &&
         !at::autocast::is_autocast_enabled(at::kCPU) && x.numel() <= kMaxPackedRows * x.size(-1);
}

}  // namespace

torch::Tensor PackedWeight::linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  if (scopes_ == 0 || x.dim() == 0 || x.numel() == 0 || !packable(x, weight)) {
    return torch::nn::functional::linear(x, weight, bias);
  }
  const int64_t n = weight.size(0), k = weight.size(1);
  const int64_t panels = (n + detail::kPanelWidth - 1) / detail::kPanelWidth;
  if (!packed_.defined() || !source_.is_same(weight)) {
    const auto w = weight.contiguous();
    packed_ = torch::empty({panels, k, detail::kPanelWidth}, w.options());
    detail::pack_panels(w.data_ptr<float>(), n, k, packed_.data_ptr<float>());
    source_ = weight;
  }
  const auto rows = x.reshape({-1, k}).contiguous();  // [m, k]
  const auto b = bias.defined() ? bias.contiguous() : bias;
  auto sizes = x.sizes().vec();
  sizes.back() = n;
  auto y = torch::empty({rows.size(0), n}, rows.options());  // [m, n]
  const float* x_data = rows.data_ptr<float>();
  const float* panel_data = packed_.data_ptr<float>();
  const float* bias_data = b.defined() ? b.data_ptr<float>() : nullptr;
  float* y_data = y.data_ptr<float>();
  at::parallel_for(0, panels, 4, [&](int64_t begin, int64_t end) {
    detail::row_gemm(x_data, rows.size(0), k, panel_data, n, bias_data, y_data, begin, end);
  });
  return y.view(sizes);  // [..., n]
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
    weight->packed_ = torch::Tensor();
    weight->source_ = torch::Tensor();
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
  if (!use_packed_) return torch::nn::functional::linear(x, weight, bias);
  return packed_.linear(x, weight, bias);
}

}  // namespace trafo::model
