#include "trafo/model/dropout.h"

#include <torch/torch.h>

#include "trafo/ops/hashed_dropout.h"

namespace trafo::model {

torch::Tensor dropout(const torch::Tensor& x, double p, bool training) {
  if (!training || p <= 0.0) return x;
  if (!ops::hashed_dropout_applies(x, p)) return at::dropout(x, p, training);
  return ops::hashed_dropout(x, p);
}

torch::Tensor DropoutImpl::forward(const torch::Tensor& x) { return model::dropout(x, p_, is_training()); }

}  // namespace trafo::model
