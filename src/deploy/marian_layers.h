// How one layer's weights are named in trafo and in transformers' MarianMT (and Pegasus, which names
// its layers alike): the one table that export (huggingface.cpp) and import (marian_import.cpp) read,
// so that the two directions cannot drift apart. Internal to deploy/.
#pragma once

#include <string>
#include <vector>

namespace trafo::deploy {

struct LayerWeight {
  std::string trafo;                 // after the layer's prefix, e.g. "self_attention.qkv_proj"
  std::vector<std::string> marian;   // the same weights in MarianMT: several are concatenated, in
                                     // order, along the output in trafo's fused projection
  bool norm = false;                 // a LayerNorm (else a linear layer: .weight and .bias each)
  bool reads_stream = false;         // a linear layer that reads a residual stream (its layer's, or
                                     // the encoder's output); every fused projection does
};

// The weights of an encoder layer, or of a decoder layer (with its cross-attention).
inline std::vector<LayerWeight> layer_weights(bool decoder) {
  std::vector<LayerWeight> weights = {
      {"self_attention.qkv_proj", {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"}, false, true},
      {"self_attention.out_proj", {"self_attn.out_proj"}},
      {decoder ? "self_residual.norm" : "attention_residual.norm", {"self_attn_layer_norm"}, true},
      {"feed_forward.linear1", {"fc1"}, false, true},
      {"feed_forward.linear2", {"fc2"}},
      {"feed_forward_residual.norm", {"final_layer_norm"}, true},
  };
  if (decoder) {
    weights.push_back({"cross_attention.q_proj", {"encoder_attn.q_proj"}, false, true});
    weights.push_back({"cross_attention.kv_proj", {"encoder_attn.k_proj", "encoder_attn.v_proj"}, false, true});
    weights.push_back({"cross_attention.out_proj", {"encoder_attn.out_proj"}});
    weights.push_back({"cross_residual.norm", {"encoder_attn_layer_norm"}, true});
  }
  return weights;
}

}  // namespace trafo::deploy
