// The attention weights of one teacher-forced pass: what word alignments (alignment.h) and the
// attention maps of reports (report/attention_maps.h) are read from.
#pragma once

#include <vector>

#include <torch/types.h>

#include "trafo/model/transformer.h"

namespace trafo::inference {

// The weights [B,h,Tq,Tk] of every attention module in model->attention_modules() order (encoder
// self-attention per layer, then per decoder layer self- then cross-attention) for one
// teacher-forced pass over src [B,S] (ids + eos, padded) and tgt_in [B,T] (bos + ids, padded).
// Masked keys (source padding, future target positions) get exactly 0.
std::vector<torch::Tensor> attention_weights(model::Transformer& model, const torch::Tensor& src,
                                             const torch::Tensor& tgt_in);

}  // namespace trafo::inference
