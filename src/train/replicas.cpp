#include "replicas.h"

#include <torch/torch.h>

#include "trafo/dist/gradient_sync.h"
#include "trafo/dist/group.h"

namespace trafo::train {

Replicas::Replicas(const dist::Environment& environment, const c10::Device& device, std::chrono::milliseconds timeout)
    : rank_(environment.rank), size_(environment.world_size) {
  if (environment.distributed()) group_ = std::make_unique<dist::Group>(environment, device, timeout);
}

Replicas::~Replicas() = default;

std::string Replicas::describe() const {
  if (!group_) return "1 process";
  return "rank " + std::to_string(rank_) + " of " + std::to_string(size_) + " (" + group_->backend() + ")";
}

std::string Replicas::share(const std::string& key, const std::string& value) {
  return group_ ? group_->share(key, value) : value;
}

std::vector<bool> Replicas::any(const std::vector<bool>& flags) {
  if (!group_) return flags;
  auto values = torch::zeros({static_cast<int64_t>(flags.size())}, torch::kFloat);
  for (size_t i = 0; i < flags.size(); ++i) values[static_cast<int64_t>(i)] = flags[i] ? 1.0f : 0.0f;
  std::vector<at::Tensor> tensors = {values};
  group_->all_reduce_max(tensors);
  std::vector<bool> agreed(flags.size());
  for (size_t i = 0; i < flags.size(); ++i) agreed[i] = values[static_cast<int64_t>(i)].item<float>() > 0.0f;
  return agreed;
}

double Replicas::sum(double value) {
  if (!group_) return value;
  std::vector<at::Tensor> tensors = {torch::full({1}, value, torch::kDouble)};
  group_->all_reduce_sum(tensors);
  return tensors[0].item<double>();
}

void Replicas::replicate(const std::vector<at::Tensor>& parameters) {
  if (!group_) return;
  {
    torch::NoGradGuard no_grad;
    std::vector<at::Tensor> flat;
    for (const auto& p : parameters) flat.push_back(p.detach().reshape(-1));
    std::vector<at::Tensor> all = {torch::cat(flat)};
    group_->broadcast(all);
    int64_t offset = 0;
    for (const auto& p : parameters) {
      p.detach().copy_(all[0].narrow(0, offset, p.numel()).view_as(p));
      offset += p.numel();
    }
  }
  sync_ = std::make_unique<dist::GradientSync>(*group_, parameters);
}

double Replicas::time_gradient_all_reduce() { return sync_ ? sync_->time_all_reduce() : 0.0; }

int64_t Replicas::gradient_bytes() const { return sync_ ? sync_->bytes() : 0; }

void Replicas::before_last_backward() {
  if (sync_) sync_->arm();
}

double Replicas::sum_gradients() { return sync_ ? sync_->finish() : 0.0; }

}  // namespace trafo::train
