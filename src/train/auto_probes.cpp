// What auto decides from training steps of the run's model shape (placement.h): on CUDA --precision
// and --cuda-graphs, timed, and --batch-tokens, fitted to the memory; anywhere --preset, by the
// built-in defaults' speed.
#include <chrono>

#include <ATen/Context.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#if __has_include(<c10/cuda/CUDACachingAllocator.h>) && __has_include(<cuda_runtime_api.h>)
#define TRAFO_CUDA_ALLOCATOR 1
#include <c10/cuda/CUDACachingAllocator.h>
#endif

#include "generators_kept.h"
#include "placement.h"
#include "trafo/model/transformer.h"
#include "trafo/special_ids.h"
#include "trafo/test_hooks.h"
#include "trafo/train/optimizer.h"
#include "trafo/train/train_step.h"
#include "trafo/runtime/precision.h"
#include "trafo/util/device.h"

namespace trafo::train {
namespace {

constexpr int64_t kLength = 37;  // pieces per side of the probe's sentences: off the bucket ladder
constexpr int kCudaUntimed = 3;  // covers a CUDA graph's capture (the second step of a shape)
constexpr int kCudaTimed = 5;
constexpr int kCpuUntimed = 1;   // a CPU step takes 10-100x as long, and captures nothing
constexpr int kCpuTimed = 2;

int untimed_steps(const c10::Device& device) { return device.is_cuda() ? kCudaUntimed : kCpuUntimed; }
int timed_steps(const c10::Device& device) { return device.is_cuda() ? kCudaTimed : kCpuTimed; }

// Sentences of `length` pieces that a budget of `batch_tokens` holds (at least one).
int64_t rows_of(int64_t batch_tokens, int64_t length) { return std::max<int64_t>(1, batch_tokens / length); }

// Sentences of `length` random pieces (none special), as many as the token budget holds.
data::Batch random_batch(const model::ModelConfig& config, int64_t batch_tokens, int64_t length = kLength) {
  const int64_t rows = rows_of(batch_tokens, length);
  const auto ids = [&] { return torch::randint(kEosId + 1, config.vocab_size, {rows, length}, torch::kLong); };
  data::Batch batch;
  batch.source = ids();
  batch.target_input = ids();
  batch.target_output = ids();
  batch.target_tokens = batch.global_target_tokens = rows * length;
  batch.source_tokens = rows * length;
  return batch;
}

void release_cached_memory() {
#ifdef TRAFO_CUDA_ALLOCATOR
  c10::cuda::CUDACachingAllocator::emptyCache();
#endif
}

// Seconds of timed_steps steps of a fresh model of `config` in one precision, with or without graphs,
// with the optimizer and loss of the optimisation group `optim`.
double time_steps(const run_config::OptimOptions& optim, const model::ModelConfig& config, const c10::Device& device,
                  const data::Batch& batch, bool bf16, bool graphs) {
  model::Transformer model(config);
  model->to(device);
  model->train();
  auto optimizer = make_optimizer(optim.optimizer, model->parameters(), optim.lr, optim.adam_beta1, optim.adam_beta2,
                                  optim.adam_eps, optim.weight_decay);
  StepOptions options{optim.label_smoothing, optim.clip_norm, bf16};
  options.cuda_graphs = graphs;
  TrainStep step(model, *optimizer, device, options);
  for (int i = 0; i < untimed_steps(device); ++i) step.run({batch}, 0.0).applied();
  util::synchronize(device);
  const auto started = std::chrono::steady_clock::now();
  StepResult last;
  for (int i = 0; i < timed_steps(device); ++i) last = step.run({batch}, 0.0);
  last.applied();
  util::synchronize(device);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
}

model::ModelConfig timed_model(const run_config::TrainConfig& c) {
  auto config = c.model;
  config.vocab_size = c.vocab.vocab_size;  // the tokenizer's may differ a little: a timing only
  return config;
}

int64_t timed_budget(const run_config::TrainConfig& c) {
  return c.optim.batch_tokens > 0 ? c.optim.batch_tokens : kDefaultBatchTokens;
}

}  // namespace

double StepTimer::seconds(bool bf16, bool graphs) {
  const auto key = std::make_pair(bf16, graphs);
  const auto found = seconds_.find(key);
  if (found != seconds_.end()) return found->second;
  const GeneratorsKept kept(device_);
  const auto model = timed_model(config_);
  const double seconds = time_steps(config_.optim, model, device_, random_batch(model, timed_budget(config_)), bf16,
                                    graphs && device_.is_cuda() && graphs_apply(config_));
  seconds_[key] = seconds;
  return seconds;
}

int64_t StepTimer::timed_tokens() const {
  return rows_of(timed_budget(config_), kLength) * kLength * timed_steps(device_);
}

double defaults_tokens_per_s(const run_config::TrainConfig& c, const dist::Environment& environment) {
  if (const auto posed = test_hooks().train_tokens_per_s) return *posed;
  if (environment.distributed() || environment.local_world_size > 1) return 0.0;
  const auto device = pick_device(c, environment);
  at::set_num_threads(util::resolve_threads(c.machine.threads));  // Placement sets the run's own after
  StepTimer timer(c, device);
  const bool graphs = c.machine.cuda_graphs != "off";  // as the run will train
  try {
    const auto precision = runtime::pick_precision(c.machine.precision, device, "training",
                                                   [&] { return timer.bf16_speedup(graphs); }, /*quiet=*/true);
    return static_cast<double>(timer.timed_tokens()) / std::max(timer.seconds(precision.bf16, graphs), 1e-9);
  } catch (const c10::Error& e) {  // out of memory, most likely: the run itself will say so, or fit its batch
    const std::string why = e.what_without_backtrace();
    spdlog::warn("--preset auto could not time the built-in defaults' training steps, and goes by the clock: {}",
                 why.substr(0, why.find('\n')));
    release_cached_memory();
    return 0.0;
  }
}

FittedBudget fit_batch_tokens(const run_config::OptimOptions& optim, const model::ModelConfig& config,
                              const c10::Device& device, bool bf16, const CorpusExtent& extent) {
  const int64_t length = std::max<int64_t>(extent.longest, 8);
  std::function<bool(int64_t)> fits;
  std::optional<GeneratorsKept> kept;
  model::Transformer model{nullptr};
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  std::unique_ptr<TrainStep> step;
  if (const int64_t posed = test_hooks().fit_tokens; posed >= 0) {
    fits = [posed](int64_t budget) { return static_cast<double>(budget) * kFitHeadroom <= static_cast<double>(posed); };
  } else {
    // One fresh model of the run's shape, its optimizer state made by the first step that fits.
    kept.emplace(device);
    model = model::Transformer(config);
    model->to(device);
    model->train();
    optimizer = make_optimizer(optim.optimizer, model->parameters(), optim.lr, optim.adam_beta1, optim.adam_beta2,
                               optim.adam_eps, optim.weight_decay);
    StepOptions step_options;
    step_options.label_smoothing = optim.label_smoothing;
    step_options.clip_norm = optim.clip_norm;
    step_options.bf16 = bf16;
    step = std::make_unique<TrainStep>(model, *optimizer, device, step_options);
    fits = [&](int64_t budget) {
      try {
        step->run({random_batch(config, static_cast<int64_t>(static_cast<double>(budget) * kFitHeadroom), length)}, 0.0)
            .applied();
        util::synchronize(device);
        return true;
      } catch (const c10::OutOfMemoryError&) {
        release_cached_memory();
        return false;
      }
    };
  }
  bool any = false;
  const int64_t ceiling = fit_ceiling(extent);
  const int64_t tokens = largest_fitting(kFitStep, ceiling, kFitStep, [&](int64_t budget) {
    const bool fit = fits(budget);
    any |= fit;
    return fit;
  });
  step.reset();
  optimizer.reset();
  model = model::Transformer{nullptr};
  release_cached_memory();  // the run's own model takes what the probe held
  if (!any) {
    return {tokens, fmt::format("--batch-tokens auto: {} tokens, though a {} training step on sentences of {} pieces "
                                "did not fit the GPU's memory even at this budget; give a smaller --batch-tokens",
                                tokens, bf16 ? "bf16" : "fp32", length)};
  }
  return {tokens, fmt::format("--batch-tokens auto: {} tokens, the largest multiple of {} up to {} whose {} training "
                              "step on sentences of {} pieces (the corpus's longest) fits the GPU's memory {}x over",
                              tokens, kFitStep, ceiling, bf16 ? "bf16" : "fp32", length, kFitHeadroom)};
}

}  // namespace trafo::train
