#include "trafo/train/train_step.h"

#include <cmath>

#include <torch/torch.h>

#include "trafo/model/loss.h"
#include "trafo/special_ids.h"
#include "trafo/util/autocast.h"
#include "replicas.h"

namespace trafo::train {

TrainStep::TrainStep(model::Transformer& model, torch::optim::Optimizer& optimizer, const c10::Device& device,
                     const StepOptions& options, Replicas* replicas)
    : model_(model), optimizer_(optimizer), device_(device), options_(options), replicas_(replicas) {}

at::Tensor drop_words(const at::Tensor& ids, double p, const std::vector<int>& kept) {
  if (p <= 0.0 || ids.numel() == 0) return ids;
  auto special = ids.eq(kPadId) | ids.eq(kBosId) | ids.eq(kEosId);
  for (const int id : kept) special |= ids.eq(id);
  const auto dropped = torch::rand(ids.sizes()).lt(p) & special.logical_not();
  return ids.masked_fill(dropped, kUnkId);
}

StepResult TrainStep::run(const std::vector<data::Batch>& batches, double lr) {
  StepResult result;
  result.lr = lr;
  for (const auto& batch : batches) result.target_tokens += batch.global_target_tokens;
  const auto tokens = static_cast<double>(result.target_tokens);

  optimizer_.zero_grad(true);
  torch::Tensor loss_sum = torch::zeros({}, torch::TensorOptions().device(device_));
  for (size_t i = 0; i < batches.size(); ++i) {
    const auto& batch = batches[i];
    if (replicas_ != nullptr && i + 1 == batches.size()) replicas_->before_last_backward();
    if (batch.source.size(0) == 0) continue;
    torch::Tensor smoothed;
    {
      util::AutocastGuard autocast(options_.bf16, device_.type());
      smoothed = model::batch_loss(model_, drop_words(batch.source, options_.src_word_dropout, options_.kept).to(device_),
                                   drop_words(batch.target_input, options_.tgt_word_dropout, options_.kept).to(device_),
                                   batch.target_output.to(device_), options_.label_smoothing).smoothed;
    }
    (smoothed / tokens).backward();
    loss_sum += smoothed.detach();
  }
  if (replicas_ != nullptr) result.communication_s = replicas_->sum_gradients();
  // A huge limit instead of none: the norm is measured the same way with and without clipping.
  result.grad_norm =
      torch::nn::utils::clip_grad_norm_(model_->parameters(), options_.clip_norm > 0 ? options_.clip_norm : 1e30);
  result.applied = std::isfinite(result.grad_norm);
  if (!result.applied) {
    ++skipped_in_a_row_;
    ++skipped_total_;
    return result;
  }
  skipped_in_a_row_ = 0;
  for (auto& group : optimizer_.param_groups()) group.options().set_lr(lr);
  optimizer_.step();
  result.loss = loss_sum.item<double>();
  return result;
}

}  // namespace trafo::train
