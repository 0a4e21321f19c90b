// --precision fp32 | bf16 | auto: which arithmetic a run's forward pass uses, and why. auto picks
// bf16 only where the device computes it natively: a CUDA device of compute capability >= 8.0, or
// a CPU whose flags include amx_bf16 or avx512_bf16 (elsewhere bf16 is emulated, tens of times slower).
#pragma once

#include <set>
#include <string>

namespace trafo::train {

struct Precision {
  bool bf16 = false;
  bool emulated = false;  // bf16 asked for on a CPU without native bf16: runs, slowly
  std::string reason;     // for train.log and the `start` event
  std::string name() const { return bf16 ? "bf16" : "fp32"; }
};

// `requested` is fp32, bf16 or auto; `cpu_flags` as named in /proc/cpuinfo (only the bf16 ones matter).
Precision resolve_precision(const std::string& requested, bool cuda, bool cuda_native_bf16,
                            const std::set<std::string>& cpu_flags);

// This machine's: the bf16 flags LibTorch's cpuinfo reports (amx_bf16, avx512_bf16), or the
// comma- or space-separated names in TRAFO_CPU_FLAGS when that is set (tests pose as other CPUs).
std::set<std::string> cpu_bf16_flags();
// Whether the current CUDA device has compute capability >= 8.0 (false without CUDA).
bool cuda_native_bf16();

}  // namespace trafo::train
