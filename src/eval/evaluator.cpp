#include "trafo/eval/evaluator.h"

#include <algorithm>
#include <memory>
#include <chrono>
#include <cmath>
#include <limits>

#include <torch/torch.h>

#include "trafo/data/batcher.h"
#include "trafo/metrics/repetition.h"
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
  std::vector<model::Transformer> models{model};
  return loss(models, pairs);
}

TeacherForcedLoss Evaluator::loss(std::vector<model::Transformer>& models, const data::Corpus& pairs) const {
  std::vector<std::unique_ptr<model::EvalMode>> eval_modes;
  for (auto& model : models) eval_modes.push_back(std::make_unique<model::EvalMode>(model));
  auto& first = models.front();
  c10::InferenceMode inference;
  const auto device = first->parameters().front().device();
  const util::AutocastGuard autocast(options_.bf16, device.type());
  data::BatcherOptions batches;
  int64_t positions = first->config().max_positions;
  for (const auto& model : models) positions = std::min(positions, model->config().max_positions);
  batches.batch_tokens = std::max(options_.batch_tokens, positions);
  batches.shuffle = false;
  // Summed on the device, in double: one transfer at the end.
  auto sum = torch::zeros({}, torch::TensorOptions().dtype(torch::kDouble).device(device));
  auto count = torch::zeros({}, torch::TensorOptions().dtype(torch::kLong).device(device));
  const int64_t pad = first->config().pad_id;
  for (const auto& rows : data::plan_epoch(pairs, batches, 0)) {
    const auto batch = data::make_batch(pairs, rows);
    const auto source = batch.source.to(device), target_input = batch.target_input.to(device);
    const auto target = batch.target_output.to(device);
    if (models.size() == 1) {
      const auto [nll, tokens] = model::token_nll(first(source, target_input), target, pad);  // logits [B,T,V]
      sum += nll.to(torch::kDouble);
      count += tokens;
      continue;
    }
    torch::Tensor log_probs;  // [B,T,V]: the mean of the models'
    for (auto& model : models) {
      const auto each = torch::log_softmax(model(source, target_input).to(torch::kFloat), -1);
      log_probs = log_probs.defined() ? log_probs + each : each;
    }
    log_probs /= static_cast<double>(models.size());
    const auto real = target.ne(pad);
    const auto nll = -log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1);  // [B,T]
    sum += nll.masked_fill(real.logical_not(), 0.0).sum().to(torch::kDouble);
    count += real.sum();
  }
  return TeacherForcedLoss{sum.item<double>(), count.item<int64_t>(), pairs.size()};
}

EvalResult Evaluator::run(model::Transformer& model, const data::Tokenizer& tokenizer, const EvalSet& set) const {
  std::vector<model::Transformer> models{model};
  return run(models, tokenizer, set);
}

EvalResult Evaluator::run(std::vector<model::Transformer>& models, const data::Tokenizer& tokenizer,
                          const EvalSet& set) const {
  return run(models, set, [&](const std::vector<std::string>& sources) {
    decode::Translator translator(models.front(), tokenizer, options_);
    for (size_t m = 1; m < models.size(); ++m) translator.add_to_ensemble(models[m]);
    return translator.translate_best(sources);
  });
}

EvalResult Evaluator::run(std::vector<model::Transformer>& models, const EvalSet& set,
                          const Translate& translate) const {
  EvalResult result;
  const auto loss_started = std::chrono::steady_clock::now();
  result.loss = loss(models, set.pairs);
  result.loss_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - loss_started).count();
  const auto started = std::chrono::steady_clock::now();
  result.hypotheses = translate(set.sources);
  result.translate_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  result.bleu = metrics::corpus_bleu(result.hypotheses, {set.references});
  result.chrf = metrics::corpus_chrf(result.hypotheses, {set.references});
  result.repetition_loops = metrics::count_repetition_loops(result.hypotheses);
  return result;
}

}  // namespace trafo::eval
