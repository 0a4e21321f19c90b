// Attention of one new query per row over cached keys and values (a decoding step), without the
// per-row matrix calls of at::scaled_dot_product_attention: at one query its cost is calls, not
// arithmetic (two BLAS calls per row and head).
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

namespace trafo::ops {

// The eligibility rule (ops/eligibility.h) for q, k, v, and what the kernel reads: all fp32, or all
// bf16 under bf16 autocast (scores, softmax and context in fp32, the context rounded to bf16
// once); d_k contiguous, a multiple of 8 up to 256 (the AVX-512 variant takes multiples of 16, the
// AVX2 one the others); mask undefined or bool of shape [B or 1, 1, 1, T].
bool step_attention_applies(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask);

// q [B,h,1,d_k], k and v [B,h,T,d_k], mask (true: may attend) -> context [B,1,h·d_k], the heads
// merged: softmax_t(q·k_t / √d_k, masked t excluded) · v per row and head; a row with every
// position masked gets zeros. `starts` (null or empty: all 0) gives each row b the first position
// of its keys, starts[b] < T: the row attends to positions starts[b] .. T-1 and gets the bits it
// would get alone with only those keys (a row that joined a running batch late). Needs
// step_attention_applies.
at::Tensor step_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask,
                          const std::vector<int64_t>* starts = nullptr);

// The most keys query_rows_attention takes.
constexpr int64_t kMaxQueryRowsKeys = 128;

// Attention at inference over one short sequence, by the kernel above with each query as a row of
// its own over the same keys: q [1,h,Tq,d_k], k and v [1,h,Tk,d_k] with Tk ≤ kMaxQueryRowsKeys,
// mask bool [1,1,Tq or 1,Tk] or undefined -> context [1,Tq,h·d_k]. A server's joining sentences,
// encoded end to end with a block-diagonal mask, take it: there SDPA's flash kernel spent its time
// in BLAS calls of a few rows each, which repack their operands every call. False where the tensors
// are not of this shape or step_attention_applies does not hold for the rows.
bool query_rows_attention_applies(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                  const at::Tensor& mask);
at::Tensor query_rows_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask);

}  // namespace trafo::ops
