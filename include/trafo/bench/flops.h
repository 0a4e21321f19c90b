// Model FLOPs of a training step, as docs/design.md "Model FLOPs and MFU" counts them: only the real
// (non-padding) tokens' matrix multiplications; padding work is waste, not FLOPs.
#pragma once

#include <cstdint>
#include <vector>

#include "trafo/model/config.h"

namespace trafo::bench {

// Real lengths of one sentence pair: source pieces + eos, target pieces + eos (= bos + pieces).
struct PairLengths {
  int64_t source = 0;
  int64_t target = 0;
};

// Weights of the matrix multiplications one token passes through in the forward pass (biases,
// embeddings lookups, norms not counted). With d = d_model, f = d_ff, V = vocabulary:
//   source token: encoder layers × (4d² + 2df)                 (QKV, output, FFN)
//               + decoder layers × 2d²                          (cross-attention K/V, once per source token)
//   target token: decoder layers × (4d² + 2d² + 2df) + dV       (self QKV+O, cross Q+O, FFN, output projection)
struct TokenWeights {
  double source = 0.0;
  double target = 0.0;
};
TokenWeights token_weights(const model::ModelConfig& config);

// FLOPs of one training step (forward + backward = 3 × forward) over one sentence pair:
//   6 × (S × weights.source + T × weights.target)
//   + 12 × d × (encoder layers × S² + decoder layers × (T² + T × S))   (attention scores and values)
double training_flops(const model::ModelConfig& config, const PairLengths& pair);

// The sum over a batch's pairs.
double training_flops(const model::ModelConfig& config, const std::vector<PairLengths>& pairs);

}  // namespace trafo::bench
