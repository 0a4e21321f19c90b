#include "trafo/ops/packed_gemm.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/autocast_mode.h>

#include "elements.h"
#include "isa.h"
#include "trafo/ops/eligibility.h"

#if defined(__x86_64__)
// GCC 12 warns of the intrinsics' own deliberately undefined vectors (_mm512_undefined_ps) and of
// vector arguments passed between functions of one target: neither is a fault here.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wpsabi"
#include <immintrin.h>
#endif

namespace trafo::ops {
namespace {

#if defined(__x86_64__)

// Row r's two accumulators (16 columns) take x[r, i] times the panel's row i.
#define TRAFO_ROW(r)                                     \
  if constexpr (Rows > r) {                              \
    const __m256 xi = _mm256_broadcast_ss(x##r + i);     \
    acc##r##0 = _mm256_fmadd_ps(xi, w0, acc##r##0);      \
    acc##r##1 = _mm256_fmadd_ps(xi, w1, acc##r##1);      \
  }

// AVX2: y[0..Rows, 0..columns) = x[0..Rows, :] · panel + bias, for Rows ≤ 6 and columns ≤ 16.
template <int Rows>
TRAFO_AVX2_FMA void tile_avx2(const float* x, int64_t ldx, int64_t k, const float* panel, const float* bias,
                              float* y, int64_t ldy, int64_t columns) {
  constexpr int64_t width = 16;
  const __m256 zero = _mm256_setzero_ps();
  __m256 acc00 = zero, acc01 = zero, acc10 = zero, acc11 = zero, acc20 = zero, acc21 = zero;
  __m256 acc30 = zero, acc31 = zero, acc40 = zero, acc41 = zero, acc50 = zero, acc51 = zero;
  const float *x0 = x, *x1 = x + ldx, *x2 = x + 2 * ldx, *x3 = x + 3 * ldx, *x4 = x + 4 * ldx, *x5 = x + 5 * ldx;
  for (int64_t i = 0; i < k; ++i) {
    const __m256 w0 = _mm256_load_ps(panel + i * width);
    const __m256 w1 = _mm256_load_ps(panel + i * width + 8);
    // 12 cache lines ahead: a bigger model's weights come from DRAM, and the hardware prefetcher
    // alone left 5-10% of a step on the table at 4-12 rows (measured with d_model 512).
    _mm_prefetch(reinterpret_cast<const char*>(panel + (i + 12) * width), _MM_HINT_T0);
    TRAFO_ROW(0) TRAFO_ROW(1) TRAFO_ROW(2) TRAFO_ROW(3) TRAFO_ROW(4) TRAFO_ROW(5)
  }
  const __m256 bias0 = bias != nullptr && columns == width ? _mm256_loadu_ps(bias) : zero;
  const __m256 bias1 = bias != nullptr && columns == width ? _mm256_loadu_ps(bias + 8) : zero;
  const __m256 rows[6][2] = {{acc00, acc01}, {acc10, acc11}, {acc20, acc21},
                             {acc30, acc31}, {acc40, acc41}, {acc50, acc51}};
  for (int r = 0; r < Rows; ++r) {
    float* out = y + r * ldy;
    if (columns == width) {
      _mm256_storeu_ps(out, _mm256_add_ps(rows[r][0], bias0));
      _mm256_storeu_ps(out + 8, _mm256_add_ps(rows[r][1], bias1));
    } else {  // the last panel of a width that is no multiple of 16
      alignas(32) float values[width];
      _mm256_store_ps(values, rows[r][0]);
      _mm256_store_ps(values + 8, rows[r][1]);
      for (int64_t j = 0; j < columns; ++j) out[j] = values[j] + (bias != nullptr ? bias[j] : 0.0f);
    }
  }
}
#undef TRAFO_ROW

// The lanes of a 16-column half of a panel that y has, of the `columns` (≤ 16, or none) left.
TRAFO_AVX512 inline __mmask16 half_mask(int64_t columns) {
  return columns >= 16 ? __mmask16(0xffff) : columns > 0 ? static_cast<__mmask16>((1u << columns) - 1u) : __mmask16(0);
}

// The bias of those lanes (zero elsewhere and without a bias).
TRAFO_AVX512 inline __m512 bias_half(const float* bias, __mmask16 lanes) {
  return bias != nullptr ? _mm512_maskz_loadu_ps(lanes, bias) : _mm512_setzero_ps();
}

// AVX-512: the same for Rows ≤ 12 and columns ≤ 32, two zmm accumulators a row (24 of the 32
// registers), each weight loaded feeding 12 rows. Every column's sum runs over i in the same order
// as in the AVX2 tile, bias added last, so both give the same bits.
template <int Rows>
TRAFO_AVX512 void tile_avx512(const float* x, int64_t ldx, int64_t k, const float* panel, const float* bias,
                              float* y, int64_t ldy, int64_t columns) {
  constexpr int64_t width = 32;
  __m512 acc[Rows][2];
#pragma GCC unroll 12
  for (int r = 0; r < Rows; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int64_t i = 0; i < k; ++i) {
    const __m512 w0 = _mm512_load_ps(panel + i * width);
    const __m512 w1 = _mm512_load_ps(panel + i * width + 16);
    _mm_prefetch(reinterpret_cast<const char*>(panel + (i + 6) * width), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(panel + (i + 6) * width + 16), _MM_HINT_T0);
#pragma GCC unroll 12
    for (int r = 0; r < Rows; ++r) {
      const __m512 xi = _mm512_set1_ps(x[r * ldx + i]);
      acc[r][0] = _mm512_fmadd_ps(xi, w0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(xi, w1, acc[r][1]);
    }
  }
  // columns [0, 16) and [16, 32) of the panel that y has
  const __mmask16 low = half_mask(columns), high = half_mask(columns - 16);
  const __m512 bias0 = bias_half(bias, low), bias1 = bias_half(bias != nullptr ? bias + 16 : nullptr, high);
#pragma GCC unroll 12
  for (int r = 0; r < Rows; ++r) {
    _mm512_mask_storeu_ps(y + r * ldy, low, _mm512_add_ps(acc[r][0], bias0));
    _mm512_mask_storeu_ps(y + r * ldy + 16, high, _mm512_add_ps(acc[r][1], bias1));
  }
}

// bf16 under autocast (AVX512_BF16): the AVX-512 tile over bf16 pairs. Panel row i holds
// W[c, 2i] and W[c, 2i + 1] side by side for its 32 columns c (two zmm of 16 pairs); x comes as
// bf16 rows of an even length, each pair broadcast; vdpbf16ps adds both products of a pair to the
// column's fp32 sum. The sums, plus the fp32 bias, are rounded to bf16 once, at the store.
template <int Rows>
TRAFO_AVX512_BF16 void tile_bf16(const uint16_t* x, int64_t ldx, int64_t k, const uint16_t* panel, const float* bias,
                                 uint16_t* y, int64_t ldy, int64_t columns) {
  constexpr int64_t width = 32;
  const int64_t pairs = (k + 1) / 2;
  __m512 acc[Rows][2];
#pragma GCC unroll 12
  for (int r = 0; r < Rows; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int64_t i = 0; i < pairs; ++i) {
    const auto w0 = reinterpret_cast<__m512bh>(_mm512_load_si512(panel + i * 2 * width));
    const auto w1 = reinterpret_cast<__m512bh>(_mm512_load_si512(panel + i * 2 * width + width));
    _mm_prefetch(reinterpret_cast<const char*>(panel + (i + 6) * 2 * width), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(panel + (i + 6) * 2 * width + width), _MM_HINT_T0);
#pragma GCC unroll 12
    for (int r = 0; r < Rows; ++r) {
      int32_t pair;
      std::memcpy(&pair, x + r * ldx + 2 * i, sizeof pair);
      const auto xi = reinterpret_cast<__m512bh>(_mm512_set1_epi32(pair));
      acc[r][0] = _mm512_dpbf16_ps(acc[r][0], xi, w0);
      acc[r][1] = _mm512_dpbf16_ps(acc[r][1], xi, w1);
    }
  }
  const __mmask16 low = half_mask(columns), high = half_mask(columns - 16);
  const __m512 bias0 = bias_half(bias, low), bias1 = bias_half(bias != nullptr ? bias + 16 : nullptr, high);
#pragma GCC unroll 12
  for (int r = 0; r < Rows; ++r) {
    const auto h0 = reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(_mm512_add_ps(acc[r][0], bias0)));
    const auto h1 = reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(_mm512_add_ps(acc[r][1], bias1)));
    _mm256_mask_storeu_epi16(y + r * ldy, low, h0);
    _mm256_mask_storeu_epi16(y + r * ldy + 16, high, h1);
  }
}

// One variant's tile: its element types, its panel width, its tallest tile, and the rows of x a
// block takes (x's block stays in L2 while every panel of the thread's share passes over it).
struct Avx2Tiles {
  using In = float;
  using Out = float;
  static constexpr int64_t kWidth = 16, kHeight = 6, kBlockRows = 64;
  static int64_t row_length(int64_t k) { return k; }  // x's and a panel's elements per row of W
  template <int Rows>
  static void run(const In* x, int64_t ldx, int64_t k, const In* panel, const float* bias, Out* y, int64_t ldy,
                  int64_t columns) {
    tile_avx2<Rows>(x, ldx, k, panel, bias, y, ldy, columns);
  }
};

struct Avx512Tiles {
  using In = float;
  using Out = float;
  static constexpr int64_t kWidth = 32, kHeight = 12, kBlockRows = 96;
  static int64_t row_length(int64_t k) { return k; }
  template <int Rows>
  static void run(const In* x, int64_t ldx, int64_t k, const In* panel, const float* bias, Out* y, int64_t ldy,
                  int64_t columns) {
    tile_avx512<Rows>(x, ldx, k, panel, bias, y, ldy, columns);
  }
};

struct Bf16Tiles {
  using In = uint16_t;
  using Out = uint16_t;
  static constexpr int64_t kWidth = 32, kHeight = 12, kBlockRows = 96;
  static int64_t row_length(int64_t k) { return (k + 1) / 2 * 2; }  // whole pairs, the last padded with 0
  template <int Rows>
  static void run(const In* x, int64_t ldx, int64_t k, const In* panel, const float* bias, Out* y, int64_t ldy,
                  int64_t columns) {
    tile_bf16<Rows>(x, ldx, k, panel, bias, y, ldy, columns);
  }
};

template <typename Tiles, int Rows = 1>
void tile_of_height(int64_t height, const typename Tiles::In* x, int64_t k, const typename Tiles::In* panel,
                    const float* bias, typename Tiles::Out* y, int64_t n, int64_t columns) {
  if constexpr (Rows < Tiles::kHeight) {
    if (height != Rows) return tile_of_height<Tiles, Rows + 1>(height, x, k, panel, bias, y, n, columns);
  }
  Tiles::template run<Rows>(x, Tiles::row_length(k), k, panel, bias, y, n, columns);
}

// Units [begin, end) of y [m, n] = x [m, k] · Wᵀ + bias, a unit being one panel's columns over one
// block of rows (block-major); x (rows of Tiles::row_length(k)) and y row-major, bias [n] or null,
// `panels` 64-byte aligned.
template <typename Tiles>
void gemm_units(const typename Tiles::In* x, int64_t m, int64_t k, const typename Tiles::In* panels, int64_t n,
                const float* bias, typename Tiles::Out* y, int64_t begin, int64_t end) {
  const int64_t count = (n + Tiles::kWidth - 1) / Tiles::kWidth;
  const int64_t length = Tiles::row_length(k);
  for (int64_t unit = begin; unit < end; ++unit) {
    const int64_t block = unit / count, p = unit % count;
    const int64_t first_row = block * Tiles::kBlockRows;
    const int64_t rows = std::min(Tiles::kBlockRows, m - first_row);
    const auto* panel = panels + p * length * Tiles::kWidth;
    const int64_t first = p * Tiles::kWidth;
    const int64_t columns = std::min(Tiles::kWidth, n - first);
    const float* b = bias != nullptr ? bias + first : nullptr;
    // ceil(rows / height) tiles of as equal heights as can be: 19 rows in 6s run as 5+5+5+4
    const int64_t tiles = (rows + Tiles::kHeight - 1) / Tiles::kHeight;
    for (int64_t tile_index = 0, row = first_row; tile_index < tiles; ++tile_index) {
      const int64_t height = rows / tiles + (tile_index < rows % tiles ? 1 : 0);
      tile_of_height<Tiles>(height, x + row * length, k, panel, b, y + row * n + first, n, columns);
      row += height;
    }
  }
}

// y [m, n] = x · Wᵀ + bias over all units, on all threads.
template <typename Tiles>
void gemm(const typename Tiles::In* x, int64_t m, int64_t k, const typename Tiles::In* panels, int64_t n,
          const float* bias, typename Tiles::Out* y) {
  const int64_t units = (m + Tiles::kBlockRows - 1) / Tiles::kBlockRows * ((n + Tiles::kWidth - 1) / Tiles::kWidth);
  at::parallel_for(0, units, 4, [&](int64_t begin, int64_t end) {
    gemm_units<Tiles>(x, m, k, panels, n, bias, y, begin, end);
  });
}

#endif

}  // namespace

int64_t panel_width(Isa isa) { return isa == Isa::avx512 ? 32 : 16; }

bool packed_gemm_applies(const at::Tensor& x, const at::Tensor& weight) {
  if (x.dim() == 0 || x.numel() == 0 || !cpu_fast_path(Kernel::packed_gemm, {x, weight}) || weight.is_inference()) {
    return false;
  }
  return cpu_isa() == Isa::avx512 || x.numel() <= kMaxPackedRows * x.size(-1);
}

at::Tensor pack_panels(const at::Tensor& weight, int64_t width) {
  const auto w = weight.contiguous();
  const int64_t n = w.size(0), k = w.size(1);
  const int64_t count = (n + width - 1) / width;
  auto panels = at::empty({count, k, width}, w.options());  // [ceil(n/width), k, width]
  TORCH_CHECK(reinterpret_cast<uintptr_t>(panels.data_ptr()) % 64 == 0, "packed panels must be 64-byte aligned");
  const float* source = w.data_ptr<float>();
  float* target = panels.data_ptr<float>();
  for (int64_t p = 0; p < count; ++p) {
    float* panel = target + p * k * width;
    for (int64_t j = 0; j < width; ++j) {
      const int64_t row = p * width + j;
      for (int64_t i = 0; i < k; ++i) panel[i * width + j] = row < n ? source[row * k + i] : 0.0f;
    }
  }
  return panels;
}

at::Tensor packed_gemm(const at::Tensor& x, const at::Tensor& panels, int64_t n, const at::Tensor& bias) {
  const int64_t k = panels.size(1);
  const bool wide = panels.size(2) == 32;
  note_run(Kernel::packed_gemm, wide ? Isa::avx512 : Isa::avx2);
  const auto rows = x.reshape({-1, k}).contiguous();  // [m, k]
  const auto b = bias.defined() ? bias.contiguous() : bias;
  auto sizes = x.sizes().vec();
  sizes.back() = n;
  const int64_t m = rows.size(0);
  auto y = at::empty({m, n}, rows.options());  // [m, n]
#if defined(__x86_64__)
  const float* x_data = rows.data_ptr<float>();
  const float* panel_data = panels.data_ptr<float>();
  const float* bias_data = b.defined() ? b.data_ptr<float>() : nullptr;
  float* y_data = y.data_ptr<float>();
  (wide ? gemm<Avx512Tiles> : gemm<Avx2Tiles>)(x_data, m, k, panel_data, n, bias_data, y_data);
#endif
  return y.view(sizes);  // [..., n]
}

}  // namespace trafo::ops

