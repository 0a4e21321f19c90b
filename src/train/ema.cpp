#include "trafo/train/ema.h"

#include <algorithm>

#include <torch/torch.h>

#include "trafo/errors.h"

namespace trafo::train {
namespace {

const std::string kRawWeights = "raw_weights/";

}  // namespace

WeightAverage::WeightAverage(const torch::nn::Module& module, double decay) : decay_(decay) {
  for (const auto& p : module.named_parameters()) {
    names_.push_back(p.key());
    parameters_.push_back(p.value());
    average_.push_back(p.value().detach().to(torch::kFloat32, /*non_blocking=*/false, /*copy=*/true));
  }
}

double WeightAverage::decay_at(int64_t step) const {
  return std::min(decay_, (1.0 + static_cast<double>(step)) / (10.0 + static_cast<double>(step)));
}

void WeightAverage::update(int64_t step) {
  torch::NoGradGuard no_grad;
  // lerp(a, w, 1 − d) = d·a + (1 − d)·w; with d = 0 it is w exactly.
  at::_foreach_lerp_(average_, parameters_, 1.0 - decay_at(step));
}

std::map<std::string, at::Tensor> WeightAverage::named() const {
  std::map<std::string, at::Tensor> result;
  for (size_t i = 0; i < names_.size(); ++i) result.emplace(names_[i], average_[i].detach().cpu().clone());
  return result;
}

void WeightAverage::load(const std::map<std::string, at::Tensor>& weights) {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < names_.size(); ++i) {
    const auto found = weights.find(names_[i]);
    if (found == weights.end() || found->second.sizes() != average_[i].sizes()) {
      throw InputError("cannot resume the moving average: the checkpoint lacks weight " + names_[i] +
                       " or has another shape");
    }
    average_[i].copy_(found->second);
  }
}

WeightAverage::Applied::Applied(WeightAverage& average) : average_(average) {
  torch::NoGradGuard no_grad;
  for (const auto& p : average_.parameters_) raw_.push_back(p.detach().clone());
  at::_foreach_copy_(average_.parameters_, average_.average_);
}

WeightAverage::Applied::~Applied() {
  torch::NoGradGuard no_grad;
  at::_foreach_copy_(average_.parameters_, raw_);
}

void store_average(const WeightAverage& average, checkpoint::Checkpoint& checkpoint) {
  for (auto& [name, tensor] : average.named()) {
    auto& weight = checkpoint.weights.at(name);
    checkpoint.training->tensors[kRawWeights + name] = std::move(weight);
    weight = std::move(tensor);
  }
}

std::map<std::string, at::Tensor> raw_weights(const checkpoint::TrainingState& state) {
  std::map<std::string, at::Tensor> raw;
  for (const auto& [name, tensor] : state.tensors) {
    if (name.rfind(kRawWeights, 0) == 0) raw.emplace(name.substr(kRawWeights.size()), tensor);
  }
  return raw;
}

}  // namespace trafo::train
