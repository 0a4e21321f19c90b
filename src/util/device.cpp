#include "trafo/util/device.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <ATen/Context.h>
#include <torch/cuda.h>

#include "trafo/errors.h"
#include "trafo/test_hooks.h"

namespace trafo::util {

c10::Device resolve_device(const std::string& name) {
  const bool available = torch::cuda::is_available();
  if (name == "cuda" && !available) throw InputError("--device cuda: no CUDA device is available");
  if (name == "cuda" || (name == "auto" && available)) {
    // Attention on CUDA leaves cuDNN's kernel out and takes the flash or memory-efficient one. cuDNN
    // builds an execution plan for every new shape, and batches come in many shapes: on an H200
    // (PyTorch 2.11.0+cu130, default model, 4,096-token batches, 2026-11-27) bf16 training of
    // bench/pytorch_reference.py ran 46,070 target tokens/s with it and 143,310 without, and trafo,
    // which took it, 44,594 (254,431 in fp32, where cuDNN's attention does not apply).
    at::globalContext().setSDPUseCuDNN(false);
    return c10::kCUDA;
  }
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

int threads_for_load(int cores, double busy_cores_of_others) {
  // Half a core or more taken by others is one core fewer for us.
  const int taken = static_cast<int>(std::floor(std::max(0.0, busy_cores_of_others) + 0.5));
  return std::clamp(cores - taken, 1, std::max(1, cores));
}

LoadMeter::LoadMeter() : last_(read()) {}

LoadMeter::Reading LoadMeter::read() {
  Reading reading;
  std::ifstream stat("/proc/stat");
  std::string label;
  double value = 0;
  // cpu  user nice system idle iowait irq softirq steal ...: idle and iowait are time nobody used.
  if (stat >> label && label == "cpu") {
    for (int field = 0; field < 8 && stat >> value; ++field) {
      reading.total_ticks += value;
      if (field != 3 && field != 4) reading.busy_ticks += value;
    }
  }
  std::ifstream own("/proc/self/stat");
  std::string text;
  std::getline(own, text);
  // Fields after the command name in parentheses, which may hold spaces: utime and stime are 14 and 15.
  const auto close = text.rfind(')');
  if (close != std::string::npos) {
    std::istringstream fields(text.substr(close + 2));
    std::string field;
    for (int index = 3; index <= 15 && fields >> field; ++index) {
      if (index >= 14) reading.own_ticks += std::atof(field.c_str());
    }
  }
  return reading;
}

double LoadMeter::busy_cores() {
  if (const auto posed = test_hooks().other_load) return *posed;
  const Reading now = read();
  const double total = now.total_ticks - last_.total_ticks;
  const double others = (now.busy_ticks - last_.busy_ticks) - (now.own_ticks - last_.own_ticks);
  last_ = now;
  if (total <= 0) return 0.0;
  const double cores = static_cast<double>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(0.0, others / total * cores);
}

double busy_cores_of_others(double seconds) {
  if (const auto posed = test_hooks().other_load) return *posed;
  LoadMeter meter;
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  return meter.busy_cores();
}

int threads_following_load(int requested) {
  const int threads = resolve_threads(requested);
  return requested != 0 ? threads : threads_for_load(threads, busy_cores_of_others(0.1));
}

}  // namespace trafo::util
