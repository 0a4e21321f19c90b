#include "trafo/ops/fused_loss.h"

#include <algorithm>

#include <ATen/autocast_mode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/torch.h>

#include "trafo/ops/eligibility.h"

namespace trafo::ops {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr int64_t kChunkLogits = int64_t{1} << 22;  // 16 MB of fp32 logits a chunk

struct Projected {
  torch::Tensor smoothed, nll;                         // []
  torch::Tensor grad_hidden, grad_weight, grad_bias;  // d smoothed / d input, when asked
};

// Under CPU autocast the products run in its dtype (bf16), as at::linear's would, with the logits,
// the softmax and the gradient's accumulation in fp32; `hidden` may come in either dtype.
Projected project_chunks(const torch::Tensor& hidden, const torch::Tensor& weight, const torch::Tensor& bias,
                         const torch::Tensor& target, double epsilon, int64_t pad_id, int64_t chunk_rows,
                         bool gradients) {
  const int64_t n = hidden.size(0), vocab = weight.size(0);
  const int64_t rows = chunk_rows > 0 ? chunk_rows : std::max<int64_t>(1, kChunkLogits / vocab);
  const bool any_padding = target.eq(pad_id).any().item<bool>();
  const auto product_dtype =
      at::autocast::is_autocast_enabled(at::kCPU) ? at::autocast::get_autocast_dtype(at::kCPU) : torch::kFloat;
  const bool lower = product_dtype != torch::kFloat;
  // The casts below are this function's own: autocast would cast the products' inputs again a chunk.
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::DispatchKey::AutocastCPU);
  const auto h_all = hidden.to(product_dtype);  // no copy where hidden already is
  const auto w = weight.to(product_dtype);
  Projected out;
  out.smoothed = torch::zeros({}, hidden.options().dtype(torch::kFloat));
  out.nll = torch::zeros({}, hidden.options().dtype(torch::kFloat));
  if (gradients) {
    out.grad_hidden = torch::empty_like(hidden);
    out.grad_weight = torch::zeros_like(weight);
    if (bias.defined()) out.grad_bias = torch::zeros_like(bias);
  }
  const auto w_t = w.t();
  for (int64_t start = 0; start < n; start += rows) {
    const int64_t m = std::min(rows, n - start);
    const auto h = h_all.narrow(0, start, m);                    // [m,d]
    const auto t = target.narrow(0, start, m).unsqueeze(1);      // [m,1]
    auto logits = lower ? torch::mm(h, w_t).to(torch::kFloat)    // [m,V] fp32
                        : (bias.defined() ? torch::addmm(bias, h, w_t) : torch::mm(h, w_t));
    if (lower && bias.defined()) logits.add_(bias);
    auto log_probs = torch::_log_softmax(logits, 1, false);
    const auto sums = label_smoothed_sums(log_probs, t.squeeze(1), epsilon, pad_id);
    out.smoothed.add_(sums.smoothed);
    out.nll.add_(sums.nll);
    if (!gradients) continue;

    auto grad = log_probs.exp_().sub_(epsilon / static_cast<double>(vocab));  // [m,V], then − (1 − ε) at t
    grad.scatter_add_(1, t, torch::full({m, 1}, epsilon - 1.0, grad.options()));
    if (any_padding) grad.masked_fill_(t.eq(pad_id), 0.0);
    if (bias.defined()) out.grad_bias.add_(grad.sum(0));
    auto grad_hidden = out.grad_hidden.narrow(0, start, m);
    if (lower) {
      const auto g = grad.to(product_dtype);
      grad_hidden.copy_(torch::mm(g, w));
      out.grad_weight.add_(torch::mm(g.t(), h));
    } else {
      torch::mm_out(grad_hidden, grad, w);
      out.grad_weight.addmm_(grad.t(), h);
    }
  }
  return out;
}

// Custom functions take defined tensors only: without a bias, `bias` is an empty stand-in.
class ProjectedLoss : public torch::autograd::Function<ProjectedLoss> {
 public:
  static variable_list forward(AutogradContext* ctx, const torch::Tensor& hidden, const torch::Tensor& weight,
                               const torch::Tensor& bias, const torch::Tensor& target, double epsilon, int64_t pad_id,
                               int64_t chunk_rows) {
    const auto real_bias = bias.numel() > 0 ? bias : torch::Tensor();
    auto projected = project_chunks(hidden, weight, real_bias, target, epsilon, pad_id, chunk_rows, true);
    // Released once backward has used them (undefined where there is no bias).
    ctx->save_for_backward({projected.grad_hidden, projected.grad_weight, projected.grad_bias});
    ctx->mark_non_differentiable({projected.nll});
    return {projected.smoothed, projected.nll};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    TORCH_CHECK(!torch::GradMode::is_enabled(), "projected_loss has no second derivatives (create_graph)");
    const auto& upstream = grad_outputs[0];  // d loss / d smoothed, []
    const auto saved = ctx->get_saved_variables();
    auto scaled = [&](const torch::Tensor& grad) { return grad.defined() ? grad * upstream : torch::Tensor(); };
    return {scaled(saved[0]), scaled(saved[1]), scaled(saved[2]), torch::Tensor(), torch::Tensor(), torch::Tensor(),
            torch::Tensor()};
  }
};

}  // namespace

bool fused_loss_applies(const at::Tensor& weight) { return cpu_fast_path(Kernel::fused_loss, {weight}); }

FusedLossSums fused_loss(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& bias,
                         const at::Tensor& target, double epsilon, int64_t pad_id, int64_t chunk_rows) {
  note_run(Kernel::fused_loss, cpu_isa());
  const bool wants_gradient = torch::GradMode::is_enabled() &&
                              (hidden.requires_grad() || weight.requires_grad() ||
                               (bias.defined() && bias.requires_grad()));
  if (!wants_gradient) {
    auto projected = project_chunks(hidden, weight, bias, target, epsilon, pad_id, chunk_rows, false);
    return {projected.smoothed, projected.nll};
  }
  const auto bias_or_empty = bias.defined() ? bias : torch::empty({0}, weight.options());
  const auto sums = ProjectedLoss::apply(hidden, weight, bias_or_empty, target, epsilon, pad_id, chunk_rows);
  return {sums[0], sums[1]};
}

LossSums label_smoothed_sums(const at::Tensor& log_probs, const at::Tensor& target, double epsilon, int64_t pad_id) {
  const auto nll = -log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1);  // [B,T]
  const auto real = target.ne(pad_id);
  const auto nll_sum = nll.masked_fill(real.logical_not(), 0.0).sum();
  auto smoothed = nll_sum;
  if (epsilon > 0.0) {
    const auto uniform = -log_probs.mean(-1);  // [B,T]
    smoothed = (1.0 - epsilon) * nll_sum + epsilon * uniform.masked_fill(real.logical_not(), 0.0).sum();
  }
  return {smoothed, nll_sum, real.sum()};
}

}  // namespace trafo::ops
