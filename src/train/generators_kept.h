// Puts the random generators back as they were when this was made: the CPU's, and `device`'s where
// it is a GPU. Probes that run training steps or unpack a training state (which sets the CPU
// generator) use it, so that a run's own draws do not depend on whether they ran. Internal to train/.
#pragma once

#include <mutex>
#include <optional>

#include <ATen/Context.h>
#include <c10/core/Device.h>

namespace trafo::train {

class GeneratorsKept {
 public:
  explicit GeneratorsKept(const c10::Device& device = c10::Device(c10::kCPU))
      : cpu_(at::globalContext().defaultGenerator(c10::Device(c10::kCPU))),
        cpu_state_(state_of(cpu_)),
        device_(device.is_cuda() ? std::optional(at::globalContext().defaultGenerator(device)) : std::nullopt),
        device_state_(device_ ? std::optional(state_of(*device_)) : std::nullopt) {}
  ~GeneratorsKept() {
    restore(cpu_, cpu_state_);
    if (device_) restore(*device_, *device_state_);
  }
  GeneratorsKept(const GeneratorsKept&) = delete;
  GeneratorsKept& operator=(const GeneratorsKept&) = delete;

 private:
  static at::Tensor state_of(at::Generator& generator) {
    std::lock_guard<std::mutex> lock(generator.mutex());
    return generator.get_state();
  }
  static void restore(at::Generator& generator, const at::Tensor& state) {
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(state);
  }

  at::Generator cpu_;
  at::Tensor cpu_state_;
  std::optional<at::Generator> device_;
  std::optional<at::Tensor> device_state_;
};

}  // namespace trafo::train
