// Attention of one new query per row over cached keys and values (a decoding step), without the
// per-row matrix calls of at::scaled_dot_product_attention: at one query its cost is calls, not
// arithmetic (two BLAS calls per row and head).
#pragma once

#include <cstdint>

namespace trafo::model::detail {

// Where the tensors of one call lie, in floats: q [B,h,d_k], k and v [B,h,T,d_k] with d_k
// contiguous, mask [B,T] contiguous (true: may attend) or null, out [B,h·d_k] contiguous (the heads merged).
struct StepAttentionShape {
  int64_t heads, length, d_k;
  int64_t q_batch, q_head;                 // strides of q
  int64_t k_batch, k_head, k_time;         // strides of k
  int64_t v_batch, v_head, v_time;         // strides of v
  float scale;                             // 1/√d_k
};

// AVX2 and FMA at run time, and d_k a multiple of 8 up to 256.
bool step_attention_supported(int64_t d_k);

// out[b, h·d_k + j] = Σ_t softmax_t(q[b,h]·k[b,h,t] · scale, masked t excluded) v[b,h,t,j] for the
// rows r = b·heads + h in [begin, end). A row with every position masked gets zeros.
void step_attention(const float* q, const float* k, const float* v, const bool* mask, float* out,
                    const StepAttentionShape& shape, int64_t begin, int64_t end);

}  // namespace trafo::model::detail
