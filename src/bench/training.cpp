// Timed training steps: train::TrainStep, the update `trafo train` runs, on synthetic batches.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>

#include <spdlog/spdlog.h>
#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/torch.h>

#include "trafo/bench/measure.h"
#include "trafo/errors.h"
#include "trafo/train/optimizer.h"
#include "trafo/train/train_step.h"
#include "trafo/util/device.h"

namespace trafo::bench {
namespace {

using Clock = std::chrono::steady_clock;

// One update per batch, with a fresh Adam at a constant learning rate.
class TrainingStep {
 public:
  TrainingStep(model::Transformer& model, const TrainOptions& options)
      : optimizer_(make_optimizer(model, options)),
        step_(model, *optimizer_, options.device, step_options(options)),
        lr_(options.lr) {
    model->train();
  }

  static train::StepOptions step_options(const TrainOptions& options) {
    train::StepOptions step;
    step.label_smoothing = options.label_smoothing;
    step.clip_norm = options.clip_norm;
    step.bf16 = options.bf16;
    step.cuda_graphs = options.cuda_graphs;
    return step;
  }

  // Moves `model` to the device first: the optimizer holds the parameters it will update.
  static std::unique_ptr<torch::optim::Optimizer> make_optimizer(model::Transformer& model,
                                                                 const TrainOptions& options) {
    model->to(options.device);
    return train::make_optimizer("adam", model->parameters(), options.lr, 0.9, 0.98, 1e-9, 0.0);
  }

  // Queues an update and reads the one before it, as the trainer does between log points.
  void run(const std::vector<data::Batch>& update) {
    auto result = step_.run(update, lr_);
    if (last_) last_->applied();
    last_ = std::move(result);
  }

  // The smoothed loss per target token of the last update (waits for it).
  double last_loss() const { return last_ ? last_->loss() / static_cast<double>(last_->target_tokens) : 0.0; }

 private:
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  train::TrainStep step_;
  double lr_;
  std::optional<train::StepResult> last_;
};

// Each synthetic batch as the one batch of an update.
std::vector<std::vector<data::Batch>> as_updates(const std::vector<SyntheticBatch>& batches) {
  std::vector<std::vector<data::Batch>> updates;
  for (const auto& synthetic : batches) updates.push_back({as_batch(synthetic)});
  return updates;
}

// `steps` more updates under LibTorch's profiler (every op with its self time, and on CUDA every
// kernel), the trace written as Chrome JSON to `path`.
void profile_steps(TrainingStep& step, const std::vector<std::vector<data::Batch>>& updates, int64_t steps,
                   const std::string& path, const c10::Device& device) {
  namespace profiler = torch::autograd::profiler;
  using torch::profiler::impl::ActivityType;
  std::set<ActivityType> activities{ActivityType::CPU};
  if (device.is_cuda()) activities.insert(ActivityType::CUDA);
  const torch::profiler::impl::ProfilerConfig config(torch::profiler::impl::ProfilerState::KINETO,
                                                    /*report_input_shapes=*/true);
  profiler::prepareProfiler(config, activities);
  profiler::enableProfiler(config, activities);
  for (int64_t i = 0; i < steps; ++i) step.run(updates[static_cast<size_t>(i) % updates.size()]);
  util::synchronize(device);
  profiler::disableProfiler()->save(path);
  if (!std::filesystem::is_regular_file(path)) throw RunError("cannot write the profile " + path);
  spdlog::info("bench: profile of {} training steps written to {}", steps, path);
}

void check(const std::vector<SyntheticBatch>& batches, const TrainOptions& options) {
  if (batches.empty()) throw InputError("the training benchmark needs at least one batch");
  if (options.timed_steps < 1 || options.rounds < 1 || options.warmup_steps < 0) {
    throw InputError("the training benchmark needs 1 or more timed steps and rounds, and 0 or more warm-up steps");
  }
}

}  // namespace

double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const size_t middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2.0;
}

double Rounds::per_s() const {
  std::vector<double> rates;
  for (const double s : seconds) rates.push_back(work / std::max(s, 1e-12));
  return median(rates);
}

double TrainMeasurement::model_flops_per_s() const {
  std::vector<double> rates;
  for (const double s : tokens.seconds) rates.push_back(model_flops / std::max(s, 1e-12));
  return median(rates);
}

double TrainMeasurement::step_ms() const { return 1000.0 * median(tokens.seconds) / static_cast<double>(timed_steps); }

TrainMeasurement measure_training(model::Transformer& model, const std::vector<SyntheticBatch>& batches,
                                  const TrainOptions& options) {
  check(batches, options);
  TrainingStep step(model, options);
  const auto updates = as_updates(batches);
  const auto n = static_cast<int64_t>(batches.size());
  for (int64_t i = 0; i < options.warmup_steps; ++i) step.run(updates[i % n]);

  TrainMeasurement result;
  result.timed_steps = options.timed_steps;
  for (int64_t i = 0; i < options.timed_steps; ++i) {
    const auto& batch = batches[i % n];
    result.tokens.work += static_cast<double>(batch.target_tokens);
    result.model_flops += training_flops(model->config(), batch.pairs);
  }
  for (int64_t round = 0; round < options.rounds; ++round) {
    const auto started = Clock::now();
    for (int64_t i = 0; i < options.timed_steps; ++i) step.run(updates[i % n]);
    const double loss = step.last_loss();
    util::synchronize(options.device);
    const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
    result.tokens.seconds.push_back(seconds);
    spdlog::info("bench: training {} round {}: {} steps in {:.2f} s, {:.0f} target tokens/s, loss {:.3f}",
                 options.bf16 ? "bf16" : "fp32", round + 1, options.timed_steps, seconds,
                 result.tokens.work / seconds, loss);
  }
  if (!options.profile_path.empty()) profile_steps(step, updates, 3, options.profile_path, options.device);
  return result;
}

double MemoryTrend::growth_percent() const {
  return early_rss_mb > 0.0 ? 100.0 * (end_rss_mb - early_rss_mb) / early_rss_mb : 0.0;
}

MemoryTrend measure_memory_trend(model::Transformer& model, const std::vector<SyntheticBatch>& batches, int64_t steps,
                                 const TrainOptions& options) {
  check(batches, options);
  TrainingStep step(model, options);
  const auto updates = as_updates(batches);
  MemoryTrend trend;
  trend.steps = steps;
  trend.early_step = std::max<int64_t>(1, steps / 5);
  const auto n = static_cast<int64_t>(batches.size());
  for (int64_t i = 1; i <= steps; ++i) {
    step.run(updates[(i - 1) % n]);
    if (i == trend.early_step) trend.early_rss_mb = memory_usage().rss_mb;
    if (i % 100 == 0) spdlog::info("bench: memory trend step {}/{}: RSS {:.1f} MB", i, steps, memory_usage().rss_mb);
  }
  trend.end_rss_mb = memory_usage().rss_mb;
  return trend;
}

}  // namespace trafo::bench
