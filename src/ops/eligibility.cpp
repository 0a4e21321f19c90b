#include "trafo/ops/eligibility.h"

#include <array>
#include <atomic>

#include <ATen/autocast_mode.h>
#include <c10/core/GradMode.h>

namespace trafo::ops {
namespace {

struct Needs {
  bool no_grad;      // it has no backward
  bool no_autocast;  // it stands in for an op that CPU autocast would run in bf16, with no bf16 variant
  bool avx2_fma;     // it is written in AVX2 and FMA intrinsics, with no portable copy
  bool takes_bf16;   // it has a bf16 variant: bfloat16 tensors are as welcome as float32 ones
};

// Indexed by Kernel: a new kernel is one more enumerator and one more row; a bf16 variant of a
// kernel is a change of its row.
constexpr std::array<Needs, 4> kNeeds = {{
    {true, true, true, false},     // packed_gemm: inference only; at::linear; intrinsics; fp32
    {true, true, true, false},     // step_attention: inference only; SDPA's products; intrinsics; fp32
    {false, false, false, true},   // hashed_dropout: a backward; autocast leaves dropout in its dtype;
                                   // vectorised twice, for AVX2 and portably; fp32 or bf16 activations
    {false, false, false, false},  // fused_loss: forms its own gradient; under autocast its products run
                                   // in bf16 as at::linear's would; LibTorch ops; fp32 master weight
}};
static_assert(kNeeds.size() == static_cast<size_t>(Kernel::fused_loss) + 1, "one row per Kernel");

// The one mutable global of the ops layer: counts that tests read and no code path decides on.
std::array<std::atomic<int64_t>, kNeeds.size()> run_counts{};

}  // namespace

bool cpu_fast_path(Kernel kernel, std::initializer_list<std::reference_wrapper<const at::Tensor>> tensors) {
  const Needs& needs = kNeeds[static_cast<size_t>(kernel)];
  for (const at::Tensor& tensor : tensors) {
    if (!tensor.device().is_cpu()) return false;
    const auto dtype = tensor.scalar_type();
    if (dtype != at::kFloat && !(needs.takes_bf16 && dtype == at::kBFloat16)) return false;
  }
  if (needs.no_grad && c10::GradMode::is_enabled()) return false;
  if (needs.no_autocast && at::autocast::is_autocast_enabled(at::kCPU)) return false;
  return !needs.avx2_fma || cpu_has_avx2_fma();
}

bool cpu_has_avx2_fma() {
#if defined(__x86_64__)
  static const bool present = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return present;
#else
  return false;
#endif
}

int64_t runs(Kernel kernel) { return run_counts[static_cast<size_t>(kernel)].load(std::memory_order_relaxed); }

void note_run(Kernel kernel) { run_counts[static_cast<size_t>(kernel)].fetch_add(1, std::memory_order_relaxed); }

}  // namespace trafo::ops
