#include "trafo/model/cast_weights.h"

#include <torch/torch.h>

#include "trafo/model/linear.h"

namespace trafo::model {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// params (fp32) -> each of them in `dtype`, as views of one tensor made by one cat and one cast; the
// gradients come back by one cat and one cast the other way, as views of one fp32 tensor.
class CastTogether : public torch::autograd::Function<CastTogether> {
 public:
  // params as a TensorList: autograd sees each as an input (a std::vector it would take for a constant).
  static variable_list forward(AutogradContext* ctx, at::TensorList params, c10::ScalarType dtype) {
    std::vector<at::Tensor> flat;
    flat.reserve(params.size());
    for (const auto& p : params) flat.push_back(p.reshape({-1}));
    const auto cast = at::cat(flat).to(dtype);
    ctx->save_for_backward(params.vec());  // for their shapes and dtype; they are leaves, so this keeps no memory
    ctx->set_materialize_grads(false);     // a layer the pass did not use keeps no gradient (below)
    ctx->saved_data["dtype"] = static_cast<int64_t>(dtype);
    return views_of(cast, params.vec());
  }

  // A weight the pass did not use (a layer LayerDrop skipped) gets no gradient, as under autocast's
  // own casts, so that the optimizer leaves it alone; the others come back in one cast.
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto params = ctx->get_saved_variables();
    const auto cast_dtype = static_cast<c10::ScalarType>(ctx->saved_data["dtype"].toInt());
    std::vector<at::Tensor> flat;
    flat.reserve(grads.size());
    for (size_t i = 0; i < grads.size(); ++i) {
      flat.push_back(grads[i].defined() ? grads[i].reshape({-1})
                                        : at::zeros({params[i].numel()}, params[i].options().dtype(cast_dtype)));
    }
    auto out = views_of(at::cat(flat).to(params.front().scalar_type()), params);
    for (size_t i = 0; i < grads.size(); ++i) {
      if (!grads[i].defined()) out[i] = at::Tensor();
    }
    out.emplace_back();  // none for dtype
    return out;
  }

 private:
  // Consecutive pieces of `flat`, shaped as `like`.
  static variable_list views_of(const at::Tensor& flat, const variable_list& like) {
    variable_list out;
    out.reserve(like.size() + 1);
    int64_t offset = 0;
    for (const auto& t : like) {
      out.push_back(flat.narrow(0, offset, t.numel()).view(t.sizes()));
      offset += t.numel();
    }
    return out;
  }
};

}  // namespace

CastWeights::CastWeights(torch::nn::Module& root, c10::ScalarType dtype, const at::Tensor& except) {
  std::vector<std::shared_ptr<torch::nn::Module>> modules = root.modules(/*include_self=*/false);
  variable_list params;
  for (const auto& module : modules) {
    auto linear = std::dynamic_pointer_cast<LinearImpl>(module);
    if (!linear || linear->weight.scalar_type() != torch::kFloat) continue;
    if (except.defined() && linear->weight.is_same(except)) continue;
    layers_.push_back(linear);
    params.push_back(linear->weight);
    params.push_back(linear->bias);
  }
  if (params.empty()) return;
  const auto cast = CastTogether::apply(at::TensorList(params), dtype);
  for (size_t i = 0; i < layers_.size(); ++i) {
    layers_[i]->cast_weight_ = cast[2 * i];
    layers_[i]->cast_bias_ = cast[2 * i + 1];
  }
}

CastWeights::~CastWeights() {
  for (const auto& layer : layers_) {
    layer->cast_weight_ = torch::Tensor();
    layer->cast_bias_ = torch::Tensor();
  }
}

}  // namespace trafo::model
