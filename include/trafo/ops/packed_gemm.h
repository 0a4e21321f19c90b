// y = x · Wᵀ + b for a few rows (a decoding step's 1-64), with W packed once into panels of 16
// columns: panel p holds W[16p .. 16p+15, k] for k = 0 .. K-1, zero past the last row of W. A
// 6 × 16 tile of y stays in 12 AVX2 registers while k runs, so each weight loaded feeds 6 rows.
// MKL's sgemm repacks W on every call instead; at these sizes that took 2-3x longer.
#pragma once

#include <cstdint>

#include <ATen/core/Tensor.h>

namespace trafo::ops {

// Up to this many rows the packed kernel wins; past it MKL's repacking is amortized and its cache
// blocking (which the kernel lacks) matters more.
constexpr int64_t kMaxPackedRows = 64;

// The eligibility rule (ops/eligibility.h) for x [..., k] and weight [n, k], a weight that is no
// inference tensor, and x of 1 to 64 rows.
bool packed_gemm_applies(const at::Tensor& x, const at::Tensor& weight);

// weight [n, k] -> panels [ceil(n / 16), k, 16], 32-byte aligned.
at::Tensor pack_panels(const at::Tensor& weight);

// x [..., k] · Wᵀ + bias -> [..., n], W as pack_panels left it; bias [n] or undefined. Needs
// packed_gemm_applies(x, W).
at::Tensor packed_gemm(const at::Tensor& x, const at::Tensor& panels, int64_t n, const at::Tensor& bias);

}  // namespace trafo::ops
