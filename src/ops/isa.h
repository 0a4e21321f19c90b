// How a kernel uses an instruction set the build does not target: its function is compiled with
// TRAFO_AVX2_FMA or TRAFO_AVX512 (TRAFO_AVX512_BF16 where it multiplies bf16 with vdpbf16ps),
// whatever the build's own target flags, and called only where ops::cpu_isa() (ops/eligibility.h)
// is that set or more. A kernel that also runs without AVX2 writes its loop once, TRAFO_INLINE_LOOP,
// and wraps it once per set, plainly and with each attribute, and picks the copy with cpu_isa(). The
// compiler vectorises each copy for its own target.
#pragma once

#if defined(__x86_64__)
#define TRAFO_AVX2_FMA __attribute__((target("avx2,fma")))
#define TRAFO_AVX512 __attribute__((target("avx2,fma,avx512f,avx512bw,avx512vl,avx512dq")))
#define TRAFO_AVX512_BF16 __attribute__((target("avx2,fma,avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")))
#else
#define TRAFO_AVX2_FMA
#define TRAFO_AVX512
#define TRAFO_AVX512_BF16
#endif

#define TRAFO_INLINE_LOOP inline __attribute__((always_inline))
