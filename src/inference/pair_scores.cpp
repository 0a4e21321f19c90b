#include "trafo/inference/pair_scores.h"

#include <torch/torch.h>

#include <limits>

#include "trafo/data/batcher.h"
#include "trafo/data/corpus.h"
#include "trafo/model/config.h"
#include "trafo/util/autocast.h"

namespace trafo::inference {

std::vector<PairScore> score_pairs(model::Transformer& model, const data::Tokenizer& tokenizer,
                                   const std::vector<std::string>& sources, const std::vector<std::string>& targets,
                                   const PairScoreOptions& options) {
  std::vector<std::vector<int>> source_ids;
  source_ids.reserve(sources.size());
  for (const auto& text : sources) {
    auto source = tokenizer.encode(text);
    if (options.tag >= 0) source.insert(source.begin(), options.tag);
    source_ids.push_back(std::move(source));
  }
  return score_pairs(model, tokenizer, source_ids, targets, options);
}

std::vector<PairScore> score_pairs(model::Transformer& model, const data::Tokenizer& tokenizer,
                                   const std::vector<std::vector<int>>& source_ids,
                                   const std::vector<std::string>& targets, const PairScoreOptions& options) {
  const int64_t positions = model->config().max_positions;
  std::vector<PairScore> scores(source_ids.size());
  for (auto& score : scores) score.log_prob = std::numeric_limits<double>::quiet_NaN();
  // The pairs that fit, as a corpus whose line numbers are their indices + 1.
  data::Corpus pairs;
  for (size_t i = 0; i < source_ids.size(); ++i) {
    const auto& source = source_ids[i];
    const auto target = tokenizer.encode_target(targets[i]);
    if (static_cast<int64_t>(source.size()) + 1 > positions || static_cast<int64_t>(target.size()) + 1 > positions) {
      continue;
    }
    pairs.add(source, target, static_cast<int64_t>(i) + 1);
  }
  const model::EvalMode eval_mode(model);
  c10::InferenceMode inference;
  const auto device = model->parameters().front().device();
  const util::AutocastGuard autocast(options.bf16, device.type());
  data::BatcherOptions batches;
  batches.batch_tokens = std::max(options.batch_tokens, positions);
  batches.shuffle = false;
  for (const auto& rows : data::plan_epoch(pairs, batches, 0)) {
    const auto batch = data::make_batch(pairs, rows);
    const auto target = batch.target_output.to(device);
    const auto logits = model(batch.source.to(device), batch.target_input.to(device));  // [B,T,V]
    const auto log_probs =
        torch::log_softmax(logits.to(torch::kFloat), -1).gather(-1, target.unsqueeze(-1)).squeeze(-1);
    const auto real = target.ne(model->config().pad_id);
    const auto kept = log_probs.masked_fill(real.logical_not(), 0.0).to(torch::kDouble);  // [B,T]
    const auto sums = kept.sum(1).cpu();
    const auto per_piece = options.per_piece ? kept.cpu() : sums;
    const auto sum_of = sums.accessor<double, 1>();
    for (size_t r = 0; r < rows.size(); ++r) {
      auto& score = scores[static_cast<size_t>(pairs.line_number(rows[r]) - 1)];
      score.pieces = pairs.target_length(rows[r]) + 1;
      score.log_prob = sum_of[static_cast<int64_t>(r)];
      if (options.per_piece) {
        const auto row = per_piece.accessor<double, 2>()[static_cast<int64_t>(r)];
        for (int64_t t = 0; t < score.pieces; ++t) score.piece_log_probs.push_back(row[t]);
      }
    }
  }
  return scores;
}

}  // namespace trafo::inference
