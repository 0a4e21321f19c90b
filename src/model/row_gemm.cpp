#include "row_gemm.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include "avx2.h"
#endif

namespace trafo::model::detail {

void pack_panels(const float* w, int64_t n, int64_t k, float* panels) {
  const int64_t count = (n + kPanelWidth - 1) / kPanelWidth;
  for (int64_t p = 0; p < count; ++p) {
    float* panel = panels + p * k * kPanelWidth;
    for (int64_t j = 0; j < kPanelWidth; ++j) {
      const int64_t row = p * kPanelWidth + j;
      for (int64_t i = 0; i < k; ++i) panel[i * kPanelWidth + j] = row < n ? w[row * k + i] : 0.0f;
    }
  }
}

#if defined(__x86_64__)

bool row_gemm_supported() { return cpu_has_avx2_fma(); }

namespace {

// Row r's two accumulators (16 columns) take x[r, i] times the panel's row i.
#define TRAFO_ROW(r)                                     \
  if constexpr (Rows > r) {                              \
    const __m256 xi = _mm256_broadcast_ss(x##r + i);     \
    acc##r##0 = _mm256_fmadd_ps(xi, w0, acc##r##0);      \
    acc##r##1 = _mm256_fmadd_ps(xi, w1, acc##r##1);      \
  }

// y[0..Rows, 0..columns) = x[0..Rows, :] · panel + bias, for Rows ≤ 6 and columns ≤ 16.
template <int Rows>
TRAFO_AVX2 void tile(const float* x, int64_t k, const float* panel, const float* bias, float* y, int64_t ldy,
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

}  // namespace

TRAFO_AVX2 void row_gemm(const float* x, int64_t m, int64_t k, const float* panels, int64_t n, const float* bias,
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

#else  // not x86-64: callers take at::linear

bool row_gemm_supported() { return false; }
void row_gemm(const float*, int64_t, int64_t, const float*, int64_t, const float*, float*, int64_t, int64_t) {}

#endif

}  // namespace trafo::model::detail