namespace trafo::ops {

bool packed_bf16_gemm_applies(const at::Tensor& x, const at::Tensor& weight) {
  // autocast first: an fp32 step (every call of fp32 decoding) is told no at once
  return at::autocast::is_autocast_enabled(at::kCPU) && at::autocast::get_autocast_dtype(at::kCPU) == at::kBFloat16 &&
         cpu_has_avx512_bf16() && x.dim() > 0 && x.numel() > 0 &&
         cpu_fast_path(Kernel::packed_bf16_gemm, {x, weight}) && weight.scalar_type() == at::kFloat &&
         !weight.is_inference();
}

at::Tensor pack_bf16_panels(const at::Tensor& weight) {
  constexpr int64_t width = 32;
  const auto w = weight.contiguous().to(at::kBFloat16);  // rounded to nearest even, as autocast would
  const int64_t n = w.size(0), k = w.size(1), length = (k + 1) / 2 * 2;  // whole pairs
  const int64_t count = (n + width - 1) / width;
  auto panels = at::zeros({count, length / 2, width * 2}, w.options());  // [ceil(n/32), pairs, 32 · 2]
  TORCH_CHECK(reinterpret_cast<uintptr_t>(panels.data_ptr()) % 64 == 0, "packed panels must be 64-byte aligned");
  const uint16_t* source = elements<uint16_t>(w);
  uint16_t* target = elements<uint16_t>(panels);
  for (int64_t p = 0; p < count; ++p) {
    uint16_t* panel = target + p * length * width;
    for (int64_t j = 0; j < width && p * width + j < n; ++j) {
      const uint16_t* row = source + (p * width + j) * k;
      for (int64_t i = 0; i < k; ++i) panel[(i / 2) * 2 * width + 2 * j + i % 2] = row[i];
    }
  }
  return panels;
}

at::Tensor packed_bf16_gemm(const at::Tensor& x, const at::Tensor& panels, int64_t n, const at::Tensor& bias) {
  note_run(Kernel::packed_bf16_gemm, Isa::avx512);
  const int64_t length = panels.size(1) * 2;
  const int64_t k = x.size(-1);
  auto rows = x.reshape({-1, k}).to(at::kBFloat16).contiguous();  // [m, k]
  if (length != k) rows = at::constant_pad_nd(rows, {0, length - k});  // [m, k + 1]: whole pairs
  const auto b = bias.defined() ? bias.to(at::kFloat).contiguous() : at::Tensor();
  auto sizes = x.sizes().vec();
  sizes.back() = n;
  const int64_t m = rows.size(0);
  auto y = at::empty({m, n}, rows.options());  // [m, n] bf16
#if defined(__x86_64__)
  gemm<Bf16Tiles>(elements<uint16_t>(rows), m, k, elements<uint16_t>(panels), n, b.defined() ? b.data_ptr<float>() : nullptr,
                  elements<uint16_t>(y));
#endif
  return y.view(sizes);  // [..., n]
}

}  // namespace trafo::ops
