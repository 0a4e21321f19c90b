// --preset auto's second look (run_config::second_look): a choice timed by a short probe before the
// run is checked against the run's own pace, once, before its first checkpoint. Where the budget buys
// clearly more or fewer epochs than the probe said, the run starts again with the other preset
// (Trainer::run), in what remains of the same --max-time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace trafo::train {

struct SecondLook {
  std::string preset;  // the preset to start again with
  std::string why;     // one sentence for train.log and the start record
};

class PaceCheck {
 public:
  // Armed for a new run of one process whose preset auto chose from a timed --max-time budget
  // (`timed`), `chosen` being small-short or small-long; `first_save` is the first step that
  // validates or saves a checkpoint, or the last step (0: none), which the look must come before.
  // No look once half the budget is spent.
  PaceCheck(bool armed, std::string chosen, double max_time_s, int64_t first_save);

  // After each applied update: `step` updates done, `epochs` of the first corpus gone through (a
  // fraction), `elapsed_s` of the budget spent. The other preset, once, where the run's pace calls
  // for it; nullopt while it goes on as it is.
  std::optional<SecondLook> observe(int64_t step, double epochs, double elapsed_s);

 private:
  bool armed_;
  std::string chosen_;
  double max_time_s_;
  int64_t first_save_;
  int64_t start_step_ = -1;  // the measurement's start, after the warm-up steps
  double start_epochs_ = 0.0, start_s_ = 0.0;
};

}  // namespace trafo::train
