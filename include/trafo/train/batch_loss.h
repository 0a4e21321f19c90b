// The training loss of one batch: the output projection and the label-smoothed cross-entropy
// (schedule.h) over the real target positions only. On the CPU in fp32 the two are fused over
// chunks of rows, so the [B,T,V] logits and their gradient never exist at once.
#pragma once

#include <cstdint>

#include <ATen/core/Tensor.h>

#include "trafo/model/transformer.h"
#include "trafo/train/schedule.h"

namespace trafo::train {

// src [B,S], tgt_in and tgt_out [B,T], on the model's device -> the LossSums of
// label_smoothed_loss(model(src, tgt_in), tgt_out, ...). Under bf16 autocast or off the CPU it is
// that call; otherwise projected_loss over the non-padding rows.
LossSums batch_loss(model::Transformer& model, const at::Tensor& src, const at::Tensor& tgt_in,
                    const at::Tensor& tgt_out, double epsilon);

// hidden [N,d], weight [V,d], bias [V] (or undefined), target [N] -> the LossSums of
// label_smoothed_loss(hidden·weightᵀ + bias, target, epsilon, pad_id), `chunk_rows` rows at a time
// (0: about 4M logits a chunk). When a gradient is wanted, each chunk's gradient is formed in the
// same pass (softmax − (1 − ε)·onehot − ε/V, through the projection into hidden, weight and
// bias) and backward() only scales it by the upstream gradient of `smoothed`.
LossSums projected_loss(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& bias,
                        const at::Tensor& target, double epsilon, int64_t pad_id, int64_t chunk_rows = 0);

}  // namespace trafo::train
