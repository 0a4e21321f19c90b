#include "trafo/ops/fused_loss.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <ATen/autocast_mode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#if __has_include(<c10/cuda/CUDAStream.h>) && __has_include(<cuda_runtime_api.h>)
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#define TRAFO_CUDA_STREAMS 1
#endif
#include <torch/torch.h>

#include "cuda/kernels.h"
#include "isa.h"
#include "trafo/ops/eligibility.h"
#include "vectors.h"

namespace trafo::ops {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr int64_t kChunkLogits = int64_t{1} << 22;      // 16 MB of fp32 logits a chunk
constexpr int64_t kChunkLogitsCuda = int64_t{1} << 28;  // 512 MB of bf16 logits a chunk: few, full launches

#if defined(__x86_64__)

// Rows [begin, end) of logits [N, V]: each row's label-smoothed and plain NLL terms into
// smoothed[r] and nll[r] (0 for a padding target), and where `gradient`, the row replaced by its
// gradient softmax − ε/V − (1 − ε)·onehot(t) (zeros for padding). Three passes over a row that
// stays in L1/L2 (max and sum; e^(l − max); the gradient) stand in for log-softmax, gather, mean,
// exp, subtraction, scatter and masking over the whole chunk.
template <typename S>
TRAFO_INLINE_LOOP void loss_rows_loop(float* logits, const int64_t* target, int64_t vocab, float epsilon,
                                      int64_t pad_id, bool gradient, double* smoothed, double* nll, int64_t begin,
                                      int64_t end) {
  using V = typename S::V;
  constexpr int64_t lanes = S::kLanes;
  const int64_t whole = vocab / lanes * lanes;
  for (int64_t r = begin; r < end; ++r) {
    float* row = logits + r * vocab;
    const int64_t t = target[r];
    if (t == pad_id) {
      smoothed[r] = nll[r] = 0.0;
      if (gradient) std::fill(row, row + vocab, 0.0f);
      continue;
    }
    const float at_target = row[t];
    // 1. the largest logit, and the sum of all (the uniform term's mean)
    V top = S::set(-std::numeric_limits<float>::infinity()), total = S::zero();
    for (int64_t j = 0; j < whole; j += lanes) {
      const V l = S::load(row + j);
      top = S::max(top, l);
      total = S::add(total, l);
    }
    float largest = S::largest(top);
    double sum_logits = S::sum(total);
    for (int64_t j = whole; j < vocab; ++j) {
      largest = std::max(largest, row[j]);
      sum_logits += row[j];
    }
    // 2. Σ e^(l − max), each e kept in the row for the gradient
    V exp_total = S::zero();
    const V shift = S::set(largest);
    for (int64_t j = 0; j < whole; j += lanes) {
      const V e = exp_nonpositive<S>(S::sub(S::load(row + j), shift));
      if (gradient) S::store(row + j, e);
      exp_total = S::add(exp_total, e);
    }
    double sum_exp = S::sum(exp_total);
    for (int64_t j = whole; j < vocab; ++j) {
      const float e = std::exp(row[j] - largest);
      if (gradient) row[j] = e;
      sum_exp += e;
    }
    const double log_total = largest + std::log(sum_exp);  // log Σ e^l
    nll[r] = log_total - at_target;
    smoothed[r] = (1.0 - epsilon) * nll[r] + epsilon * (log_total - sum_logits / static_cast<double>(vocab));
    if (!gradient) continue;
    // 3. the gradient
    const auto inverse = static_cast<float>(1.0 / sum_exp);
    const float spread = epsilon / static_cast<float>(vocab);
    const V scale = S::set(inverse), uniform = S::set(spread);
    for (int64_t j = 0; j < whole; j += lanes) S::store(row + j, S::sub(S::mul(S::load(row + j), scale), uniform));
    for (int64_t j = whole; j < vocab; ++j) row[j] = row[j] * inverse - spread;
    row[t] -= 1.0f - epsilon;
  }
}

TRAFO_AVX2_FMA void loss_rows_avx2(float* logits, const int64_t* target, int64_t vocab, float epsilon, int64_t pad_id,
                                   bool gradient, double* smoothed, double* nll, int64_t begin, int64_t end) {
  loss_rows_loop<Avx2>(logits, target, vocab, epsilon, pad_id, gradient, smoothed, nll, begin, end);
}

TRAFO_AVX512 void loss_rows_avx512(float* logits, const int64_t* target, int64_t vocab, float epsilon,
                                   int64_t pad_id, bool gradient, double* smoothed, double* nll, int64_t begin,
                                   int64_t end) {
  loss_rows_loop<Avx512>(logits, target, vocab, epsilon, pad_id, gradient, smoothed, nll, begin, end);
}

// The chunk's smoothed and NLL sums through the row kernel of cpu_isa(), logits turned into their
// gradient in place where asked. Each row's terms are summed in one order whatever the threads.
std::pair<torch::Tensor, torch::Tensor> loss_rows(torch::Tensor& logits, const torch::Tensor& target, double epsilon,
                                                  int64_t pad_id, bool gradient) {
  const int64_t m = logits.size(0), vocab = logits.size(1);
  const auto targets = target.contiguous();
  auto terms = torch::empty({2, m}, logits.options().dtype(torch::kDouble));  // smoothed, nll
  float* data = logits.data_ptr<float>();
  const int64_t* t = targets.data_ptr<int64_t>();
  double* smoothed = terms.data_ptr<double>();
  const auto kernel = cpu_isa() == Isa::avx512 ? loss_rows_avx512 : loss_rows_avx2;
  at::parallel_for(0, m, 1, [&](int64_t begin, int64_t end) {
    kernel(data, t, vocab, static_cast<float>(epsilon), pad_id, gradient, smoothed, smoothed + m, begin, end);
  });
  const auto sums = terms.sum(1).to(torch::kFloat);  // [2]
  return {sums[0], sums[1]};
}

#endif

// The chunk's smoothed and NLL sums through trafo's CUDA kernel (ops/cuda/kernels.h), logits (fp32
// or bf16) turned into their gradient in place where asked. No host sync.
std::pair<torch::Tensor, torch::Tensor> cuda_loss_rows(torch::Tensor& logits, const torch::Tensor& target,
                                                       double epsilon, int64_t pad_id, bool gradient) {
  const int64_t m = logits.size(0), vocab = logits.size(1);
  TORCH_CHECK(logits.is_contiguous(), "cuda_loss_rows: the logits must be contiguous");
  const auto targets = target.to(torch::kLong).contiguous();
  auto terms = torch::empty({2, m}, logits.options().dtype(torch::kFloat));  // smoothed, nll
  const auto type = logits.scalar_type() == torch::kBFloat16 ? cuda::Logits::bf16 : cuda::Logits::f32;
#ifdef TRAFO_CUDA_STREAMS
  const c10::cuda::CUDAGuard on_its_gpu(logits.device());
  cuda::loss_rows(logits.data_ptr(), type, targets.data_ptr<int64_t>(), m, vocab, static_cast<float>(epsilon),
                  pad_id, gradient, terms.data_ptr<float>(), c10::cuda::getCurrentCUDAStream().stream());
#else
  throw std::logic_error("trafo was built without CUDA's headers: no CUDA loss kernel");
#endif
  const auto sums = terms.sum(1);  // [2]
  return {sums[0], sums[1]};
}

// Whether `weight`'s loss takes the CUDA kernel: it is on a GPU and its products run in fp32 or in
// bf16 autocast (the kernel's two logit types).
bool cuda_kernel_applies(const at::Tensor& weight) {
#ifdef TRAFO_CUDA_STREAMS
  if (!weight.is_cuda() || !cuda::built() || weight.scalar_type() != torch::kFloat) return false;
  return !at::autocast::is_autocast_enabled(at::kCUDA) ||
         at::autocast::get_autocast_dtype(at::kCUDA) == torch::kBFloat16;
#else
  (void)weight;
  return false;  // no CUDA headers: no stream to launch on
#endif
}

struct Projected {
  torch::Tensor smoothed, nll;                         // []
  torch::Tensor grad_hidden, grad_weight, grad_bias;  // d smoothed / d input, when asked
};

// A chunk's gradient of the logits `grad` [m,V] (fp32) through the projection: into the bias, the
// hidden rows [start, start + m) and the weight, the products in `product_dtype`.
void add_gradients(Projected& out, const torch::Tensor& grad, const torch::Tensor& h, const torch::Tensor& w,
                   bool with_bias, int64_t start, torch::ScalarType product_dtype) {
  if (with_bias) out.grad_bias.add_(grad.sum(0, /*keepdim=*/false, torch::kFloat));
  auto grad_hidden = out.grad_hidden.narrow(0, start, grad.size(0));
  if (product_dtype != torch::kFloat) {
    const auto g = grad.to(product_dtype);
    grad_hidden.copy_(torch::mm(g, w));
    out.grad_weight.add_(torch::mm(g.t(), h));
  } else {
    torch::mm_out(grad_hidden, grad, w);
    out.grad_weight.addmm_(grad.t(), h);
  }
}

// Under CPU autocast the products run in its dtype (bf16), as at::linear's would, with the logits,
// the softmax and the gradient's accumulation in fp32; `hidden` may come in either dtype. On CUDA
// (cuda_kernel_applies) the logits and their gradient stay in the products' dtype, as autocast's
// linear leaves the logits and casts their gradient, and the kernel's math is fp32.
Projected project_chunks(const torch::Tensor& hidden, const torch::Tensor& weight, const torch::Tensor& bias,
                         const torch::Tensor& target, double epsilon, int64_t pad_id, int64_t chunk_rows,
                         bool gradients) {
  const int64_t n = hidden.size(0), vocab = weight.size(0);
  const bool cuda_kernel = cuda_kernel_applies(weight);
  const int64_t rows =
      chunk_rows > 0 ? chunk_rows : std::max<int64_t>(1, (cuda_kernel ? kChunkLogitsCuda : kChunkLogits) / vocab);
#if defined(__x86_64__)
  const bool row_kernel = !weight.is_cuda() && cpu_isa() != Isa::none;  // else LibTorch's ops
#else
  const bool row_kernel = false;
#endif
  // only LibTorch's path masks padding rows afterwards; asking costs a host sync
  const bool any_padding = !row_kernel && !cuda_kernel && target.eq(pad_id).any().item<bool>();
  const auto device_type = weight.is_cuda() ? at::kCUDA : at::kCPU;
  const auto product_dtype = at::autocast::is_autocast_enabled(device_type)
                                 ? at::autocast::get_autocast_dtype(device_type)
                                 : torch::kFloat;
  const bool lower = product_dtype != torch::kFloat;
  // The casts below are this function's own: autocast would cast the products' inputs again a chunk.
  c10::impl::ExcludeDispatchKeyGuard no_autocast(weight.is_cuda() ? c10::DispatchKey::AutocastCUDA
                                                                   : c10::DispatchKey::AutocastCPU);
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
    if (cuda_kernel) {
      auto logits = bias.defined() ? torch::addmm(bias.to(product_dtype), h, w_t) : torch::mm(h, w_t);  // [m,V]
      const auto [smoothed, nll] = cuda_loss_rows(logits, target.narrow(0, start, m), epsilon, pad_id, gradients);
      out.smoothed.add_(smoothed);
      out.nll.add_(nll);
      if (gradients) add_gradients(out, logits, h, w, bias.defined(), start, product_dtype);
      continue;
    }
    auto logits = lower ? torch::mm(h, w_t).to(torch::kFloat)    // [m,V] fp32
                        : (bias.defined() ? torch::addmm(bias, h, w_t) : torch::mm(h, w_t));
    if (lower && bias.defined()) logits.add_(bias);
#if defined(__x86_64__)
    if (row_kernel) {
      logits = logits.contiguous();  // as mm left it: no copy
      const auto [smoothed, nll] = loss_rows(logits, target.narrow(0, start, m), epsilon, pad_id, gradients);
      out.smoothed.add_(smoothed);
      out.nll.add_(nll);
      if (gradients) add_gradients(out, logits, h, w, bias.defined(), start, product_dtype);
      continue;
    }
#endif
    auto log_probs = torch::_log_softmax(logits, 1, false);
    const auto sums = label_smoothed_sums(log_probs, t.squeeze(1), epsilon, pad_id);
    out.smoothed.add_(sums.smoothed);
    out.nll.add_(sums.nll);
    if (!gradients) continue;

    auto grad = log_probs.exp_().sub_(epsilon / static_cast<double>(vocab));  // [m,V], then − (1 − ε) at t
    grad.scatter_add_(1, t, torch::full({m, 1}, epsilon - 1.0, grad.options()));
    if (any_padding) grad.masked_fill_(t.eq(pad_id), 0.0);
    add_gradients(out, grad, h, w, bias.defined(), start, product_dtype);
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

bool fused_loss_applies(const at::Tensor& weight) {
  return cpu_fast_path(Kernel::fused_loss, {weight}) || cuda_kernel_applies(weight);
}

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
