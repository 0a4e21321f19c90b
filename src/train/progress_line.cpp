#include "trafo/train/progress_line.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <string>

#include <spdlog/spdlog.h>

namespace trafo::train {
using run_config::TrainConfig;
namespace {

std::string format_seconds(double seconds) {
  if (!(seconds < 3.6e9)) return "over 1,000,000h";  // NaN too; a cast past int64 would be undefined
  const auto total = static_cast<int64_t>(std::max(seconds, 0.0));
  const int64_t h = total / 3600, m = (total % 3600) / 60, s = total % 60;
  if (h > 0) return fmt::format("{}h{:02}m{:02}s", h, m, s);
  if (m > 0) return fmt::format("{}m{:02}s", m, s);
  return fmt::format("{}s", s);
}

}  // namespace

ProgressLine::ProgressLine(const TrainConfig& config, int64_t batches_per_epoch, double max_time_s)
    : max_steps_(config.stop.max_steps),
      max_epochs_(config.stop.max_epochs),
      batches_per_epoch_(batches_per_epoch * std::max<int64_t>(1, config.optim.accumulate)),
      max_time_s_(max_time_s),
      terminal_(::isatty(STDERR_FILENO) == 1) {}

double ProgressLine::fraction_done(int64_t step, int64_t epoch, double elapsed_s) const {
  double fraction = -1.0;
  if (max_steps_ > 0) fraction = std::max(fraction, static_cast<double>(step) / max_steps_);
  if (max_epochs_ > 0 && batches_per_epoch_ > 0) {
    (void)epoch;
    fraction = std::max(fraction, static_cast<double>(step) / (static_cast<double>(max_epochs_) * batches_per_epoch_));
  }
  if (max_time_s_ > 0) fraction = std::max(fraction, elapsed_s / max_time_s_);
  return std::min(fraction, 1.0);
}

void ProgressLine::print(int64_t step, int64_t epoch, double loss, double lr, double tokens_per_s,
                         double elapsed_s) const {
  const double done = fraction_done(step, epoch, elapsed_s);
  std::string eta;
  if (done > 0) eta = " | ETA " + format_seconds(elapsed_s * (1.0 - done) / done);
  std::string bar;
  if (terminal_ && done >= 0) {
    const int width = 20, filled = static_cast<int>(std::round(done * width));
    bar = " [" + std::string(filled, '#') + std::string(width - filled, '.') + "]";
  }
  spdlog::info("step {} | epoch {} | loss {:.4f} | lr {:.2e} | {:.0f} tgt tok/s | {}{}{}", step, epoch, loss, lr,
               tokens_per_s, format_seconds(elapsed_s), eta, bar);
}

}  // namespace trafo::train
