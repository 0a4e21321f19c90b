// Adam and AdamW whose update is one fused kernel call for all parameters (PyTorch's fused=True).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

namespace trafo::train {

// name: "adam" (weight decay is L2, added to the gradient) or "adamw" (decoupled weight decay).
// The result is a torch::optim::Adam or torch::optim::AdamW whose step() runs at::_fused_adam_ or
// at::_fused_adamw_; its state, save() and load() are the base class's, so checkpoints of either
// load into the other. Parameters must be contiguous; amsgrad is not supported.
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
