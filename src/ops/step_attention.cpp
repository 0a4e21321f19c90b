#include "trafo/ops/step_attention.h"

#include <cmath>
#include <limits>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

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

// Where the tensors of one call lie, in floats: q [B,h,d_k], k and v [B,h,T,d_k] with d_k
// contiguous, mask [B,T] contiguous (true: may attend) or null, out [B,h·d_k] contiguous.
struct Shape {
  int64_t heads, length, d_k;
  int64_t q_batch, q_head;          // strides of q
  int64_t k_batch, k_head, k_time;  // strides of k
  int64_t v_batch, v_head, v_time;  // strides of v
  float scale;                      // 1/√d_k
};

#if defined(__x86_64__)

// One variant's vectors: the few operations step_rows needs, on 8 floats (AVX2) or 16 (AVX-512).
// exp_nonpositive is e^x for x ≤ 0 (Cephes' expf: e^x = 2^n · e^r, n = round(x·log2 e),
// |r| ≤ ln2/2, a degree-6 polynomial for e^r; ~1 ulp); below −87.3 (and for −∞) it is 0.
struct Avx2 {
  using V = __m256;
  static constexpr int64_t kLanes = 8;
  TRAFO_AVX2_FMA static V zero() { return _mm256_setzero_ps(); }
  TRAFO_AVX2_FMA static V set(float x) { return _mm256_set1_ps(x); }
  TRAFO_AVX2_FMA static V load(const float* p) { return _mm256_loadu_ps(p); }
  TRAFO_AVX2_FMA static void store(float* p, V x) { _mm256_storeu_ps(p, x); }
  TRAFO_AVX2_FMA static V add(V a, V b) { return _mm256_add_ps(a, b); }
  TRAFO_AVX2_FMA static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  TRAFO_AVX2_FMA static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  TRAFO_AVX2_FMA static V max(V a, V b) { return _mm256_max_ps(a, b); }
  TRAFO_AVX2_FMA static V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  TRAFO_AVX2_FMA static V fnmadd(V a, V b, V c) { return _mm256_fnmadd_ps(a, b, c); }
  TRAFO_AVX2_FMA static float sum(V x) {
    const __m128 half = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
    const __m128 pairs = _mm_add_ps(half, _mm_movehl_ps(half, half));
    return _mm_cvtss_f32(_mm_add_ss(pairs, _mm_shuffle_ps(pairs, pairs, 1)));
  }
  TRAFO_AVX2_FMA static float largest(V x) {
    const __m128 half = _mm_max_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
    const __m128 pairs = _mm_max_ps(half, _mm_movehl_ps(half, half));
    return _mm_cvtss_f32(_mm_max_ss(pairs, _mm_shuffle_ps(pairs, pairs, 1)));
  }
  TRAFO_AVX2_FMA static V round(V x) { return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  // 2^n for whole n in [−126, 127]
  TRAFO_AVX2_FMA static V power_of_two(V n) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23));
  }
  // x where keep > floor, else 0
  TRAFO_AVX2_FMA static V zero_unless_above(V x, V keep, V floor) {
    return _mm256_and_ps(x, _mm256_cmp_ps(keep, floor, _CMP_GT_OQ));
  }
};

struct Avx512 {
  using V = __m512;
  static constexpr int64_t kLanes = 16;
  TRAFO_AVX512 static V zero() { return _mm512_setzero_ps(); }
  TRAFO_AVX512 static V set(float x) { return _mm512_set1_ps(x); }
  TRAFO_AVX512 static V load(const float* p) { return _mm512_loadu_ps(p); }
  TRAFO_AVX512 static void store(float* p, V x) { _mm512_storeu_ps(p, x); }
  TRAFO_AVX512 static V add(V a, V b) { return _mm512_add_ps(a, b); }
  TRAFO_AVX512 static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  TRAFO_AVX512 static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  TRAFO_AVX512 static V max(V a, V b) { return _mm512_max_ps(a, b); }
  TRAFO_AVX512 static V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  TRAFO_AVX512 static V fnmadd(V a, V b, V c) { return _mm512_fnmadd_ps(a, b, c); }
  TRAFO_AVX512 static float sum(V x) { return _mm512_reduce_add_ps(x); }
  TRAFO_AVX512 static float largest(V x) { return _mm512_reduce_max_ps(x); }
  TRAFO_AVX512 static V round(V x) { return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  TRAFO_AVX512 static V power_of_two(V n) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23));
  }
  TRAFO_AVX512 static V zero_unless_above(V x, V keep, V floor) {
    return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(keep, floor, _CMP_GT_OQ), x);
  }
};

