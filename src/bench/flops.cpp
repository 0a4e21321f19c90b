#include "trafo/bench/flops.h"

namespace trafo::bench {

TokenWeights token_weights(const model::ModelConfig& c) {
  const auto d = static_cast<double>(c.d_model);
  const auto f = static_cast<double>(c.d_ff);
  const auto encoder = static_cast<double>(c.encoder_layers);
  const auto decoder = static_cast<double>(c.decoder_layers);
  TokenWeights w;
  w.source = encoder * (4 * d * d + 2 * d * f) + decoder * 2 * d * d;
  w.target = decoder * (6 * d * d + 2 * d * f) + d * static_cast<double>(c.vocab_size);
  return w;
}

double training_flops(const model::ModelConfig& c, const PairLengths& pair) {
  const auto w = token_weights(c);
  const auto s = static_cast<double>(pair.source);
  const auto t = static_cast<double>(pair.target);
  const auto d = static_cast<double>(c.d_model);
  const double weights = 6 * (s * w.source + t * w.target);
  const double attention = 12 * d * (static_cast<double>(c.encoder_layers) * s * s +
                                     static_cast<double>(c.decoder_layers) * (t * t + t * s));
  return weights + attention;
}

double training_flops(const model::ModelConfig& config, const std::vector<PairLengths>& pairs) {
  double total = 0.0;
  for (const auto& pair : pairs) total += training_flops(config, pair);
  return total;
}

}  // namespace trafo::bench
