// Attention weights of one sentence pair, taken from the plain attention path
// (docs/design.md "Attention") for `trafo attention`: pictures and JSON.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>
#include <torch/types.h>

#include "trafo/data/tokenizer.h"
#include "trafo/decode/translator.h"
#include "trafo/model/transformer.h"

namespace trafo::report {

struct AttentionMap {
  std::string kind;       // "encoder" (self), "decoder" (causal self) or "cross"
  int64_t layer = 0;      // 0-based
  torch::Tensor weights;  // [h, rows, columns], float on the CPU
  std::vector<std::string> rows;     // labels of the query positions
  std::vector<std::string> columns;  // labels of the key positions
};

// Labels: rows and columns of encoder self-attention are the source pieces + "</s>"; decoder
// self-attention runs over the decoder's inputs, "<s>" + target pieces; cross-attention rows are
// the pieces each decoder position predicts (target pieces + "</s>"), its columns the source's.
struct AttentionMaps {
  std::string source, target;  // the texts; `target` is the model's translation unless forced
  bool forced = false;         // the target was given (--tgt) rather than translated
  std::vector<std::string> source_pieces;  // source pieces + "</s>"
  std::vector<std::string> target_inputs;  // "<s>" + target pieces
  std::vector<std::string> target_outputs; // target pieces + "</s>"
  std::vector<AttentionMap> maps;          // cross-attention per layer, then encoder, then decoder
};

// Translates `source` (or force-decodes `target` when given) and takes its attention weights.
// Throws trafo::InputError when a text has more pieces than the model's positions allow.
AttentionMaps extract_attention(model::Transformer& model, const data::Tokenizer& tokenizer,
                                const std::string& source, const std::optional<std::string>& target,
                                const decode::DecodeOptions& options);

// {"source", "target", "forced", "source_pieces", "target_inputs", "target_outputs",
//  "maps": [{"kind", "layer", "rows", "columns", "average": [[...]], "heads": [[[...]]]}]}
nlohmann::json to_json(const AttentionMaps& maps);

}  // namespace trafo::report
