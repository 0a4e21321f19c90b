// The machine's side of a benchmark: matmul peak and resident memory.
#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>

#include <torch/torch.h>

#include "trafo/bench/measure.h"
#include "trafo/util/device.h"

namespace trafo::bench {

double matmul_peak_flops(c10::ScalarType dtype, const c10::Device& device, int64_t size, double min_seconds) {
  c10::InferenceMode inference;
  torch::manual_seed(0);
  const auto options = torch::TensorOptions().dtype(dtype).device(device);
  const auto a = torch::randn({size, size}).to(options);  // [n,n]
  const auto b = torch::randn({size, size}).to(options);  // [n,n]
  auto c = torch::mm(a, b);                               // warm-up
  util::synchronize(device);
  const int products = device.is_cuda() ? 20 : 1;
  const double flops = 2.0 * static_cast<double>(size) * static_cast<double>(size) * static_cast<double>(size);
  double best = 0.0, total = 0.0;
  for (int run = 0; run < 3 || total < min_seconds; ++run) {
    const auto started = std::chrono::steady_clock::now();
    for (int i = 0; i < products; ++i) torch::mm_out(c, a, b);
    util::synchronize(device);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    total += seconds;
    best = std::max(best, products * flops / std::max(seconds, 1e-12));
  }
  return best;
}

MemoryUsage memory_usage() {
  MemoryUsage usage;
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    // "VmRSS:     123456 kB"
    auto kilobytes = [&] { return std::stod(line.substr(line.find(':') + 1)) / 1024.0; };
    if (line.rfind("VmRSS:", 0) == 0) usage.rss_mb = kilobytes();
    if (line.rfind("VmHWM:", 0) == 0) usage.peak_rss_mb = kilobytes();
  }
  return usage;
}

}  // namespace trafo::bench
