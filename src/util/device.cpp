#include "trafo/util/device.h"

#include <torch/cuda.h>

#include "trafo/errors.h"

namespace trafo::util {

c10::Device resolve_device(const std::string& name) {
  const bool available = torch::cuda::is_available();
  if (name == "cuda" && !available) throw InputError("--device cuda: no CUDA device is available");
  if (name == "cuda" || (name == "auto" && available)) return c10::kCUDA;
  return c10::kCPU;
}

}  // namespace trafo::util
