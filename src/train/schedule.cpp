#include "trafo/train/schedule.h"

#include <algorithm>
#include <cmath>

#include <torch/torch.h>

namespace trafo::train {

double inverse_sqrt_lr(int64_t step, double peak, int64_t warmup) {
  const double s = static_cast<double>(std::max<int64_t>(step, 1));
  if (warmup <= 0) return peak / std::sqrt(s);
  const double w = static_cast<double>(warmup);
  return peak * std::min(s / w, std::sqrt(w / s));
}

LossSums label_smoothed_loss(const at::Tensor& logits, const at::Tensor& target, double epsilon, int64_t pad_id) {
  return label_smoothed_sums(torch::log_softmax(logits.to(torch::kFloat), -1), target, epsilon, pad_id);
}

LossSums label_smoothed_sums(const at::Tensor& log_probs, const at::Tensor& target, double epsilon, int64_t pad_id) {
  const auto nll = -log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1);  // [B,T]
  const auto real = target.ne(pad_id);
  const auto nll_sum = nll.masked_fill(real.logical_not(), 0.0).sum();
  auto smoothed = nll_sum;
  if (epsilon > 0.0) {
    const auto uniform = -log_probs.mean(-1);  // [B,T]
    smoothed = (1.0 - epsilon) * nll_sum + epsilon * uniform.masked_fill(real.logical_not(), 0.0).sum();
  }
  return {smoothed, nll_sum, real.sum()};
}

}  // namespace trafo::train
