// What the hand-vectorized kernels (row_gemm.cpp, step_attention.cpp) need: AVX2 and FMA, checked
// at run time, while the rest of the build keeps its own target flags.
#pragma once

#if defined(__x86_64__)

// Compiles one function for AVX2 and FMA whatever the build's flags; call it only where
// cpu_has_avx2_fma() holds.
#define TRAFO_AVX2 __attribute__((target("avx2,fma")))

namespace trafo::model::detail {
inline bool cpu_has_avx2_fma() {
  static const bool present = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return present;
}
}  // namespace trafo::model::detail

#endif
