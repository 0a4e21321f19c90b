#include "trafo/train/precision.h"

#include <cstdlib>
#include <sstream>

#include <ATen/cpu/Utils.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <ATen/Context.h>

#include "trafo/errors.h"

namespace trafo::train {

namespace {

const char* native_flag(const std::set<std::string>& flags) {
  for (const char* flag : {"amx_bf16", "avx512_bf16"}) {
    if (flags.count(flag) != 0) return flag;
  }
  return nullptr;
}

}  // namespace

Precision resolve_precision(const std::string& requested, bool cuda, bool cuda_native_bf16,
                            const std::set<std::string>& cpu_flags) {
  const char* flag = native_flag(cpu_flags);
  const bool native = cuda ? cuda_native_bf16 : flag != nullptr;
  const std::string hardware = cuda ? (native ? "this CUDA device (compute capability >= 8.0) runs bf16 natively"
                                              : "this CUDA device (compute capability < 8.0) has no native bf16")
                                    : (native ? std::string("this CPU has ") + flag
                                              : "this CPU has neither amx_bf16 nor avx512_bf16");
  if (requested == "fp32") return Precision{false, false, "asked for (--precision fp32)"};
  if (requested == "bf16") return Precision{true, !native, "asked for (--precision bf16); " + hardware};
  if (requested == "auto") return Precision{native, false, "--precision auto: " + hardware};
  throw InputError("precision must be fp32, bf16 or auto, not '" + requested + "'");
}

std::set<std::string> cpu_bf16_flags() {
  std::set<std::string> flags;
  if (const char* injected = std::getenv("TRAFO_CPU_FLAGS")) {
    std::string text(injected);
    for (auto& c : text) c = c == ',' ? ' ' : c;
    std::istringstream words(text);
    for (std::string word; words >> word;) flags.insert(word);
    return flags;
  }
  const auto capabilities = at::cpu::get_cpu_capabilities();
  for (const char* name : {"amx_bf16", "avx512_bf16"}) {
    const auto found = capabilities.find(name);
    if (found != capabilities.end() && found->second.isBool() && found->second.toBool()) flags.insert(name);
  }
  return flags;
}

bool cuda_native_bf16() {
  // CUDAHooks answers "major >= 8" for the current device (its check for bf16 cuDNN convolutions).
  return at::hasCUDA() && at::detail::getCUDAHooks().supportsBFloat16ConvolutionWithCuDNNv8();
}

}  // namespace trafo::train
