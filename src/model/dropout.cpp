#include "trafo/model/dropout.h"

#include <torch/torch.h>

#include "trafo/ops/dispatch.h"

namespace trafo::model {

torch::Tensor DropoutImpl::forward(const torch::Tensor& x) { return ops::dropout(x, p_, is_training()); }

}  // namespace trafo::model
