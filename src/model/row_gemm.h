// y = x · Wᵀ + b for a few rows (a decoding step's 1-64), with W packed once into panels of 16
// columns: panel p holds W[16p .. 16p+15, k] for k = 0 .. K-1, zero past the last row of W. A
// 6 × 16 tile of y stays in 12 AVX2 registers while k runs, so each weight loaded feeds 6 rows.
// MKL's sgemm repacks W on every call instead; at these sizes that took 2-3x longer.
#pragma once

#include <cstdint>

namespace trafo::model::detail {

constexpr int64_t kPanelWidth = 16;

// AVX2 and FMA at run time (the kernel is compiled for them whatever the build's flags).
bool row_gemm_supported();

// w [n, k] row-major -> panels [ceil(n / 16), k, 16]; `panels` holds ceil(n / 16) · k · 16 floats.
void pack_panels(const float* w, int64_t n, int64_t k, float* panels);

// Columns [16 · panel_begin, min(16 · panel_end, n)) of y [m, n] = x [m, k] · Wᵀ + bias; x and y
// row-major, bias [n] or null, `panels` 32-byte aligned. Needs row_gemm_supported().
void row_gemm(const float* x, int64_t m, int64_t k, const float* panels, int64_t n, const float* bias, float* y,
              int64_t panel_begin, int64_t panel_end);

}  // namespace trafo::model::detail
