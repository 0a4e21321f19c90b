#include "trafo/train/validator.h"

#include <algorithm>
#include <cmath>
#include <fstream>

#include <torch/torch.h>

#include "trafo/data/batcher.h"
#include "trafo/decode/translator.h"
#include "trafo/metrics/bleu.h"
#include "trafo/metrics/chrf.h"
#include "trafo/model/loss.h"
#include "trafo/util/autocast.h"

namespace trafo::train {
namespace {

std::vector<std::string> read_lines(const std::string& path, int64_t limit) {
  std::ifstream in(path, std::ios::binary);
  std::vector<std::string> lines;
  std::string line;
  while ((limit == 0 || static_cast<int64_t>(lines.size()) < limit) && std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
  }
  return lines;
}

}  // namespace

Validator::Validator(const std::string& source_path, const std::string& target_path,
                     const data::Tokenizer& tokenizer, int64_t batch_tokens, int64_t max_sentences, int64_t samples,
                     int64_t max_positions, bool bf16)
    : tokenizer_(tokenizer),
      // + eos (source) or bos (target) must fit the positions
      corpus_(data::Corpus::load(source_path, target_path, tokenizer, data::CorpusOptions{max_positions - 1, 0.0})),
      batch_tokens_(std::max(batch_tokens, max_positions)),  // every pair the model takes fits a batch
      samples_(samples),
      bf16_(bf16),
      sources_(read_lines(source_path, max_sentences)),
      references_(read_lines(target_path, max_sentences)) {}

ValidationResult Validator::run(model::Transformer& model, const at::Device& device) {
  const bool was_training = model->is_training();
  model->eval();
  ValidationResult result;
  {
    torch::NoGradGuard no_grad;
    const util::AutocastGuard autocast(bf16_, device.type());
    data::BatcherOptions options;
    options.batch_tokens = batch_tokens_;
    options.shuffle = false;
    double nll = 0.0;
    int64_t tokens = 0;
    for (const auto& pairs : data::plan_epoch(corpus_, options, 0)) {
      const auto batch = data::make_batch(corpus_, pairs);
      const auto logits = model(batch.source.to(device), batch.target_input.to(device));
      const auto [sum, count] = model::token_nll(logits, batch.target_output.to(device), model->config().pad_id);
      nll += sum.item<double>();
      tokens += count.item<int64_t>();
    }
    result.loss = tokens > 0 ? nll / static_cast<double>(tokens) : 0.0;
    result.ppl = std::exp(result.loss);
  }
  decode::DecodeOptions decode_options;
  decode_options.batch_tokens = batch_tokens_;
  decode_options.bf16 = bf16_;
  decode::Translator translator(model, tokenizer_, decode_options);
  const auto hypotheses = translator.translate_best(sources_);
  result.bleu = metrics::corpus_bleu(hypotheses, {references_}).score;
  result.chrf = metrics::corpus_chrf(hypotheses, {references_}).score;
  for (int64_t i = 0; i < std::min<int64_t>(samples_, static_cast<int64_t>(hypotheses.size())); ++i) {
    result.samples.push_back({{"src", sources_[i]}, {"ref", references_[i]}, {"hyp", hypotheses[i]}});
  }
  if (was_training) model->train();
  return result;
}

}  // namespace trafo::train
