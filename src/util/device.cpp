#include "trafo/util/device.h"

#include <algorithm>
#include <string>
#include <thread>

#include <torch/cuda.h>

#include "trafo/errors.h"

namespace trafo::util {

c10::Device resolve_device(const std::string& name) {
  const bool available = torch::cuda::is_available();
  if (name == "cuda" && !available) throw InputError("--device cuda: no CUDA device is available");
  if (name == "cuda" || (name == "auto" && available)) return c10::kCUDA;
  return c10::kCPU;
}

void synchronize(const c10::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.has_index() ? device.index() : -1);
}

int resolve_threads(int requested) {
  // More threads than any machine has cores only spawns threads until the system refuses.
  constexpr int kMaxThreads = 1024;
  if (requested < 0 || requested > kMaxThreads) {
    throw InputError("--threads must be between 0 (all cores) and " + std::to_string(kMaxThreads) + ", not " +
                     std::to_string(requested));
  }
  return requested > 0 ? requested : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace trafo::util
