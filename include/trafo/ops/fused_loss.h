// The label-smoothed cross-entropy of training: its formula (label_smoothed_sums, the one
// statement every loss path uses) and the output projection fused with it over chunks of rows, so
// that the [N,V] logits and their gradient never exist at once. model/loss.h is the loss's API.
#pragma once

#include <cstdint>

#include <ATen/core/Tensor.h>

namespace trafo::ops {

// Label-smoothed cross-entropy summed over non-padding targets, with the smoothing mass ε spread
// uniformly over the whole vocabulary (PyTorch's convention):
//   loss_t = (1 − ε) × (−log p(y_t)) + ε × mean_v(−log p(v)).
// log_probs [..., V] (fp32), target [...] -> (smoothed sum [], plain NLL sum [], token count []).
// No host sync.
struct LossSums {
  at::Tensor smoothed;
  at::Tensor nll;
  at::Tensor tokens;
};
LossSums label_smoothed_sums(const at::Tensor& log_probs, const at::Tensor& target, double epsilon, int64_t pad_id);

// Whether the output weight's loss is fused: fp32 on the CPU (the eligibility rule of
// ops/eligibility.h), or fp32 on CUDA where the build holds trafo's CUDA loss kernel and the
// products run in fp32 or bf16 autocast.
bool fused_loss_applies(const at::Tensor& weight);

struct FusedLossSums {
  at::Tensor smoothed;  // [] label-smoothed cross-entropy summed over the non-padding rows
  at::Tensor nll;       // [] plain NLL summed over them; no gradient
};

// hidden [N,d], weight [V,d], bias [V] (or undefined), target [N] -> the sums of
// label_smoothed_sums(log_softmax(hidden·weightᵀ + bias), target, epsilon, pad_id), `chunk_rows`
// rows at a time (0: about 4M logits a chunk on the CPU, 2^28 on CUDA). When a gradient is wanted,
// each chunk's gradient is formed in the same pass (softmax − (1 − ε)·onehot − ε/V, through the
// projection into hidden, weight and bias) and backward() only scales it by the upstream gradient
// of `smoothed`. Under autocast the three products run in its dtype (bf16) on hidden and weight
// cast once a call, as autocast would run the output projection, and the gradients come back in
// hidden's and weight's own dtypes. On the CPU the logits, softmax, sums and gradient sums are
// fp32; on CUDA (trafo's kernel) the logits and their gradient stay in the products' dtype, as
// autocast's linear leaves them, and the kernel's math is fp32.
FusedLossSums fused_loss(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& bias,
                         const at::Tensor& target, double epsilon, int64_t pad_id, int64_t chunk_rows);

}  // namespace trafo::ops