template <typename S>
TRAFO_INLINE_LOOP typename S::V exp_nonpositive(typename S::V x) {
  using V = typename S::V;
  const V floor = S::set(-87.3f);
  const V clamped = S::max(x, floor);
  const V n = S::round(S::mul(clamped, S::set(1.44269504088896341f)));
  V r = S::fnmadd(n, S::set(0.693359375f), clamped);
  r = S::fnmadd(n, S::set(-2.12194440e-4f), r);
  V p = S::set(1.9875691500e-4f);
  p = S::fmadd(p, r, S::set(1.3981999507e-3f));
  p = S::fmadd(p, r, S::set(8.3334519073e-3f));
  p = S::fmadd(p, r, S::set(4.1665795894e-2f));
  p = S::fmadd(p, r, S::set(1.6666665459e-1f));
  p = S::fmadd(p, r, S::set(5.0000001201e-1f));
  const V y = S::add(S::fmadd(S::mul(p, r), r, r), S::set(1.0f));
  return S::zero_unless_above(S::mul(y, S::power_of_two(n)), x, floor);
}

// out[b, h·d_k + j] for the rows r = b·heads + h in [begin, end) (the formula in step_attention.h),
// d_k a multiple of S::kLanes.
template <typename S>
TRAFO_INLINE_LOOP void step_rows_loop(const float* q, const float* k, const float* v, const bool* mask, float* out,
                                      const Shape& s, int64_t begin, int64_t end) {
  using V = typename S::V;
  constexpr int64_t lanes = S::kLanes;
  const float minus_infinity = -std::numeric_limits<float>::infinity();
  const int64_t padded = (s.length + lanes - 1) / lanes * lanes;
  std::vector<float> weights(static_cast<size_t>(padded));
  for (int64_t row = begin; row < end; ++row) {
    const int64_t b = row / s.heads, h = row % s.heads;
    const float* q_row = q + b * s.q_batch + h * s.q_head;
    const float* k_row = k + b * s.k_batch + h * s.k_head;
    const float* v_row = v + b * s.v_batch + h * s.v_head;
    const bool* mask_row = mask != nullptr ? mask + b * s.length : nullptr;
    float* out_row = out + row * s.d_k;

    // scores: q·k_t · scale, −∞ where masked and past the end
    for (int64_t t = 0; t < padded; ++t) {
      float score = minus_infinity;
      if (t < s.length && (mask_row == nullptr || mask_row[t])) {
        const float* k_t = k_row + t * s.k_time;
        V dot = S::mul(S::load(q_row), S::load(k_t));
        for (int64_t j = lanes; j < s.d_k; j += lanes) dot = S::fmadd(S::load(q_row + j), S::load(k_t + j), dot);
        score = S::sum(dot) * s.scale;
      }
      weights[t] = score;
    }
    V largest = S::set(minus_infinity);
    for (int64_t t = 0; t < padded; t += lanes) largest = S::max(largest, S::load(&weights[t]));
    const float top = S::largest(largest);
    if (top == minus_infinity) {
      for (int64_t j = 0; j < s.d_k; ++j) out_row[j] = 0.0f;
      continue;
    }
    // weights: e^(score − top), and their sum
    V total = S::zero();
    for (int64_t t = 0; t < padded; t += lanes) {
      const V e = exp_nonpositive<S>(S::sub(S::load(&weights[t]), S::set(top)));
      S::store(&weights[t], e);
      total = S::add(total, e);
    }
    const float inverse_total = 1.0f / S::sum(total);
    // context: Σ_t weight_t v_t / Σ_t weight_t
    alignas(64) float context[256];
    for (int64_t j = 0; j < s.d_k; j += lanes) S::store(context + j, S::zero());
    for (int64_t t = 0; t < s.length; ++t) {
      if (weights[t] == 0.0f) continue;
      const V w = S::set(weights[t]);
      const float* v_t = v_row + t * s.v_time;
      for (int64_t j = 0; j < s.d_k; j += lanes) S::store(context + j, S::fmadd(w, S::load(v_t + j), S::load(context + j)));
    }
    const V scale = S::set(inverse_total);
    for (int64_t j = 0; j < s.d_k; j += lanes) S::store(out_row + j, S::mul(S::load(context + j), scale));
  }
}

