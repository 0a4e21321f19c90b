// Adam and AdamW whose update is one fused kernel call for all parameters (PyTorch's fused=True).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

namespace trafo::train {

// The optimizers make_optimizer makes: a step the device skips, the host reading nothing, where
// `skip` (a float scalar on the parameters' device) is 1, as PyTorch's fused Adam does with found_inf.
// The step counts that bias-correct the moments stay on the device and count applied steps only.
// With `lr` (a float scalar on the device) the learning rate is read from it, not from the options,
// so that a captured CUDA graph takes each replay's own.
class SkippableStep {
 public:
  virtual ~SkippableStep() = default;
  virtual void step_unless(const at::Tensor& skip, const at::Tensor& lr = {}) = 0;
};

// name: "adam" (weight decay is L2, added to the gradient) or "adamw" (decoupled weight decay).
// The result is a torch::optim::Adam or torch::optim::AdamW whose step() runs at::_fused_adam_ or
// at::_fused_adamw_; its state, save() and load() are the base class's, so checkpoints of either
// load into the other. Parameters must be contiguous; amsgrad is not supported. It is also a
// SkippableStep; step() is step_unless with no skip.
std::unique_ptr<torch::optim::Optimizer> make_optimizer(const std::string& name, std::vector<torch::Tensor> params,
                                                        double lr, double beta1, double beta2, double eps,
                                                        double weight_decay);

// The parameters by name, in the optimizer's order (the model's named_parameters()).
using NamedParameters = std::vector<std::pair<std::string, torch::Tensor>>;
NamedParameters named_parameters(const torch::nn::Module& module);

// Adam's state as plain tensors, for checkpoints: "exp_avg/NAME" and "exp_avg_sq/NAME" (the
// moments, on the CPU) and "step/NAME" (an int64 scalar) for each parameter that has a state.
std::map<std::string, torch::Tensor> optimizer_state(torch::optim::Optimizer& optimizer,
                                                     const NamedParameters& parameters);
// Puts such tensors back as the optimizer's state, on each parameter's device. Throws
// trafo::InputError when one is missing or its shape differs from its parameter's.
void load_optimizer_state(torch::optim::Optimizer& optimizer, const NamedParameters& parameters,
                          const std::map<std::string, torch::Tensor>& tensors);

}  // namespace trafo::train
