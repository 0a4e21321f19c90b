// A tiny model for tests: d_model 16, 2 heads, 2+2 layers, d_ff 32, no dropout, 64 positions.
// It trains and decodes in milliseconds.
#pragma once

#include <cstdint>

#include "trafo/model/config.h"

namespace trafo::testing {

inline model::ModelConfig tiny_model_config(int64_t vocab_size) {
  model::ModelConfig c;
  c.vocab_size = vocab_size;
  c.d_model = 16;
  c.heads = 2;
  c.encoder_layers = 2;
  c.decoder_layers = 2;
  c.d_ff = 32;
  c.dropout = 0.0;
  c.max_positions = 64;
  return c;
}

}  // namespace trafo::testing
