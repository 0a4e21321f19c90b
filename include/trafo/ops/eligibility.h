// The CPU fast paths: kernels that stand in for a LibTorch op where that op is slow at trafo's
// sizes (src/ops/, one file a kernel). One rule says whether a call may take one; a kernel adds
// only the limits of its own shapes (its <kernel>_applies in ops/<kernel>.h).
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>

#include <ATen/core/Tensor.h>

namespace trafo::ops {

enum class Kernel {
  packed_gemm,     // y = x·Wᵀ + b over a copy of W packed once (ops/packed_gemm.h)
  step_attention,  // attention of one query per row over a KV cache (ops/step_attention.h)
  hashed_dropout,  // dropout with a counter-based mask (ops/hashed_dropout.h)
  fused_loss,      // output projection and label-smoothed cross-entropy in chunks (ops/fused_loss.h)
  packed_bf16_gemm,  // the packed GEMM's bf16 variant, under bf16 autocast (ops/packed_gemm.h)
};

// The instruction sets a kernel has a variant for, each a superset of the one before: none (portable
// code, or LibTorch's op where a kernel has no portable copy), avx2 (AVX2 and FMA), avx512
// (AVX-512 F, BW, VL and DQ besides). A kernel's variant for a set is compiled for it whatever the
// build's flags (src/ops/isa.h) and runs only where the CPU has it.
enum class Isa { none, avx2, avx512 };

const char* isa_name(Isa isa);

// The variant every kernel takes in this process: the best the CPU has (checked once at run time),
// or a lesser one where TRAFO_CPU_KERNELS (none, avx2 or avx512) asks for it; asking for more than
// the CPU has gets what it has. Another value is an InputError naming it.
Isa cpu_isa();

// The best the CPU has, whatever TRAFO_CPU_KERNELS asks.
Isa cpu_isa_available();

// AVX512_BF16 (vdpbf16ps) besides avx512, for the kernels that multiply bf16: the CPU's answer, and
// false wherever cpu_isa() is less than avx512.
bool cpu_has_avx512_bf16();

// Tests run each variant in one process: cpu_isa() is `isa` (no more than the CPU has) while the
// guard lives.
class ForcedIsa {
 public:
  explicit ForcedIsa(Isa isa);
  ~ForcedIsa();
  ForcedIsa(const ForcedIsa&) = delete;
  ForcedIsa& operator=(const ForcedIsa&) = delete;

 private:
  Isa previous_;
};

// Whether a call may take `kernel`: every tensor given is a float32 CPU tensor (or bfloat16, for a
// kernel with a bf16 variant) and, where the kernel needs it (the table in src/ops/eligibility.cpp),
// grad mode is off (it has no backward), CPU autocast is off (it replaces an op that autocast would
// run in bf16, and has no bf16 variant), and cpu_isa() is at least avx2 (it is written in
// intrinsics, with no portable copy).
bool cpu_fast_path(Kernel kernel, std::initializer_list<std::reference_wrapper<const at::Tensor>> tensors);

// Calls `kernel` has served in this process, in all variants or in one: tests check that a fast
// path ran, in the variant they asked for, not silently skipped. Each kernel's entry point notes its
// calls; nothing decides on the count.
int64_t runs(Kernel kernel);
int64_t runs(Kernel kernel, Isa isa);
void note_run(Kernel kernel, Isa isa);

}  // namespace trafo::ops
