// Where this process trains: its threads (following the machine's load with --threads 0 alone), its
// device and training precision, and its replicas. Part of a train::Session; internal to train/.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>

#include <c10/core/Device.h>

#include "trafo/dist/environment.h"
#include "trafo/model/config.h"
#include "trafo/train/batch_fit.h"
#include "trafo/run_config/options.h"
#include "trafo/runtime/precision.h"
#include "trafo/util/device.h"
#include "replicas.h"

namespace trafo::train {

// Training steps of `config`'s model on `device`, timed for the choices auto makes (on CUDA:
// --precision, --cuda-graphs; anywhere: --preset, by the built-in defaults' speed): a fresh model of its
// shape on a random batch of its token budget, sentences of 37 pieces (a length off the bucket ladder,
// so that CUDA graphs pay their usual padding), 3 untimed then 5 timed steps per variant on CUDA (1 and
// 2 on the CPU), each variant timed once. The random generators are left as they were.
class StepTimer {
 public:
  StepTimer(const run_config::TrainConfig& config, const c10::Device& device) : config_(config), device_(device) {}
  double seconds(bool bf16, bool graphs);  // of the timed steps
  double bf16_speedup(bool graphs) { return seconds(false, graphs) / seconds(true, graphs); }
  int64_t timed_tokens() const;            // the target tokens of the timed steps

 private:
  const run_config::TrainConfig& config_;
  c10::Device device_;
  std::map<std::pair<bool, bool>, double> seconds_;
};

// Target tokens per second of `config`'s training steps (the built-in defaults wherever the options
// leave them), in the precision the run will train in: what --preset auto weighs a --max-time budget
// by (run_config::DefaultsSpeed). 0 (untimed) for a run of several processes, where every rank would
// time its own. With the train_tokens_per_s test hook, that number, and nothing runs.
double defaults_tokens_per_s(const run_config::TrainConfig& config, const dist::Environment& environment);

// The device this process trains on: --device, and on CUDA under a launcher, its local rank's GPU.
c10::Device pick_device(const run_config::TrainConfig& config, const dist::Environment& environment);

// Whether CUDA graphs apply at all to `config` (one batch per update, no LayerDrop; one process is
// the caller's to add).
bool graphs_apply(const run_config::TrainConfig& config);

struct Placement {
  // Sets this process's threads (at::set_num_threads) and joins the replicas of `environment`.
  Placement(const run_config::TrainConfig& config, const dist::Environment& environment);
  Placement(const Placement&) = delete;
  Placement& operator=(const Placement&) = delete;

  bool main() const { return replicas.is_main(); }  // rank 0: logs, validates and saves

  std::optional<util::LoadMeter> load;  // with --threads 0 alone: the machine's load, followed
  double busy_at_start = 0.0;           // cores other processes kept busy at start (with `load`)
  int threads;                          // this process's, now (the training loop follows the load)
  const c10::Device device;
  StepTimer timer;                      // auto's timings on CUDA, taken when asked
  const runtime::Precision precision;   // --precision resolved for `device`
  Replicas replicas;
  bool cuda_graphs = false;             // --cuda-graphs resolved (false on the CPU)
  std::string cuda_graphs_reason;       // train.log's line on CUDA ("" on the CPU)
};

}  // namespace trafo::train
