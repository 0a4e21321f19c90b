#include "trafo/ops/step_attention.h"

#include <cmath>
#include <limits>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include "isa.h"
#include "trafo/ops/eligibility.h"

#if defined(__x86_64__)
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

// e^x for x ≤ 0 (Cephes' expf: e^x = 2^n · e^r, n = round(x·log2 e), |r| ≤ ln2/2, a degree-6
// polynomial for e^r; ~1 ulp). Below −87.3 (and for −∞) the result is 0.
TRAFO_AVX2_FMA inline __m256 exp_nonpositive(__m256 x) {
  const __m256 underflow = _mm256_cmp_ps(x, _mm256_set1_ps(-87.3f), _CMP_GT_OQ);
  x = _mm256_max_ps(x, _mm256_set1_ps(-87.3f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  const __m256 y = _mm256_add_ps(_mm256_fmadd_ps(_mm256_mul_ps(p, r), r, r), _mm256_set1_ps(1.0f));
  const __m256i exponent = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_and_ps(_mm256_mul_ps(y, _mm256_castsi256_ps(exponent)), underflow);
}

TRAFO_AVX2_FMA inline float horizontal_sum(__m256 x) {
  const __m128 half = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
  const __m128 pairs = _mm_add_ps(half, _mm_movehl_ps(half, half));
  return _mm_cvtss_f32(_mm_add_ss(pairs, _mm_shuffle_ps(pairs, pairs, 1)));
}

TRAFO_AVX2_FMA inline float horizontal_max(__m256 x) {
  const __m128 half = _mm_max_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
  const __m128 pairs = _mm_max_ps(half, _mm_movehl_ps(half, half));
  return _mm_cvtss_f32(_mm_max_ss(pairs, _mm_shuffle_ps(pairs, pairs, 1)));
}

// out[b, h·d_k + j] for the rows r = b·heads + h in [begin, end) (the formula in step_attention.h).
TRAFO_AVX2_FMA void step_rows(const float* q, const float* k, const float* v, const bool* mask, float* out,
                              const Shape& s, int64_t begin, int64_t end) {
  const float minus_infinity = -std::numeric_limits<float>::infinity();
  const int64_t padded = (s.length + 7) / 8 * 8;
  std::vector<float> weights(static_cast<size_t>(padded));
  for (int64_t row = begin; row < end; ++row) {
    const int64_t b = row / s.heads, h = row % s.heads;
    const float* q_row = q + b * s.q_batch + h * s.q_head;
    const float* k_row = k + b * s.k_batch + h * s.k_head;
    const float* v_row = v + b * s.v_batch + h * s.v_head;
    const bool* mask_row = mask != nullptr ? mask + b * s.length : nullptr;
    float* out_row = out + row * s.d_k;

    // scores: q·k_t · scale, −∞ where masked and past the end
    __m256 largest = _mm256_set1_ps(minus_infinity);
    for (int64_t t = 0; t < padded; ++t) {
      float score = minus_infinity;
      if (t < s.length && (mask_row == nullptr || mask_row[t])) {
        const float* k_t = k_row + t * s.k_time;
        __m256 dot = _mm256_mul_ps(_mm256_loadu_ps(q_row), _mm256_loadu_ps(k_t));
        for (int64_t j = 8; j < s.d_k; j += 8) dot = _mm256_fmadd_ps(_mm256_loadu_ps(q_row + j), _mm256_loadu_ps(k_t + j), dot);
        score = horizontal_sum(dot) * s.scale;
      }
      weights[t] = score;
    }
    for (int64_t t = 0; t < padded; t += 8) largest = _mm256_max_ps(largest, _mm256_loadu_ps(&weights[t]));
    const float top = horizontal_max(largest);
    if (top == minus_infinity) {
      for (int64_t j = 0; j < s.d_k; ++j) out_row[j] = 0.0f;
      continue;
    }
    // weights: e^(score − top), and their sum
    __m256 total = _mm256_setzero_ps();
    for (int64_t t = 0; t < padded; t += 8) {
      const __m256 e = exp_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(&weights[t]), _mm256_set1_ps(top)));
      _mm256_storeu_ps(&weights[t], e);
      total = _mm256_add_ps(total, e);
    }
    const float inverse_total = 1.0f / horizontal_sum(total);
    // context: Σ_t weight_t v_t / Σ_t weight_t
    alignas(32) float context[256];
    for (int64_t j = 0; j < s.d_k; j += 8) _mm256_store_ps(context + j, _mm256_setzero_ps());
    for (int64_t t = 0; t < s.length; ++t) {
      if (weights[t] == 0.0f) continue;
      const __m256 w = _mm256_set1_ps(weights[t]);
      const float* v_t = v_row + t * s.v_time;
      for (int64_t j = 0; j < s.d_k; j += 8) {
        _mm256_store_ps(context + j, _mm256_fmadd_ps(w, _mm256_loadu_ps(v_t + j), _mm256_load_ps(context + j)));
      }
    }
    const __m256 scale = _mm256_set1_ps(inverse_total);
    for (int64_t j = 0; j < s.d_k; j += 8) _mm256_storeu_ps(out_row + j, _mm256_mul_ps(_mm256_load_ps(context + j), scale));
  }
}

#else  // not x86-64: cpu_has_avx2_fma() is false, callers take at::scaled_dot_product_attention

void step_rows(const float*, const float*, const float*, const bool*, float*, const Shape&, int64_t, int64_t) {}

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
  note_run(Kernel::step_attention);
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
    step_rows(q_data, k_data, v_data, mask_data, out, shape, begin, end);
  });
  return context;
}

}  // namespace trafo::ops
