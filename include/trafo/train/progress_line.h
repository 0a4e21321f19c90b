// The progress line logged every --log-every steps: step, epoch, loss, learning rate,
// target tokens/s, elapsed and, when a limit is set, the time left. On a terminal the
// line also shows a bar of the way to the nearest limit.
#pragma once

#include <cstdint>

#include "trafo/run_config/options.h"

namespace trafo::train {

class ProgressLine {
 public:
  ProgressLine(const run_config::TrainConfig& config, int64_t batches_per_epoch, double max_time_s);
  void print(int64_t step, int64_t epoch, double loss, double lr, double tokens_per_s, double elapsed_s) const;

 private:
  // Share of the run done, by the limit that ends it first (negative: no limit).
  double fraction_done(int64_t step, int64_t epoch, double elapsed_s) const;
  int64_t max_steps_, max_epochs_, batches_per_epoch_;
  double max_time_s_;
  bool terminal_;
};

}  // namespace trafo::train
