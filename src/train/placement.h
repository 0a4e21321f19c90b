// Where this process trains: its threads (following the machine's load with --threads 0 alone), its
// device and training precision, and its replicas. Part of a train::Session; internal to train/.
#pragma once

#include <optional>

#include <c10/core/Device.h>

#include "trafo/dist/environment.h"
#include "trafo/run_config/options.h"
#include "trafo/runtime/precision.h"
#include "trafo/util/device.h"
#include "replicas.h"

namespace trafo::train {

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
  const runtime::Precision precision;   // --precision resolved for `device`
  Replicas replicas;
};

}  // namespace trafo::train
