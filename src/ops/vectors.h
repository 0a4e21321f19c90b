// The vector operations the ops kernels write their loops with, once for every instruction set:
// a loop is a TRAFO_INLINE_LOOP template over S (Avx2: 8 floats, Avx512: 16), wrapped once per
// set with its target attribute (isa.h). x86-64 only; elsewhere the kernels take LibTorch's ops.
#pragma once

#include <cstdint>

#include "isa.h"

#if defined(__x86_64__)
// GCC 12 warns of the intrinsics' own deliberately undefined vectors (_mm512_undefined_ps) and of
// vector arguments passed between functions of one target: neither is a fault here.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wpsabi"
#include <immintrin.h>

namespace trafo::ops {

// One variant's vectors: the operations the loops need, on 8 floats (AVX2) or 16 (AVX-512).
// exp_nonpositive is e^x for x ≤ 0 (Cephes' expf: e^x = 2^n · e^r, n = round(x·log2 e),
// |r| ≤ ln2/2, a degree-6 polynomial for e^r; ~1 ulp); below −87.3 (and for −∞) it is 0.
struct Avx2 {
  using V = __m256;
  static constexpr int64_t kLanes = 8;
  TRAFO_AVX2_FMA static V zero() { return _mm256_setzero_ps(); }
  TRAFO_AVX2_FMA static V set(float x) { return _mm256_set1_ps(x); }
  TRAFO_AVX2_FMA static V load(const float* p) { return _mm256_loadu_ps(p); }
  TRAFO_AVX2_FMA static void store(float* p, V x) { _mm256_storeu_ps(p, x); }
  // bf16 (its 16 bits) widened to fp32, and fp32 rounded to nearest even bf16 (finite values)
  TRAFO_AVX2_FMA static V load(const uint16_t* p) {
    const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bits), 16));
  }
  TRAFO_AVX2_FMA static void store(uint16_t* p, V x) {
    const __m256i bits = _mm256_castps_si256(x);
    const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
    const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(bits, _mm256_add_epi32(odd, _mm256_set1_epi32(0x7fff))), 16);
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(rounded, rounded), 0x08);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_castsi256_si128(packed));
  }
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
  TRAFO_AVX512 static V load(const uint16_t* p) {
    const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16));
  }
  TRAFO_AVX512 static void store(uint16_t* p, V x) {
    const __m512i bits = _mm512_castps_si512(x);
    const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
    const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(bits, _mm512_add_epi32(odd, _mm512_set1_epi32(0x7fff))), 16);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(rounded));
  }
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

}  // namespace trafo::ops

#endif