TRAFO_AVX2_FMA void step_rows_avx2(const float* q, const float* k, const float* v, const bool* mask, float* out,
                                   const Shape& s, int64_t begin, int64_t end) {
  step_rows_loop<Avx2>(q, k, v, mask, out, s, begin, end);
}

TRAFO_AVX512 void step_rows_avx512(const float* q, const float* k, const float* v, const bool* mask, float* out,
                                   const Shape& s, int64_t begin, int64_t end) {
  step_rows_loop<Avx512>(q, k, v, mask, out, s, begin, end);
}

#else  // not x86-64: cpu_isa() is none, callers take at::scaled_dot_product_attention

void step_rows_avx2(const float*, const float*, const float*, const bool*, float*, const Shape&, int64_t, int64_t) {}
void step_rows_avx512(const float*, const float*, const float*, const bool*, float*, const Shape&, int64_t,
                      int64_t) {}

#endif

}  // namespace

bool step_attention_applies(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask) {
  if (!cpu_fast_path(Kernel::step_attention, {q, k, v})) return false;
  for (const auto* t : {&q, &k, &v}) {
    if (t->stride(3) != 1) return false;
  }
  if (mask.defined() && (mask.scalar_type() != at::kBool || mask.dim() != 4 || mask.size(1) != 1 ||
                         mask.size(2) != 1 || mask.size(3) != k.size(2))) {
    return false;
  }
  return q.size(3) % 8 == 0 && q.size(3) <= 256;
}

at::Tensor step_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask) {
  // zmm rows where d_k fills them (a d_k of 8 · odd stays on ymm)
  const Isa isa = cpu_isa() == Isa::avx512 && q.size(3) % 16 == 0 ? Isa::avx512 : Isa::avx2;
  note_run(Kernel::step_attention, isa);
  const int64_t batch = q.size(0), heads = q.size(1), d_k = q.size(3);
  at::Tensor mask_rows;  // [B,T]
  if (mask.defined()) mask_rows = mask.expand({batch, 1, 1, k.size(2)}).reshape({batch, k.size(2)}).contiguous();
  const Shape shape{heads,       k.size(2),   d_k,         q.stride(0),
                    q.stride(1), k.stride(0), k.stride(1), k.stride(2),
                    v.stride(0), v.stride(1), v.stride(2), static_cast<float>(1.0 / std::sqrt(d_k))};
  auto context = at::empty({batch, 1, heads * d_k}, q.options());
  const float* q_data = q.data_ptr<float>();
  const float* k_data = k.data_ptr<float>();
  const float* v_data = v.data_ptr<float>();
  const bool* mask_data = mask_rows.defined() ? mask_rows.data_ptr<bool>() : nullptr;
  float* out = context.data_ptr<float>();
  at::parallel_for(0, batch * heads, 8, [&](int64_t begin, int64_t end) {
    (isa == Isa::avx512 ? step_rows_avx512 : step_rows_avx2)(q_data, k_data, v_data, mask_data, out, shape, begin, end);
  });
  return context;
}

}  // namespace trafo::ops
