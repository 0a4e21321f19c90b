#include "trafo/ops/eligibility.h"

#include <array>
#include <atomic>
#include <cstdlib>
#include <string>

#include <ATen/autocast_mode.h>
#include <c10/core/GradMode.h>

#include "trafo/errors.h"

namespace trafo::ops {
namespace {

struct Needs {
  bool no_grad;      // it has no backward
  bool no_autocast;  // it stands in for an op that CPU autocast would run in bf16, with no bf16 variant
  bool intrinsics;   // it is written in AVX2 (and AVX-512) intrinsics, with no portable copy
  bool takes_bf16;   // it has a bf16 variant: bfloat16 tensors are as welcome as float32 ones
};

// Indexed by Kernel: a new kernel is one more enumerator and one more row; a bf16 variant of a
// kernel is a change of its row.
constexpr std::array<Needs, 5> kNeeds = {{
    {true, true, true, false},     // packed_gemm: inference only; at::linear; intrinsics; fp32
    {true, false, true, true},     // step_attention: inference only; under autocast it takes bf16 (its
                                   // _applies); intrinsics; fp32 or bf16
    {false, false, false, true},   // hashed_dropout: a backward; autocast leaves dropout in its dtype;
                                   // vectorised thrice, for AVX-512, AVX2 and portably; fp32 or bf16
    {false, false, false, false},  // fused_loss: forms its own gradient; under autocast its products run
                                   // in bf16 as at::linear's would; LibTorch ops; fp32 master weight
    {true, false, true, true},     // packed_bf16_gemm: inference only; it is autocast's linear in bf16;
                                   // intrinsics (AVX512_BF16, packed_bf16_gemm_applies); x fp32 or bf16
}};
static_assert(kNeeds.size() == static_cast<size_t>(Kernel::packed_bf16_gemm) + 1, "one row per Kernel");

constexpr size_t kIsas = 3;

// The ops layer's mutable globals: counts that tests read and no code path decides on, and the
// variant in force (-1 until first asked).
std::array<std::array<std::atomic<int64_t>, kIsas>, kNeeds.size()> run_counts{};
std::atomic<int> forced_isa{-1};

Isa detect() {
#if defined(__x86_64__)
  // libgcc's answer includes the OS's: zmm state saved (XCR0) for the AVX-512 features
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("fma")) {
    return Isa::avx512;
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::avx2;
#endif
  return Isa::none;
}

Isa requested() {
  const char* text = std::getenv("TRAFO_CPU_KERNELS");
  if (text == nullptr || *text == '\0') return Isa::avx512;
  for (const Isa isa : {Isa::none, Isa::avx2, Isa::avx512}) {
    if (std::string(text) == isa_name(isa)) return isa;
  }
  throw InputError("TRAFO_CPU_KERNELS=" + std::string(text) + ": expected none, avx2 or avx512");
}

Isa lesser(Isa a, Isa b) { return static_cast<int>(a) < static_cast<int>(b) ? a : b; }

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
  return !needs.intrinsics || cpu_isa() != Isa::none;
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::avx512: return "avx512";
    case Isa::avx2: return "avx2";
    default: return "none";
  }
}

Isa cpu_isa_available() {
  static const Isa available = detect();
  return available;
}

Isa cpu_isa() {
  int isa = forced_isa.load(std::memory_order_relaxed);
  if (isa < 0) {
    isa = static_cast<int>(lesser(requested(), cpu_isa_available()));
    forced_isa.store(isa, std::memory_order_relaxed);
  }
  return static_cast<Isa>(isa);
}

bool cpu_has_avx512_bf16() {
#if defined(__x86_64__)
  static const bool present = __builtin_cpu_supports("avx512bf16");
  return present && cpu_isa() == Isa::avx512;
#else
  return false;
#endif
}

ForcedIsa::ForcedIsa(Isa isa) : previous_(cpu_isa()) {
  forced_isa.store(static_cast<int>(lesser(isa, cpu_isa_available())), std::memory_order_relaxed);
}

ForcedIsa::~ForcedIsa() { forced_isa.store(static_cast<int>(previous_), std::memory_order_relaxed); }

int64_t runs(Kernel kernel) {
  int64_t total = 0;
  for (const auto& count : run_counts[static_cast<size_t>(kernel)]) total += count.load(std::memory_order_relaxed);
  return total;
}

int64_t runs(Kernel kernel, Isa isa) {
  return run_counts[static_cast<size_t>(kernel)][static_cast<size_t>(isa)].load(std::memory_order_relaxed);
}

void note_run(Kernel kernel, Isa isa) {
  run_counts[static_cast<size_t>(kernel)][static_cast<size_t>(isa)].fetch_add(1, std::memory_order_relaxed);
}

}  // namespace trafo::ops
