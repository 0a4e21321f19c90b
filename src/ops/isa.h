// The one way a kernel uses AVX2: its function is compiled with TRAFO_AVX2_FMA, whatever the
// build's own target flags, and called only where ops::cpu_has_avx2_fma() holds, through the
// eligibility rule (ops/eligibility.h). A kernel that also runs without AVX2 writes its loop once,
// TRAFO_INLINE_LOOP, and wraps it twice: plainly and with TRAFO_AVX2_FMA, and picks the copy with
// cpu_has_avx2_fma(). The compiler vectorises each copy for its own target.
#pragma once

#if defined(__x86_64__)
#define TRAFO_AVX2_FMA __attribute__((target("avx2,fma")))
#else
#define TRAFO_AVX2_FMA
#endif

#define TRAFO_INLINE_LOOP inline __attribute__((always_inline))
