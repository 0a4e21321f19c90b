// Position encodings, one type each, chosen by ModelConfig::positions. A new one (learned, rotary)
// is a class here, a row in src/model/positions.cpp (its name, its weights, how CTranslate2 takes
// it) and, for one that acts inside attention rather than on the embeddings, an override of rotate().
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <torch/nn/module.h>

#include "trafo/model/config.h"

namespace trafo::model {

class PositionEncodingImpl : public torch::nn::Module {
 public:
  // x [B,T,d] of positions offset .. offset+T-1 -> x with the positions encoded: [B,T,d].
  virtual torch::Tensor embed(const torch::Tensor& x, int64_t offset) = 0;
  // x [B,1,d] of positions[b] per row (a long tensor [B]) -> x with the positions encoded.
  virtual torch::Tensor embed_rows(const torch::Tensor& x, const torch::Tensor& positions) = 0;
};

// PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(...), added to the embeddings (Vaswani et al.
// 3.5); a fixed buffer `table` [max_positions, d], not a parameter. `halves`: the same columns with
// the sines first, then the cosines, as MarianMT (Hugging Face) lays them out ("sinusoidal-halves");
// the two are one model up to a fixed permutation of the model dimension.
class SinusoidalPositionsImpl final : public PositionEncodingImpl {
 public:
  SinusoidalPositionsImpl(int64_t max_positions, int64_t d_model, bool halves);
  torch::Tensor embed(const torch::Tensor& x, int64_t offset) override;
  torch::Tensor embed_rows(const torch::Tensor& x, const torch::Tensor& positions) override;

 private:
  torch::Tensor table_;  // [max_positions, d]
};

// One row a kind of position encoding.
struct PositionKind {
  const char* name;  // ModelConfig::positions
  // The module, registered under "positions" in the Transformer.
  std::shared_ptr<PositionEncodingImpl> (*make)(const ModelConfig& config);
  // Its weights' names (under "positions.") and shapes.
  std::map<std::string, std::vector<int64_t>> (*weights)(const ModelConfig& config);
  // The weight CTranslate2 takes as its explicit position table; nullptr: no CTranslate2 form.
  const char* ctranslate2_table;
};

const std::vector<PositionKind>& position_kinds();
// The row of config.positions; trafo::InputError naming the kinds there are otherwise.
const PositionKind& position_kind(const std::string& name);

}  // namespace trafo::model
