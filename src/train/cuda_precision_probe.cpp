// --precision auto and --cuda-graphs auto on CUDA: the model's own training steps, timed (placement.h).
#include <chrono>

#include <ATen/Context.h>
#include <torch/torch.h>

#include "placement.h"
#include "trafo/model/transformer.h"
#include "trafo/special_ids.h"
#include "trafo/train/optimizer.h"
#include "trafo/train/train_step.h"
#include "trafo/util/device.h"

namespace trafo::train {
namespace {

constexpr int64_t kLength = 37;  // pieces per side of the probe's sentences: off the bucket ladder
constexpr int kUntimed = 3;      // covers a CUDA graph's capture (the second step of a shape)
constexpr int kTimed = 5;

// Sentences of kLength random pieces (none special), as many as the token budget holds.
data::Batch random_batch(const model::ModelConfig& config, int64_t batch_tokens) {
  const int64_t rows = std::max<int64_t>(1, batch_tokens / kLength);
  const auto ids = [&] { return torch::randint(kEosId + 1, config.vocab_size, {rows, kLength}, torch::kLong); };
  data::Batch batch;
  batch.source = ids();
  batch.target_input = ids();
  batch.target_output = ids();
  batch.target_tokens = batch.global_target_tokens = rows * kLength;
  batch.source_tokens = rows * kLength;
  return batch;
}

// Seconds of kTimed steps of a fresh model of `config` in one precision, with or without graphs.
double time_steps(const run_config::TrainConfig& c, const model::ModelConfig& config, const c10::Device& device,
                  const data::Batch& batch, bool bf16, bool graphs) {
  model::Transformer model(config);
  model->to(device);
  model->train();
  auto optimizer = make_optimizer(c.optimizer, model->parameters(), c.lr, c.adam_beta1, c.adam_beta2, c.adam_eps,
                                  c.weight_decay);
  StepOptions options{c.label_smoothing, c.clip_norm, bf16};
  options.cuda_graphs = graphs;
  TrainStep step(model, *optimizer, device, options);
  for (int i = 0; i < kUntimed; ++i) step.run({batch}, 0.0).applied();
  util::synchronize(device);
  const auto started = std::chrono::steady_clock::now();
  StepResult last;
  for (int i = 0; i < kTimed; ++i) last = step.run({batch}, 0.0);
  last.applied();
  util::synchronize(device);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
}

}  // namespace

double CudaStepTimer::seconds(bool bf16, bool graphs) {
  const auto key = std::make_pair(bf16, graphs);
  const auto found = seconds_.find(key);
  if (found != seconds_.end()) return found->second;
  // The run's own draws (weights, dropout, word dropout) must not depend on whether auto timed.
  auto cpu = at::globalContext().defaultGenerator(c10::Device(c10::kCPU));
  auto gpu = at::globalContext().defaultGenerator(device_);
  const auto cpu_state = cpu.get_state(), gpu_state = gpu.get_state();
  auto config = config_.model;
  config.vocab_size = config_.vocab.vocab_size;  // the tokenizer's may differ a little: a timing only
  const auto batch = random_batch(config, config_.batch_tokens);
  const double seconds = time_steps(config_, config, device_, batch, bf16, graphs && graphs_apply(config_));
  cpu.set_state(cpu_state);
  gpu.set_state(gpu_state);
  seconds_[key] = seconds;
  return seconds;
}

}  // namespace trafo::train
