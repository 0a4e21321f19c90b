#include "trafo/runtime/precision.h"

#include <algorithm>
#include <chrono>

#include <ATen/cpu/Utils.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "trafo/errors.h"
#include "trafo/test_hooks.h"

namespace trafo::runtime {

namespace {

const char* native_flag(const std::set<std::string>& flags) {
  for (const char* flag : {"amx_bf16", "avx512_bf16"}) {
    if (flags.count(flag) != 0) return flag;
  }
  return nullptr;
}

// What auto times and requires for one workload.
struct Probe {
  const char* timed;        // "matmuls", "decoding steps"
  double min_speedup;
  bool timed_on_cuda;       // false: a CUDA device with native bf16 takes it untimed
  const std::function<double()>& speedup;
};

Precision resolve(const std::string& requested, bool cuda, bool cuda_native_bf16, const std::set<std::string>& cpu_flags,
                  const Probe& probe) {
  const char* flag = native_flag(cpu_flags);
  const bool native = cuda ? cuda_native_bf16 : flag != nullptr;
  const std::string hardware = cuda ? (native ? "this CUDA device (compute capability >= 8.0) runs bf16 natively"
                                              : "this CUDA device (compute capability < 8.0) has no native bf16")
                                    : (native ? std::string("this CPU has ") + flag
                                              : "this CPU has neither amx_bf16 nor avx512_bf16");
  if (requested == "fp32") return Precision{false, false, "asked for (--precision fp32)"};
  if (requested == "bf16") return Precision{true, !native, "asked for (--precision bf16); " + hardware};
  if (requested != "auto") throw InputError("precision must be fp32, bf16 or auto, not '" + requested + "'");
  if (!native || (cuda && !probe.timed_on_cuda)) return Precision{native, false, "--precision auto: " + hardware};
  const double speedup = probe.speedup();
  const bool faster = speedup >= probe.min_speedup;
  return Precision{faster, false,
                   fmt::format("--precision auto: {}, and its bf16 {} ran {:.2f}x as fast as fp32 ({} {:.1f}x)",
                               hardware, probe.timed, speedup, faster ? ">=" : "<", probe.min_speedup)};
}

}  // namespace

Precision resolve_precision(const std::string& requested, bool cuda, bool cuda_native_bf16,
                            const std::set<std::string>& cpu_flags, const std::function<double()>& cpu_speedup,
                            const std::function<double()>& cuda_speedup) {
  if (cuda) {
    return resolve(requested, cuda, cuda_native_bf16, cpu_flags,
                   Probe{"training steps of this model", kMinCudaBf16Speedup, static_cast<bool>(cuda_speedup),
                         cuda_speedup});
  }
  return resolve(requested, cuda, cuda_native_bf16, cpu_flags, Probe{"matmuls", kMinBf16Speedup, false, cpu_speedup});
}

Precision resolve_decoding_precision(const std::string& requested, bool cuda, bool cuda_native_bf16,
                                     const std::set<std::string>& cpu_flags,
                                     const std::function<double()>& decoding_speedup) {
  // oneDNN's bf16 products choose their blocking by the batch's shape, so a sentence decoded in bf16
  // can come out otherwise beside other sentences (31 of 1,000 served sentences on a Zen 5); trafo's
  // fp32 kernels give every row the same sums whatever the batch.
  if (!cuda && requested == "auto") {
    const char* flag = native_flag(cpu_flags);
    return Precision{false, false,
                     std::string("--precision auto: fp32 on a CPU, where a sentence's translation never depends on "
                                 "what shares its batch") +
                         (flag ? std::string(" (this CPU has ") + flag + ": --precision bf16 may decode faster)" : "")};
  }
  return resolve(requested, cuda, cuda_native_bf16, cpu_flags,
                 Probe{"decoding steps of this model", kMinBf16DecodingSpeedup, true, decoding_speedup});
}

std::set<std::string> cpu_bf16_flags() {
  if (const auto& posed = test_hooks().cpu_flags) return *posed;
  std::set<std::string> flags;
  const auto capabilities = at::cpu::get_cpu_capabilities();
  for (const char* name : {"amx_bf16", "avx512_bf16"}) {
    const auto found = capabilities.find(name);
    if (found != capabilities.end() && found->second.isBool() && found->second.toBool()) flags.insert(name);
  }
  return flags;
}

double cpu_bf16_speedup() {
  if (const auto posed = test_hooks().bf16_speedup) return *posed;
  at::NoGradGuard no_grad;
  auto seconds = [](c10::ScalarType dtype) {
    const auto a = at::randn({2048, 512}).to(dtype), b = at::randn({512, 1024}).to(dtype);
    auto product = at::mm(a, b);  // warm-up: the library picks and prepares its kernel
    double best = 1e30;
    for (int round = 0; round < 3; ++round) {
      const auto started = std::chrono::steady_clock::now();
      at::mm_out(product, a, b);
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    }
    return best;
  };
  return seconds(at::kFloat) / std::max(seconds(at::kBFloat16), 1e-9);
}

Precision pick_precision(const std::string& requested, const c10::Device& device, const std::string& what,
                         const std::function<double()>& cuda_speedup, bool quiet) {
  const bool cuda = device.is_cuda();
  auto precision = resolve_precision(requested, cuda, cuda && cuda_native_bf16(),
                                     cuda ? std::set<std::string>{} : cpu_bf16_flags(), cpu_bf16_speedup, cuda_speedup);
  if (precision.emulated && !quiet) {
    spdlog::warn("bf16 is emulated on this device ({}): {} will be slow", precision.reason, what);
  }
  return precision;
}

Precision pick_decoding_precision(const std::string& requested, const c10::Device& device,
                                  const std::function<double()>& decoding_speedup, bool quiet) {
  const bool cuda = device.is_cuda();
  auto precision = resolve_decoding_precision(
      requested, cuda, cuda && cuda_native_bf16(), cuda ? std::set<std::string>{} : cpu_bf16_flags(),
      [&] {
        const auto posed = test_hooks().bf16_decoding_speedup;
        return posed ? *posed : decoding_speedup();
      });
  if (precision.emulated && !quiet) {
    spdlog::warn("bf16 is emulated on this device ({}): decoding will be slow", precision.reason);
  }
  return precision;
}

bool cuda_native_bf16() {
  // CUDAHooks answers "major >= 8" for the current device (its check for bf16 cuDNN convolutions).
  return at::hasCUDA() && at::detail::getCUDAHooks().supportsBFloat16ConvolutionWithCuDNNv8();
}

}  // namespace trafo::runtime
