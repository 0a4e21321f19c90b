// The losses, in one place: the label-smoothed cross-entropy of training (its formula is
// ops::label_smoothed_sums, ops/fused_loss.h), one batch's training loss, and the plain token
// NLL of evaluation.
#pragma once

#include <cstdint>
#include <utility>

#include <ATen/core/Tensor.h>

#include "trafo/model/transformer.h"
#include "trafo/ops/fused_loss.h"

namespace trafo::model {

using ops::LossSums;
using ops::label_smoothed_sums;

// logits [B,T,V], target [B,T] -> the LossSums of log_softmax(logits) (fp32). No host sync.
LossSums label_smoothed_loss(const at::Tensor& logits, const at::Tensor& target, double epsilon, int64_t pad_id);

// src [B,S], tgt_in and tgt_out [B,T], on the model's device -> the LossSums of
// label_smoothed_loss(model(src, tgt_in), tgt_out, ...), through ops::projection_loss over the
// non-padding rows (its kernel choice: the fused projection and loss on the CPU, in bf16 products
// under bf16 autocast). Choosing those rows waits for the device; with `select_rows` false every row
// goes through, the padding masked in the sums: no host sync and the same shapes every call (CUDA).
LossSums batch_loss(Transformer& model, const at::Tensor& src, const at::Tensor& tgt_in, const at::Tensor& tgt_out,
                    double epsilon, bool select_rows = true);

// hidden [N,d], weight [V,d], bias [V] (or undefined), target [N] -> the LossSums of
// label_smoothed_loss(hidden·weightᵀ + bias, target, epsilon, pad_id), `chunk_rows` rows at a time
// (0: about 4M logits a chunk), through ops::fused_loss: when a gradient is wanted, each chunk's
// gradient is formed in the same pass and backward() only scales it by the upstream gradient of
// `smoothed`.
LossSums projected_loss(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& bias,
                        const at::Tensor& target, double epsilon, int64_t pad_id, int64_t chunk_rows = 0);

// Guided alignment (Garg et al. 2019; Marian's "ce" cost): the cross-entropy of a head's attention
// weights [B,T,S] against the normalised links [B,T,S] (each row a distribution over the source
// pieces, or zeros), summed over the rows: -Σ links · log(weights + 1e-6), fp32. No host sync.
at::Tensor guided_alignment_loss(const at::Tensor& weights, const at::Tensor& links);

// Sum of -log p(target) over non-padding positions and their count:
// logits [B,T,V], target [B,T] -> (sum [] fp32, count [] int64). No host sync.
std::pair<at::Tensor, at::Tensor> token_nll(const at::Tensor& logits, const at::Tensor& target, int64_t pad_id);

}  // namespace trafo::model
