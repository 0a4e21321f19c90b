#include "trafo/report/attention_maps.h"

#include <cmath>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "trafo/errors.h"
#include "trafo/inference/attention_weights.h"

namespace trafo::report {
namespace {

void check_length(const std::vector<int>& ids, int64_t max_positions, const char* what) {
  if (static_cast<int64_t>(ids.size()) + 1 > max_positions) {
    throw InputError(std::string(what) + " has " + std::to_string(ids.size()) + " pieces; this model takes at most " +
                     std::to_string(max_positions - 1));
  }
}

torch::Tensor as_row(std::vector<int64_t> ids) {
  const auto length = static_cast<int64_t>(ids.size());
  return torch::tensor(ids, torch::kLong).view({1, length});  // [1,T]
}

nlohmann::json matrix(const torch::Tensor& weights) {  // [R,C] -> [[...]], 6 decimals
  const auto values = weights.accessor<float, 2>();
  nlohmann::json rows = nlohmann::json::array();
  for (int64_t r = 0; r < weights.size(0); ++r) {
    std::vector<double> row(static_cast<size_t>(weights.size(1)));
    for (int64_t c = 0; c < weights.size(1); ++c) row[c] = std::round(values[r][c] * 1e6) / 1e6;
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace

AttentionMaps extract_attention(model::Transformer& model, const data::Tokenizer& tokenizer,
                                const std::string& source, const std::optional<std::string>& target,
                                const decode::DecodeOptions& options) {
  const int64_t max_positions = model->config().max_positions;
  const std::vector<int> source_ids = tokenizer.encode(source);
  if (source_ids.empty()) throw InputError("--src is empty: there is nothing to attend to");
  check_length(source_ids, max_positions, "--src");

  AttentionMaps result;
  result.source = source;
  result.forced = target.has_value();
  std::vector<int> target_ids;
  if (target) {
    target_ids = tokenizer.encode_target(*target);
    check_length(target_ids, max_positions, "--tgt");
    result.target = *target;
  } else {
    decode::Translator translator(model, tokenizer, options);
    auto best = translator.translate({source}).front().front();
    target_ids = std::move(best.tokens);
    result.target = std::move(best.text);
  }

  std::vector<int64_t> src(source_ids.begin(), source_ids.end()), tgt_in{data::Tokenizer::kBos};
  src.push_back(data::Tokenizer::kEos);
  tgt_in.insert(tgt_in.end(), target_ids.begin(), target_ids.end());
  for (const int id : source_ids) result.source_pieces.push_back(tokenizer.piece(id));
  result.source_pieces.push_back(tokenizer.piece(data::Tokenizer::kEos));
  result.target_inputs.push_back(tokenizer.target_piece(data::Tokenizer::kBos));
  for (const int id : target_ids) {
    result.target_inputs.push_back(tokenizer.target_piece(id));
    result.target_outputs.push_back(tokenizer.target_piece(id));
  }
  result.target_outputs.push_back(tokenizer.target_piece(data::Tokenizer::kEos));

  const auto weights = inference::attention_weights(model, as_row(src), as_row(tgt_in));
  const auto encoder_layers = static_cast<int64_t>(model->encoder_layers->size());
  const auto decoder_layers = static_cast<int64_t>(model->decoder_layers->size());
  auto map = [&](const char* kind, int64_t layer, size_t module, const std::vector<std::string>& rows,
                 const std::vector<std::string>& columns) {
    result.maps.push_back({kind, layer, weights[module][0].contiguous(), rows, columns});  // [h,Tq,Tk]
  };
  for (int64_t l = 0; l < decoder_layers; ++l) {
    map("cross", l, encoder_layers + 2 * l + 1, result.target_outputs, result.source_pieces);
  }
  for (int64_t l = 0; l < encoder_layers; ++l) map("encoder", l, l, result.source_pieces, result.source_pieces);
  for (int64_t l = 0; l < decoder_layers; ++l) {
    map("decoder", l, encoder_layers + 2 * l, result.target_inputs, result.target_inputs);
  }
  return result;
}

nlohmann::json to_json(const AttentionMaps& maps) {
  nlohmann::json result = {{"source", maps.source},
                           {"target", maps.target},
                           {"forced", maps.forced},
                           {"source_pieces", maps.source_pieces},
                           {"target_inputs", maps.target_inputs},
                           {"target_outputs", maps.target_outputs},
                           {"maps", nlohmann::json::array()}};
  for (const auto& map : maps.maps) {
    nlohmann::json heads = nlohmann::json::array();
    for (int64_t h = 0; h < map.weights.size(0); ++h) heads.push_back(matrix(map.weights[h]));
    result["maps"].push_back({{"kind", map.kind},
                              {"layer", map.layer},
                              {"rows", map.rows},
                              {"columns", map.columns},
                              {"average", matrix(map.weights.mean(0))},
                              {"heads", std::move(heads)}});
  }
  return result;
}

}  // namespace trafo::report
