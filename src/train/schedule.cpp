#include "trafo/train/schedule.h"

#include <algorithm>
#include <cmath>

namespace trafo::train {

double inverse_sqrt_lr(int64_t step, double peak, int64_t warmup) {
  const double s = static_cast<double>(std::max<int64_t>(step, 1));
  if (warmup <= 0) return peak / std::sqrt(s);
  const double w = static_cast<double>(warmup);
  return peak * std::min(s / w, std::sqrt(w / s));
}

}  // namespace trafo::train
