// Adam and AdamW whose update is one fused kernel call for all parameters (PyTorch's fused=True).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <torch/optim/optimizer.h>

namespace trafo::train {

// name: "adam" (weight decay is L2, added to the gradient) or "adamw" (decoupled weight decay).
// The result is a torch::optim::Adam or torch::optim::AdamW whose step() runs at::_fused_adam_ or
// at::_fused_adamw_; its state, save() and load() are the base class's, so checkpoints of either
// load into the other. Parameters must be contiguous; amsgrad is not supported.
std::unique_ptr<torch::optim::Optimizer> make_optimizer(const std::string& name, std::vector<torch::Tensor> params,
                                                        double lr, double beta1, double beta2, double eps,
                                                        double weight_decay);

}  // namespace trafo::train
