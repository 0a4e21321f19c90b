// Timed measurements for `trafo bench`: training steps, greedy decoding, the machine's matmul
// peak and the process's memory. Warm-up work first, then timed rounds; figures are medians
// over rounds (docs/design.md "Benchmark reference"). Progress goes to spdlog, never to stdout.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include "trafo/bench/synthetic.h"
#include "trafo/model/transformer.h"

namespace trafo::bench {

// Seconds per round and the work each round does; `per_s` is the median of work / seconds.
struct Rounds {
  std::vector<double> seconds;  // one per timed round
  double work = 0.0;            // per round: target tokens (or FLOPs)
  double per_s() const;         // median over rounds of work / seconds
};

double median(std::vector<double> values);

// One training step is train::TrainStep, the update `trafo train` runs (train_step.h): zero_grad,
// forward (under bf16 autocast when asked), label-smoothed loss, backward of loss / target tokens,
// gradient clipping, Adam step (skipped when the gradient is not finite).
struct TrainOptions {
  c10::Device device = c10::kCPU;  // where the model (moved there) and the batches run
  bool bf16 = false;               // autocast to bfloat16; master weights and loss stay fp32
  int64_t warmup_steps = 5;        // untimed steps first
  int64_t timed_steps = 30;        // steps per timed round, cycling through the batches
  int64_t rounds = 1;              // timed rounds (median reported)
  double lr = 1e-4;                // constant; Adam betas 0.9/0.98, eps 1e-9 as trafo train's defaults
  double label_smoothing = 0.1;
  double clip_norm = 1.0;          // 0: off
  bool cuda_graphs = false;        // on CUDA: each batch's shape bucket replayed as a CUDA graph
  std::string profile_path;        // not empty: after the timed rounds, 3 more steps under the profiler
                                   // (CPU ops, and CUDA kernels on CUDA), its Chrome trace written here
                                   // (bench/profile_summary.py reads it)
};

struct TrainMeasurement {
  Rounds tokens;                   // target tokens per round
  double model_flops = 0.0;        // per round (flops.h)
  double tokens_per_s() const { return tokens.per_s(); }
  double model_flops_per_s() const;  // median over rounds
  double step_ms() const;            // median round time / timed steps
  int64_t timed_steps = 0;
};

// Trains `model` (moved to options.device, in place, with a fresh Adam) on `batches` (cycled),
// timing each round. Every step reads its loss back, as the trainer does, so a round's clock
// stops after the device's work.
TrainMeasurement measure_training(model::Transformer& model, const std::vector<SyntheticBatch>& batches,
                                  const TrainOptions& options);

struct MemoryUsage {
  double rss_mb = 0.0;       // VmRSS now
  double peak_rss_mb = 0.0;  // VmHWM: the most resident memory so far
};
MemoryUsage memory_usage();  // from /proc/self/status; zeros where it cannot be read

// RSS after `steps` training steps of fp32 compared with RSS at step steps / 5 (docs/design.md "Flat
// memory": growth under 5% from step 200 to step 1,000).
struct MemoryTrend {
  int64_t early_step = 0;
  double early_rss_mb = 0.0;
  int64_t steps = 0;
  double end_rss_mb = 0.0;
  double growth_percent() const;
};
MemoryTrend measure_memory_trend(model::Transformer& model, const std::vector<SyntheticBatch>& batches, int64_t steps,
                                 const TrainOptions& options);

// Greedy decoding through decode::Translator in fp32, on `device` (the model is moved there). The eos row of the output embedding is set
// to zero first, so that a random model never picks eos before the length limit (1.5 × S + 10)
// and every run does the same work. Counts output pieces + eos.
struct DecodeBenchOptions {
  int64_t batch_tokens = 4096;     // source pieces per batch, sorted by length; 1: one sentence at a time
  bool use_cache = true;           // false: recompute the whole prefix every step
  int64_t rounds = 1;
  c10::Device device = c10::kCPU;
};
Rounds measure_greedy_decoding(model::Transformer& model, const std::vector<std::vector<int>>& sentences,
                               const DecodeBenchOptions& options);

// Best FLOP/s over repeated size × size matrix products (2 size³ FLOPs each) in `dtype`
// (float or bfloat16) on `device` (the CPU: its current threads): one warm-up, then at least 3
// timings and `min_seconds`. On CUDA a timing is 20 products between two synchronisations, as
// one product launches in less time than it runs.
double matmul_peak_flops(c10::ScalarType dtype, const c10::Device& device = c10::kCPU, int64_t size = 2048,
                         double min_seconds = 1.0);

}  // namespace trafo::bench
