#include "trafo/eval/evaluator.h"

#include "trafo/metrics/repetition.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include <torch/torch.h>

#include "trafo/data/batcher.h"
#include "trafo/model/loss.h"
#include "trafo/util/autocast.h"
#include "trafo/util/files.h"

namespace trafo::eval {
EvalSet EvalSet::read(const std::string& source_path, const std::string& reference_path,
                      const data::Tokenizer& tokenizer, int64_t max_positions, int64_t max_sentences, int tag) {
  EvalSet set;
  // + eos (source) or bos (target) must fit the positions.
  set.pairs = data::Corpus::load(source_path, reference_path, tokenizer, data::CorpusOptions{max_positions - 1, 0.0, tag, {}});
  set.sources = util::read_lines(source_path, max_sentences);
  set.references = util::read_lines(reference_path, max_sentences);
  return set;
}

double TeacherForcedLoss::mean() const {
  return tokens > 0 ? sum / static_cast<double>(tokens) : std::numeric_limits<double>::quiet_NaN();
}

TeacherForcedLoss Evaluator::loss(model::Transformer& model, const data::Corpus& pairs) const {
  const model::EvalMode eval_mode(model);
  c10::InferenceMode inference;
  const auto device = model->parameters().front().device();
  const util::AutocastGuard autocast(options_.bf16, device.type());
  data::BatcherOptions batches;
  batches.batch_tokens = std::max(options_.batch_tokens, model->config().max_positions);
  batches.shuffle = false;
  // Summed on the device, in double: one transfer at the end.
  auto sum = torch::zeros({}, torch::TensorOptions().dtype(torch::kDouble).device(device));
  auto count = torch::zeros({}, torch::TensorOptions().dtype(torch::kLong).device(device));
  for (const auto& rows : data::plan_epoch(pairs, batches, 0)) {
    const auto batch = data::make_batch(pairs, rows);
    const auto logits = model(batch.source.to(device), batch.target_input.to(device));  // [B,T,V]
    const auto [nll, tokens] = model::token_nll(logits, batch.target_output.to(device), model->config().pad_id);
    sum += nll.to(torch::kDouble);
    count += tokens;
  }
  return TeacherForcedLoss{sum.item<double>(), count.item<int64_t>(), pairs.size()};
}

EvalResult Evaluator::run(model::Transformer& model, const data::Tokenizer& tokenizer, const EvalSet& set) const {
  EvalResult result;
  result.loss = loss(model, set.pairs);
  const auto started = std::chrono::steady_clock::now();
  decode::Translator translator(model, tokenizer, options_);
  result.hypotheses = translator.translate_best(set.sources);
  result.translate_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  result.bleu = metrics::corpus_bleu(result.hypotheses, {set.references});
  result.chrf = metrics::corpus_chrf(result.hypotheses, {set.references});
  result.repetition_loops = metrics::count_repetition_loops(result.hypotheses);
  return result;
}

}  // namespace trafo::eval
