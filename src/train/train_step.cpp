#include "trafo/train/train_step.h"

#include <optional>

#include <c10/core/Event.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/torch.h>

#include "trafo/model/cast_weights.h"
#include "trafo/model/loss.h"
#include "trafo/special_ids.h"
#include "trafo/train/optimizer.h"
#include "trafo/train/shape_buckets.h"
#include "trafo/train/step_graphs.h"
#include "trafo/util/autocast.h"
#include "replicas.h"

namespace trafo::train {

DeviceValues::DeviceValues(const at::Tensor& values) {
  if (!values.is_cuda()) {
    host_ = values.to(torch::kDouble).contiguous();
    return;
  }
  // A non-blocking copy to the CPU lands in pinned memory; the event says when it has.
  host_ = values.to(torch::kCPU, /*non_blocking=*/true);
  const c10::impl::VirtualGuardImpl guard(values.device().type());
  copied_ = std::make_shared<c10::Event>(values.device().type());
  copied_->record(guard.getStream(values.device()));
}

bool DeviceValues::ready() const { return read_ || copied_ == nullptr || copied_->query(); }

const std::vector<double>& DeviceValues::read() const {
  if (read_ || !host_.defined()) return values_;
  if (copied_ != nullptr) copied_->synchronize();
  const auto values = host_.to(torch::kDouble).contiguous();
  values_.assign(values.data_ptr<double>(), values.data_ptr<double>() + values.numel());
  read_ = true;
  return values_;
}

TrainStep::TrainStep(model::Transformer& model, torch::optim::Optimizer& optimizer, const c10::Device& device,
                     const StepOptions& options, Replicas* replicas)
    : model_(model), optimizer_(optimizer), device_(device), options_(options), replicas_(replicas) {
  for (const auto& group : optimizer_.param_groups()) {
    for (const auto& p : group.params()) parameters_.push_back(p);
  }
  if (replicas_ != nullptr && replicas_->size() == 1) replicas_ = nullptr;  // nothing to sum over
  if (options_.guided_alignment_weight > 0) model_->set_guided_layer(model_->config().alignment_layer);
  if (options_.cuda_graphs && device_.is_cuda() && replicas_ == nullptr && StepGraphs::built()) {
    graphs_ = std::make_unique<StepGraphs>(device_);
  }
}

TrainStep::~TrainStep() = default;

at::Tensor drop_words(const at::Tensor& ids, double p, const std::vector<int>& kept) {
  if (p <= 0.0 || ids.numel() == 0) return ids;
  auto special = ids.eq(kPadId) | ids.eq(kBosId) | ids.eq(kEosId);
  for (const int id : kept) special |= ids.eq(id);
  const auto dropped = torch::rand(ids.sizes()).lt(p) & special.logical_not();
  return ids.masked_fill(dropped, kUnkId);
}

// On CUDA through pinned memory, so that the copy is queued and the host goes on.
at::Tensor TrainStep::to_device(const at::Tensor& ids) const {
  if (!device_.is_cuda()) return ids.to(device_);
  return ids.pin_memory().to(device_, /*non_blocking=*/true);
}

at::Tensor TrainStep::device_alignment(const data::Batch& batch) const {
  return batch.alignment.defined() && options_.guided_alignment_weight > 0 ? to_device(batch.alignment) : at::Tensor();
}

at::Tensor TrainStep::forward_backward(const at::Tensor& source, const at::Tensor& target_input,
                                       const at::Tensor& target_output, const at::Tensor& scale,
                                       const at::Tensor& alignment) {
  torch::Tensor smoothed, objective;
  {
    util::AutocastGuard autocast(options_.bf16, device_.type());
    // On CUDA the Linear layers' bf16 weights come from one cast of them all, and their gradients
    // go back in one (model/cast_weights.h): about 400 kernels fewer a step.
    std::optional<model::CastWeights> cast;
    if (options_.bf16 && device_.is_cuda()) cast.emplace(*model_, torch::kBFloat16, model_->output_weight());
    // On CUDA every row goes through (padding masked): choosing rows would wait for the device.
    smoothed = model::batch_loss(model_, source, target_input, target_output, options_.label_smoothing,
                                 /*select_rows=*/!device_.is_cuda())
                   .smoothed;
  }
  objective = smoothed;
  const auto head = model_->take_guided_weights();
  if (head.defined() && alignment.defined() && options_.guided_alignment_weight > 0) {
    objective = smoothed + options_.guided_alignment_weight * model::guided_alignment_loss(head, alignment);
  }
  (objective / scale).backward();
  return smoothed.detach();
}

at::Tensor TrainStep::finish(const at::Tensor& loss_sum, const at::Tensor& lr) {
  torch::NoGradGuard no_grad;
  std::vector<at::Tensor> grads;
  for (const auto& p : parameters_) {
    if (p.grad().defined()) grads.push_back(p.grad());
  }
  // The norm of all gradients, as clip_grad_norm_ measures it, left on the device.
  const auto norm = grads.empty() ? torch::zeros_like(loss_sum) : at::stack(at::_foreach_norm(grads, 2)).norm(2);
  const auto skip = norm.isfinite().logical_not().to(torch::kFloat);
  if (options_.clip_norm > 0 && !grads.empty()) {
    at::_foreach_mul_(grads, (options_.clip_norm / (norm + 1e-6)).clamp_max(1.0));
  }
  if (auto* skippable = dynamic_cast<SkippableStep*>(&optimizer_)) {
    skippable->step_unless(skip, lr);
  } else if (skip.item<double>() == 0.0) {  // an optimizer of another kind: the host decides
    optimizer_.step();
  }
  const auto applied = skip.eq(0);
  return at::stack({applied.to(torch::kFloat), at::where(applied, loss_sum, at::zeros_like(loss_sum)), norm});
}

at::Tensor TrainStep::whole_update(const StepInputs& inputs) {
  optimizer_.zero_grad(true);
  const auto loss_sum = forward_backward(inputs.source, inputs.target_input, inputs.target_output, inputs.tokens);
  return finish(loss_sum, inputs.lr);
}

StepResult TrainStep::run(const std::vector<data::Batch>& batches, double lr) {
  StepResult result;
  result.lr = lr;
  for (const auto& batch : batches) result.target_tokens += batch.global_target_tokens;
  const auto tokens = static_cast<double>(result.target_tokens);
  for (auto& group : optimizer_.param_groups()) group.options().set_lr(lr);

  // One batch, one process: the whole update at once, padded to its bucket (and replayed on CUDA).
  const bool single = batches.size() == 1 && replicas_ == nullptr && batches.front().source.size(0) > 0;
  if (single && (graphs_ || options_.pad_to_buckets)) {
    auto batch = batches.front();
    batch.source = drop_words(batch.source, options_.src_word_dropout, options_.kept);
    batch.target_input = drop_words(batch.target_input, options_.tgt_word_dropout, options_.kept);
    batch = padded_to(batch, bucket_of(shape_of(batch)));
    if (graphs_) {
      result.figures = graphs_->run(batch, tokens, lr, [this](const StepInputs& in) { return whole_update(in); });
      return result;
    }
    optimizer_.zero_grad(true);
    const auto scale = torch::full({}, tokens, torch::TensorOptions().dtype(torch::kFloat).device(device_));
    const auto loss_sum = forward_backward(to_device(batch.source), to_device(batch.target_input),
                                           to_device(batch.target_output), scale, device_alignment(batch));
    result.figures = DeviceValues(finish(loss_sum, {}));
    return result;
  }

  optimizer_.zero_grad(true);
  const auto on_device = torch::TensorOptions().device(device_).dtype(torch::kFloat);
  const auto scale = torch::full({}, tokens, on_device);
  torch::Tensor loss_sum = torch::zeros({}, on_device);
  for (size_t i = 0; i < batches.size(); ++i) {
    const auto& batch = batches[i];
    if (replicas_ != nullptr && i + 1 == batches.size()) replicas_->before_last_backward();
    if (batch.source.size(0) == 0) continue;
    loss_sum += forward_backward(to_device(drop_words(batch.source, options_.src_word_dropout, options_.kept)),
                                 to_device(drop_words(batch.target_input, options_.tgt_word_dropout, options_.kept)),
                                 to_device(batch.target_output), scale, device_alignment(batch));
  }
  if (replicas_ != nullptr) result.communication_s = replicas_->sum_gradients();
  result.figures = DeviceValues(finish(loss_sum, {}));
  return result;
}

}  // namespace trafo::train
