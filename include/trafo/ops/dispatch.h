// The entry points model/ calls, CTranslate2-style: each picks its CPU kernel (src/ops/, one file a
// kernel) or ATen's op, behind the eligibility table (eligibility.h), so that model/ reads as the
// maths and never chooses a code path itself.
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "trafo/ops/fused_loss.h"

namespace trafo::ops {

// Each element of x kept with probability 1 − p and scaled by 1 / (1 − p); x itself unless
// training and p > 0. The hashed mask where hashed_dropout_applies (CPU fp32 or bf16), else
// at::dropout.
at::Tensor dropout(const at::Tensor& x, double p, bool training);

// A weight packed for the GEMM kernel, made at its first use and remade when the weight is another
// or the kernel variant in force (ops::cpu_isa) takes panels of another width.
struct PackedPanels {
  at::Tensor source;  // the weight packed
  at::Tensor panels;
};

// x [..., in] · Wᵀ + b (bias may be undefined): the packed GEMM over `packed` where one is given and
// packed_gemm_applies (CPU fp32, no gradient, no autocast, AVX-512, or AVX2 and FMA with at most
// kMaxPackedRows rows, packed_gemm.h), or its bf16 variant where packed_bf16_gemm_applies (bf16
// autocast, AVX512_BF16); else at::linear.
at::Tensor linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, PackedPanels* packed);

// softmax(q·kᵀ/√d_k + mask)·v with explicit ops: q [B,h,Tq,d_k], k/v [B,h,Tk,d_k], mask broadcast
// to [B,1,Tq,Tk] (true: may attend; undefined: everywhere). The context [B,h,Tq,d_k]; the weights
// [B,h,Tq,Tk] into *weights when asked. Dropout on the weights while training.
at::Tensor plain_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask,
                           double dropout, bool training, at::Tensor* weights = nullptr);

struct AttentionCall {
  double dropout = 0.0;
  bool training = false;
  bool cached_step = false;       // one query per row over a KV cache (a decoding step)
  bool fused = true;              // false: the explicit maths (tests compare the paths)
  at::Tensor* weights = nullptr;  // keep the weights [B,h,Tq,Tk] here (the explicit maths)
  // A cached step whose rows joined at different steps: row b's keys begin at (*starts)[b].
  const std::vector<int64_t>* starts = nullptr;
  // The mask is the plain causal one [1,1,T,T] over the queries: on CUDA, SDPA gets is_causal and no
  // mask, so that its flash and memory-efficient kernels skip reading one.
  bool causal = false;
};

// Attention as above, heads merged: [B,Tq,h·d_k]. In order:
// - a cached step: the one-query kernel where step_attention_applies;
// - one sequence of several queries at inference (a server's joining sentences, packed end to end):
//   the query-rows kernel where query_rows_attention_applies;
// - the explicit maths when weights are kept, when not fused, while training on the CPU with
//   dropout where the hashed mask applies (SDPA's CPU dropout is a serial Bernoulli mask), or while
//   training on the CPU in bf16 (SDPA's kernel and backward were slower there);
// - else at::scaled_dot_product_attention.
at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask,
                     const AttentionCall& call);

// Label-smoothed cross-entropy sums of rows `hidden` [N,d] through the output projection weight
// [V,d] and bias [V] (undefined: none) against target [N]: the fused kernel where fused_loss_applies,
// else log-softmax of at::linear's logits.
LossSums projection_loss(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& bias,
                         const at::Tensor& target, double epsilon, int64_t pad_id);

}  // namespace trafo::ops
