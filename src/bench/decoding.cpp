// Timed greedy decoding through decode::Translator.
#include <chrono>

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "trafo/bench/measure.h"
#include "trafo/data/tokenizer.h"
#include "trafo/decode/translator.h"
#include "trafo/errors.h"

namespace trafo::bench {
namespace {

// A random model's logits for eos become 0 while the others spread around it: with a vocabulary
// of more than a handful of pieces, eos is (all but surely) never the argmax before the limit.
void silence_eos(model::Transformer& model) {
  torch::NoGradGuard no_grad;
  const int64_t eos = data::Tokenizer::kEos;
  if (model->output_projection) {
    model->output_projection->weight[eos].zero_();
  } else {
    model->source_embedding->embedding->weight[eos].zero_();
  }
  if (const auto bias = model->output_bias(); bias.defined()) bias[eos].zero_();
}

int64_t output_tokens(const std::vector<std::vector<decode::Hypothesis>>& results) {
  int64_t tokens = 0;
  for (const auto& hypotheses : results) tokens += static_cast<int64_t>(hypotheses.front().tokens.size()) + 1;  // + eos
  return tokens;
}

}  // namespace

Rounds measure_greedy_decoding(model::Transformer& model, const std::vector<std::vector<int>>& sentences,
                               const DecodeBenchOptions& options) {
  if (sentences.empty() || options.rounds < 1) throw InputError("the decoding benchmark needs sentences and rounds");
  model->to(options.device);
  silence_eos(model);
  decode::DecodeOptions decode_options;
  decode_options.batch_tokens = options.batch_tokens;
  decode_options.use_cache = options.use_cache;
  decode::Translator translator(model, decode_options);

  const std::vector<std::vector<int>> warmup(sentences.begin(), sentences.begin() + std::min<size_t>(4, sentences.size()));
  translator.translate_ids(warmup);
  Rounds rounds;
  for (int64_t round = 0; round < options.rounds; ++round) {
    const auto started = std::chrono::steady_clock::now();
    const auto results = translator.translate_ids(sentences);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    rounds.work = static_cast<double>(output_tokens(results));
    rounds.seconds.push_back(seconds);
    spdlog::info("bench: greedy decoding (batch tokens {}, {}) round {}: {} sentences, {:.0f} tokens in {:.2f} s",
                 options.batch_tokens, options.use_cache ? "cached" : "recomputed", round + 1, sentences.size(),
                 rounds.work, seconds);
  }
  return rounds;
}

}  // namespace trafo::bench
