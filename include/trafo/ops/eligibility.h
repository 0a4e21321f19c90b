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
};

// Whether a call may take `kernel`: every tensor given is a float32 CPU tensor (or bfloat16, for a
// kernel with a bf16 variant) and, where the kernel needs it (the table in src/ops/eligibility.cpp),
// grad mode is off (it has no backward), CPU autocast is off (it replaces an op that autocast would
// run in bf16, and has no bf16 variant), and the CPU has AVX2 and FMA (it is written in their
// intrinsics).
bool cpu_fast_path(Kernel kernel, std::initializer_list<std::reference_wrapper<const at::Tensor>> tensors);

// AVX2 and FMA, checked once at run time: a kernel is compiled for them whatever the build's flags.
bool cpu_has_avx2_fma();

// Calls `kernel` has served in this process: tests check that a fast path ran, not silently
// skipped. Each kernel's entry point notes its calls; nothing decides on the count.
int64_t runs(Kernel kernel);
void note_run(Kernel kernel);

}  // namespace trafo::ops
