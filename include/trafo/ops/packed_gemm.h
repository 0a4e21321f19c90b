// y = x · Wᵀ + b at inference, with W packed once into panels of `width` columns: panel p holds
// W[width·p .. width·p + width − 1, k] for k = 0 .. K-1, zero past the last row of W.
// - AVX2: panels of 16, a 6 × 16 tile of y in 12 ymm registers while k runs, so each weight loaded
//   feeds 6 rows; 1-128 rows (a decoding step, a server's joining sentences), in blocks of 64. MKL's
//   sgemm repacks W on every call instead; at up to 64 rows that took 2-3x longer.
// - AVX-512: panels of 32, a 12 × 32 tile in 24 zmm registers, any number of rows in blocks of 96
//   (a decoding step of a large batch, the encoder). MKL runs its AVX2 kernels on AMD's AVX-512
//   CPUs; this kernel is the one that uses the whole vector there.
// - bf16 (AVX512_BF16, under bf16 autocast): the AVX-512 tile over W rounded to bf16 and packed in
//   pairs of k for vdpbf16ps, x rounded to bf16, sums in fp32, y in bf16 as autocast's at::linear
//   gives it. Half the weight bytes of fp32 and twice its products an instruction.
#pragma once

#include <cstdint>

#include <ATen/core/Tensor.h>

#include "trafo/ops/eligibility.h"

namespace trafo::ops {

// Up to this many rows the AVX2 kernel wins; past it MKL's repacking is amortized and its cache
// blocking matters more. At 100-128 rows of the default model's products the kernel ran at 87-136
// GFLOP/s against MKL's 70-122, in each pair but one; at 200 rows they were even (bench/gemm_rate.cpp,
// two threads, AMD EPYC Zen 3).
constexpr int64_t kMaxPackedRows = 128;

// The panel width of a variant's kernel: 32 for avx512, else 16.
int64_t panel_width(Isa isa);

// The eligibility rule (ops/eligibility.h) for x [..., k] and weight [n, k], a weight that is no
// inference tensor, and x of 1 to kMaxPackedRows rows where cpu_isa() is avx2.
bool packed_gemm_applies(const at::Tensor& x, const at::Tensor& weight);

// weight [n, k] -> panels [ceil(n / width), k, width], 64-byte aligned; width 16 or 32.
at::Tensor pack_panels(const at::Tensor& weight, int64_t width);

// x [..., k] · Wᵀ + bias -> [..., n], W as pack_panels left it; bias [n] or undefined. The variant
// is the one of the panels' width (32: avx512, 16: avx2), which the caller packed for cpu_isa().
// Needs packed_gemm_applies(x, W).
at::Tensor packed_gemm(const at::Tensor& x, const at::Tensor& panels, int64_t n, const at::Tensor& bias);

// The rule for x [..., k] (fp32 or bf16) and an fp32 weight [n, k] that is no inference tensor,
// under CPU autocast to bf16, without gradients, where ops::cpu_has_avx512_bf16().
bool packed_bf16_gemm_applies(const at::Tensor& x, const at::Tensor& weight);

// weight [n, k] -> bf16 panels [ceil(n / 32), ceil(k / 2), 64]: each row a pair of k for 32 columns.
at::Tensor pack_bf16_panels(const at::Tensor& weight);

// x [..., k] · Wᵀ + bias -> [..., n] in bf16, W as pack_bf16_panels left it; bias [n] or undefined.
// Needs packed_bf16_gemm_applies(x, W).
at::Tensor packed_bf16_gemm(const at::Tensor& x, const at::Tensor& panels, int64_t n, const at::Tensor& bias);

}  // namespace trafo::ops
