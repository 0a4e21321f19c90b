// The learning-rate schedule (the loss is model/loss.h).
#pragma once

#include <cstdint>

namespace trafo::train {

// Linear warmup to `peak` over `warmup` steps, then inverse-square-root decay:
// lr(s) = peak × min(s / warmup, sqrt(warmup / s)) for the 1-based step s.
double inverse_sqrt_lr(int64_t step, double peak, int64_t warmup);

}  // namespace trafo::train
