#include "trafo/ops/dispatch.h"

#include <cmath>
#include <limits>
#include <optional>

#include <torch/torch.h>

#include "trafo/ops/eligibility.h"
#include "trafo/ops/hashed_dropout.h"
#include "trafo/ops/packed_gemm.h"
#include "trafo/ops/step_attention.h"

namespace trafo::ops {

at::Tensor dropout(const at::Tensor& x, double p, bool training) {
  if (!training || p <= 0.0) return x;
  if (!hashed_dropout_applies(x, p)) return at::dropout(x, p, training);
  return hashed_dropout(x, p);
}

at::Tensor linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, PackedPanels* packed) {
  if (packed != nullptr && packed_bf16_gemm_applies(x, weight)) {
    if (!packed->panels.defined() || !packed->source.is_same(weight) || packed->panels.scalar_type() != at::kBFloat16) {
      packed->panels = pack_bf16_panels(weight);
      packed->source = weight;
    }
    return packed_bf16_gemm(x, packed->panels, weight.size(0), bias);
  }
  if (packed == nullptr || !packed_gemm_applies(x, weight)) return at::linear(x, weight, bias);
  const int64_t width = panel_width(cpu_isa());
  if (!packed->panels.defined() || !packed->source.is_same(weight) || packed->panels.scalar_type() != at::kFloat ||
      packed->panels.size(2) != width) {
    packed->panels = pack_panels(weight, width);
    packed->source = weight;
  }
  return packed_gemm(x, packed->panels, weight.size(0), bias);
}

at::Tensor plain_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask,
                           double dropout_p, bool training, at::Tensor* weights) {
  // 1. how well each query matches each key, 2. scaled by 1/√d_k so that the softmax does not
  // saturate as d_k grows; positions that may not be attended to get −∞
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  auto scores = torch::matmul(q, k.transpose(-2, -1)) * scale;  // [B,h,Tq,Tk]
  if (mask.defined()) scores = scores.masked_fill(mask.logical_not(), -std::numeric_limits<float>::infinity());
  // 3. weights that sum to 1 over the keys
  auto probabilities = torch::softmax(scores, -1);
  if (weights != nullptr) *weights = probabilities;
  probabilities = ops::dropout(probabilities, dropout_p, training);
  // 4. each query's context: the values weighted
  return torch::matmul(probabilities, v);  // [B,h,Tq,d_k]
}

at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask,
                     const AttentionCall& call) {
  if (call.cached_step && q.size(2) == 1 && call.weights == nullptr && step_attention_applies(q, k, v, mask)) {
    return step_attention(q, k, v, mask, call.starts);  // [B,1,h·d_k]
  }
  // One short sequence at inference (a server's joining sentences, packed end to end): measured in
  // ops/step_attention.h.
  if (!call.training && call.weights == nullptr && call.fused && call.starts == nullptr && q.size(2) > 1 &&
      query_rows_attention_applies(q, k, v, mask)) {
    return query_rows_attention(q, k, v, mask);  // [1,Tq,h·d_k]
  }
  if (call.starts != nullptr && !call.starts->empty()) {  // the positions before a row's start are masked
    const auto starts = torch::tensor(*call.starts, torch::kLong).to(k.device()).view({-1, 1, 1, 1});
    const auto from_start = torch::arange(k.size(2), starts.options()).view({1, 1, 1, -1}).ge(starts);  // [B,1,1,T]
    AttentionCall masked = call;
    masked.starts = nullptr;
    return attention(q, k, v, mask.defined() ? mask.logical_and(from_start) : from_start, masked);
  }
  // In training on the CPU, SDPA with dropout runs its math path with a serial Bernoulli mask:
  // where the hashed mask applies the plain path is the same math with it. Under bf16 autocast (q is
  // bf16) SDPA's kernel and its backward trained slower without dropout too: 2,538-2,791 against
  // 3,267-3,458 target tokens/s for the plain path (`trafo bench`, default model, one thread, AMD
  // EPYC Zen 4). In fp32 SDPA stays: the plain path was slower there in a short round (1,567 against
  // 1,746), and on AMD Zen 3 in three rounds taken in turn (1,304-1,379 against 1,365-1,516).
  const bool cpu_dropout = call.training && call.dropout > 0.0 && cpu_fast_path(Kernel::hashed_dropout, {q});
  const bool cpu_bf16_training = call.training && q.device().is_cpu() && q.scalar_type() == at::kBFloat16;
  at::Tensor context;  // [B,h,Tq,d_k]
  if (call.weights != nullptr || !call.fused || cpu_dropout || cpu_bf16_training) {
    context = plain_attention(q, k, v, mask, call.dropout, call.training, call.weights);
  } else {
    const bool causal = call.causal && q.is_cuda() && q.size(2) == k.size(2);
    const auto attn_mask = mask.defined() && !causal ? std::optional<at::Tensor>(mask) : std::nullopt;
    context = at::scaled_dot_product_attention(q, k, v, attn_mask, call.training ? call.dropout : 0.0, causal);
  }
  return context.transpose(1, 2).reshape({q.size(0), q.size(2), q.size(1) * q.size(3)});  // [B,Tq,h·d_k]
}

LossSums projection_loss(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& bias,
                         const at::Tensor& target, double epsilon, int64_t pad_id) {
  if (!fused_loss_applies(weight)) {
    return label_smoothed_sums(torch::log_softmax(at::linear(hidden, weight, bias).to(torch::kFloat), -1), target,
                               epsilon, pad_id);
  }
  const auto sums = fused_loss(hidden, weight, bias, target, epsilon, pad_id, /*chunk_rows=*/0);
  return {sums.smoothed, sums.nll, target.ne(pad_id).sum()};
}

}  // namespace trafo::ops
