// --precision fp32 | bf16 | auto: which arithmetic a run's forward pass uses, and why. auto picks
// bf16 only where the device computes it natively and faster, judged per workload:
// - training: a CUDA device of compute capability >= 8.0, or a CPU whose flags include amx_bf16 or
//   avx512_bf16 (elsewhere bf16 is emulated, tens of times slower) and whose bf16 matmuls, timed at
//   start, run at least kMinBf16Speedup times as fast as its fp32 ones (an Intel CPU with
//   avx512_bf16 but no AMX runs them slower than fp32);
// - decoding (eval, translate, serve, validation) on a CPU: fp32, the precision in which a sentence's
//   translation never depends on what shares its batch (docs/contracts.md); bf16 only when asked;
// - decoding on CUDA: native bf16, and decoding steps of the loaded model itself, timed in both
//   precisions, at least kMinBf16DecodingSpeedup times as fast in bf16.
//   Decoding is small products, casts and the packed fp32 kernels: on a Zen 5 whose bf16 matmuls run
//   4x fp32, greedy decoding ran 0.6x as fast in bf16.
#pragma once

#include <functional>
#include <set>
#include <string>

#include <c10/core/Device.h>

namespace trafo::runtime {

struct Precision {
  bool bf16 = false;
  bool emulated = false;  // bf16 asked for on a CPU without native bf16: runs, slowly
  std::string reason;     // for train.log and the `start` event
  std::string name() const { return bf16 ? "bf16" : "fp32"; }
};

// The least bf16 / fp32 matmul speed for which auto takes bf16 on a CPU with the flags: autocast's
// casts and its bf16 elementwise ops take back some of what the products gain.
constexpr double kMinBf16Speedup = 1.2;
// The same for decoding: a margin over timing noise, so that validation and a later eval on the
// same machine choose alike.
constexpr double kMinBf16DecodingSpeedup = 1.1;
// The same for training on CUDA, timed on whole training steps of the model: a margin over noise.
constexpr double kMinCudaBf16Speedup = 1.05;

// `requested` is fp32, bf16 or auto; `cpu_flags` as named in /proc/cpuinfo (only the bf16 ones
// matter); `cpu_speedup` gives bf16 / fp32 matmul speed on this CPU, called only where auto finds
// the flags on a CPU run; `cuda_speedup`, where given, bf16 / fp32 speed of the model's training
// steps on a CUDA device with native bf16 (without it such a device takes bf16 untimed).
Precision resolve_precision(const std::string& requested, bool cuda, bool cuda_native_bf16,
                            const std::set<std::string>& cpu_flags, const std::function<double()>& cpu_speedup,
                            const std::function<double()>& cuda_speedup = {});

// The same for decoding: `decoding_speedup` gives bf16 / fp32 speed of decoding steps of the model,
// called where auto finds native bf16 on CUDA (compute capability >= 8.0); auto on a CPU is fp32.
Precision resolve_decoding_precision(const std::string& requested, bool cuda, bool cuda_native_bf16,
                                     const std::set<std::string>& cpu_flags,
                                     const std::function<double()>& decoding_speedup);

// This machine's: the bf16 flags LibTorch's cpuinfo reports (amx_bf16, avx512_bf16), or the
// the flags test_hooks().cpu_flags poses when set (tests pose as other CPUs; trafo/test_hooks.h).
std::set<std::string> cpu_bf16_flags();
// bf16 / fp32 speed of a training-sized matmul (2048x512 by 512x1024) on the current intra-op
// threads, best of 3 each, about 0.1 s; or test_hooks().bf16_speedup when set.
double cpu_bf16_speedup();
// Whether the current CUDA device has compute capability >= 8.0 (false without CUDA).
bool cuda_native_bf16();

// What every command runs: resolve_precision for `device` with this machine's flags and timing
// (on the current intra-op threads); bf16 where it is emulated warns once, naming `what` ("training"),
// unless `quiet` (a probe before the run's own choice, which warns).
// On CUDA, `cuda_speedup` (where given) times the model's training steps in both precisions.
Precision pick_precision(const std::string& requested, const c10::Device& device, const std::string& what,
                         const std::function<double()>& cuda_speedup = {}, bool quiet = false);
// resolve_decoding_precision for `device` with this machine's flags; `decoding_speedup` times the
// model (decode::bf16_decoding_speedup), or test_hooks().bf16_decoding_speedup gives the number (tests).
// bf16 where it is emulated warns unless `quiet` (validation: training has warned already).
Precision pick_decoding_precision(const std::string& requested, const c10::Device& device,
                                  const std::function<double()>& decoding_speedup, bool quiet = false);

}  // namespace trafo::runtime
