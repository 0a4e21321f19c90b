// Learning-rate schedule and the training loss.
#pragma once

#include <cstdint>
#include <utility>

#include <ATen/core/Tensor.h>

namespace trafo::train {

// Linear warmup to `peak` over `warmup` steps, then inverse-square-root decay:
// lr(s) = peak × min(s / warmup, sqrt(warmup / s)) for the 1-based step s.
double inverse_sqrt_lr(int64_t step, double peak, int64_t warmup);

// Label-smoothed cross-entropy summed over non-padding targets, with the smoothing mass ε spread
// uniformly over the whole vocabulary (PyTorch's convention):
//   loss_t = (1 − ε) × (−log p(y_t)) + ε × mean_v(−log p(v)).
// logits [B,T,V], target [B,T] -> (smoothed sum [], plain NLL sum [], token count []). No host sync.
struct LossSums {
  at::Tensor smoothed;
  at::Tensor nll;
  at::Tensor tokens;
};
LossSums label_smoothed_loss(const at::Tensor& logits, const at::Tensor& target, double epsilon, int64_t pad_id);
// The same sums from log-probabilities [..., V] (fp32) and target [...].
LossSums label_smoothed_sums(const at::Tensor& log_probs, const at::Tensor& target, double epsilon, int64_t pad_id);

}  // namespace trafo::train
