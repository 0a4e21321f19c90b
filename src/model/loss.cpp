#include "trafo/model/loss.h"

#include <torch/torch.h>

#include "trafo/ops/dispatch.h"

namespace trafo::model {

LossSums label_smoothed_loss(const at::Tensor& logits, const at::Tensor& target, double epsilon, int64_t pad_id) {
  return label_smoothed_sums(torch::log_softmax(logits.to(torch::kFloat), -1), target, epsilon, pad_id);
}

LossSums projected_loss(const torch::Tensor& hidden, const torch::Tensor& weight, const torch::Tensor& bias,
                        const torch::Tensor& target, double epsilon, int64_t pad_id, int64_t chunk_rows) {
  const auto tokens = target.ne(pad_id).sum();
  const auto sums = ops::fused_loss(hidden, weight, bias, target, epsilon, pad_id, chunk_rows);
  return {sums.smoothed, sums.nll, tokens};
}

LossSums batch_loss(Transformer& model, const torch::Tensor& src, const torch::Tensor& tgt_in,
                    const torch::Tensor& tgt_out, double epsilon, bool select_rows) {
  const int64_t pad_id = model->config().pad_id;
  const auto hidden = model->decode(tgt_in, model->encode(src), model->source_mask(src));  // [B,T,d]
  const auto target = tgt_out.reshape({-1});                                                // [B*T]
  if (!select_rows) {
    return ops::projection_loss(hidden.reshape({-1, hidden.size(-1)}), model->output_weight(), model->output_bias(),
                                target, epsilon, pad_id);
  }
  const auto real = target.ne(pad_id).nonzero().squeeze(1);                                 // [N]
  return ops::projection_loss(hidden.reshape({-1, hidden.size(-1)}).index_select(0, real), model->output_weight(),
                              model->output_bias(), target.index_select(0, real), epsilon, pad_id);
}

torch::Tensor guided_alignment_loss(const torch::Tensor& weights, const torch::Tensor& links) {
  return -(links * (weights.to(torch::kFloat) + 1e-6).log()).sum();
}

std::pair<torch::Tensor, torch::Tensor> token_nll(const torch::Tensor& logits, const torch::Tensor& target,
                                                  int64_t pad_id) {
  auto log_probs = torch::log_softmax(logits.to(torch::kFloat), -1);           // [B,T,V]
  auto nll = -log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1);         // [B,T]
  auto real = target.ne(pad_id);
  return {nll.masked_fill(real.logical_not(), 0.0).sum(), real.sum()};
}

}  // namespace trafo::model
