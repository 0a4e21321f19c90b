#include "trafo/ops/packed_gemm.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include "isa.h"
#include "trafo/ops/eligibility.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace trafo::ops {
namespace {

constexpr int64_t kPanelWidth = 16;

#if defined(__x86_64__)

// Row r's two accumulators (16 columns) take x[r, i] times the panel's row i.
#define TRAFO_ROW(r)                                     \
  if constexpr (Rows > r) {                              \
    const __m256 xi = _mm256_broadcast_ss(x##r + i);     \
    acc##r##0 = _mm256_fmadd_ps(xi, w0, acc##r##0);      \
    acc##r##1 = _mm256_fmadd_ps(xi, w1, acc##r##1);      \
  }

// y[0..Rows, 0..columns) = x[0..Rows, :] · panel + bias, for Rows ≤ 6 and columns ≤ 16.
template <int Rows>
TRAFO_AVX2_FMA void tile(const float* x, int64_t k, const float* panel, const float* bias, float* y, int64_t ldy,
                         int64_t columns) {
  const __m256 zero = _mm256_setzero_ps();
  __m256 acc00 = zero, acc01 = zero, acc10 = zero, acc11 = zero, acc20 = zero, acc21 = zero;
  __m256 acc30 = zero, acc31 = zero, acc40 = zero, acc41 = zero, acc50 = zero, acc51 = zero;
  const float *x0 = x, *x1 = x + k, *x2 = x + 2 * k, *x3 = x + 3 * k, *x4 = x + 4 * k, *x5 = x + 5 * k;
  for (int64_t i = 0; i < k; ++i) {
    const __m256 w0 = _mm256_load_ps(panel + i * kPanelWidth);
    const __m256 w1 = _mm256_load_ps(panel + i * kPanelWidth + 8);
    // 12 cache lines ahead: a bigger model's weights come from DRAM, and the hardware prefetcher
    // alone left 5-10% of a step on the table at 4-12 rows (measured with d_model 512).
    _mm_prefetch(reinterpret_cast<const char*>(panel + (i + 12) * kPanelWidth), _MM_HINT_T0);
    TRAFO_ROW(0) TRAFO_ROW(1) TRAFO_ROW(2) TRAFO_ROW(3) TRAFO_ROW(4) TRAFO_ROW(5)
  }
  const __m256 bias0 = bias != nullptr && columns == kPanelWidth ? _mm256_loadu_ps(bias) : zero;
  const __m256 bias1 = bias != nullptr && columns == kPanelWidth ? _mm256_loadu_ps(bias + 8) : zero;
  const __m256 rows[6][2] = {{acc00, acc01}, {acc10, acc11}, {acc20, acc21},
                             {acc30, acc31}, {acc40, acc41}, {acc50, acc51}};
  for (int r = 0; r < Rows; ++r) {
    float* out = y + r * ldy;
    if (columns == kPanelWidth) {
      _mm256_storeu_ps(out, _mm256_add_ps(rows[r][0], bias0));
      _mm256_storeu_ps(out + 8, _mm256_add_ps(rows[r][1], bias1));
    } else {  // the last panel of a width that is no multiple of 16
      alignas(32) float values[kPanelWidth];
      _mm256_store_ps(values, rows[r][0]);
      _mm256_store_ps(values + 8, rows[r][1]);
      for (int64_t j = 0; j < columns; ++j) out[j] = values[j] + (bias != nullptr ? bias[j] : 0.0f);
    }
  }
}
#undef TRAFO_ROW

// Columns [16 · panel_begin, min(16 · panel_end, n)) of y [m, n] = x [m, k] · Wᵀ + bias; x and y
// row-major, bias [n] or null, `panels` 32-byte aligned.
TRAFO_AVX2_FMA void row_gemm(const float* x, int64_t m, int64_t k, const float* panels, int64_t n, const float* bias,
                             float* y, int64_t panel_begin, int64_t panel_end) {
  for (int64_t p = panel_begin; p < panel_end; ++p) {
    const float* panel = panels + p * k * kPanelWidth;
    const int64_t first = p * kPanelWidth;
    const int64_t columns = n - first < kPanelWidth ? n - first : kPanelWidth;
    const float* b = bias != nullptr ? bias + first : nullptr;
    // ceil(m / 6) tiles of as equal heights as can be: 19 rows run as 5+5+5+4, not 6+6+6+1
    const int64_t tiles = (m + 5) / 6;
    for (int64_t tile_index = 0, row = 0; tile_index < tiles; ++tile_index) {
      const int64_t height = m / tiles + (tile_index < m % tiles ? 1 : 0);
      const float* xr = x + row * k;
      float* yr = y + row * n + first;
      switch (height) {
        case 1: tile<1>(xr, k, panel, b, yr, n, columns); break;
        case 2: tile<2>(xr, k, panel, b, yr, n, columns); break;
        case 3: tile<3>(xr, k, panel, b, yr, n, columns); break;
        case 4: tile<4>(xr, k, panel, b, yr, n, columns); break;
        case 5: tile<5>(xr, k, panel, b, yr, n, columns); break;
        default: tile<6>(xr, k, panel, b, yr, n, columns); break;
      }
      row += height;
    }
  }
}

#else  // not x86-64: cpu_has_avx2_fma() is false, callers take at::linear

void row_gemm(const float*, int64_t, int64_t, const float*, int64_t, const float*, float*, int64_t, int64_t) {}

#endif

}  // namespace

bool packed_gemm_applies(const at::Tensor& x, const at::Tensor& weight) {
  return x.dim() > 0 && x.numel() > 0 && cpu_fast_path(Kernel::packed_gemm, {x, weight}) && !weight.is_inference() &&
         x.numel() <= kMaxPackedRows * x.size(-1);
}

at::Tensor pack_panels(const at::Tensor& weight) {
  const auto w = weight.contiguous();
  const int64_t n = w.size(0), k = w.size(1);
  const int64_t count = (n + kPanelWidth - 1) / kPanelWidth;
  auto panels = at::empty({count, k, kPanelWidth}, w.options());  // [ceil(n/16), k, 16]
  const float* source = w.data_ptr<float>();
  float* target = panels.data_ptr<float>();
  for (int64_t p = 0; p < count; ++p) {
    float* panel = target + p * k * kPanelWidth;
    for (int64_t j = 0; j < kPanelWidth; ++j) {
      const int64_t row = p * kPanelWidth + j;
      for (int64_t i = 0; i < k; ++i) panel[i * kPanelWidth + j] = row < n ? source[row * k + i] : 0.0f;
    }
  }
  return panels;
}

at::Tensor packed_gemm(const at::Tensor& x, const at::Tensor& panels, int64_t n, const at::Tensor& bias) {
  note_run(Kernel::packed_gemm);
  const int64_t k = panels.size(1);
  const auto rows = x.reshape({-1, k}).contiguous();  // [m, k]
  const auto b = bias.defined() ? bias.contiguous() : bias;
  auto sizes = x.sizes().vec();
  sizes.back() = n;
  auto y = at::empty({rows.size(0), n}, rows.options());  // [m, n]
  const float* x_data = rows.data_ptr<float>();
  const float* panel_data = panels.data_ptr<float>();
  const float* bias_data = b.defined() ? b.data_ptr<float>() : nullptr;
  float* y_data = y.data_ptr<float>();
  at::parallel_for(0, panels.size(0), 4, [&](int64_t begin, int64_t end) {
    row_gemm(x_data, rows.size(0), k, panel_data, n, bias_data, y_data, begin, end);
  });
  return y.view(sizes);  // [..., n]
}

}  // namespace trafo::ops
