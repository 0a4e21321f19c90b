#include "trafo/decode/translator.h"

#include "trafo/decode/language_check.h"
#include "trafo/decode/output_text.h"
#include "trafo/decode/search.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "trafo/errors.h"
#include "trafo/util/autocast.h"

namespace trafo::decode {
void validate(const DecodeOptions& options) {
  // Beams and batches far beyond any real use would only fail later, allocating.
  constexpr int kMaxBeam = 1024;
  constexpr int64_t kMaxBatchTokens = int64_t{1} << 24;
  if (options.beam < 1 || options.beam > kMaxBeam) {
    throw InputError("beam size must be between 1 and " + std::to_string(kMaxBeam) + ", not " +
                     std::to_string(options.beam));
  }
  if (options.n_best < 1 || options.n_best > options.beam) {
    throw InputError("n-best must be between 1 and the beam size (" + std::to_string(options.beam) + "), not " +
                     std::to_string(options.n_best));
  }
  if (!std::isfinite(options.length_penalty) || options.length_penalty < 0.0) {
    throw InputError("length penalty must be 0 or more, not " + std::to_string(options.length_penalty));
  }
  if (!std::isfinite(options.max_length_a) || options.max_length_a < 0.0) {
    throw InputError("max-length-a must be 0 or more, not " + std::to_string(options.max_length_a));
  }
  if (options.max_length_b < 0) {
    throw InputError("max-length-b must be 0 or more, not " + std::to_string(options.max_length_b));
  }
  if (options.sampling() && options.glossary) {
    throw InputError("a glossary needs the best pieces, not sampled ones: --glossary and --sampling-topk exclude each other");
  }
  if (options.sampling() && (options.beam != 1 || options.n_best != 1)) {
    throw InputError("sampling draws one translation per sentence: --sampling-topk needs --beam 1 (and --n-best 1)");
  }
  if (!(options.sampling_topp > 0.0 && options.sampling_topp <= 1.0)) {
    throw InputError("sampling-topp must be more than 0 and at most 1, not " + std::to_string(options.sampling_topp));
  }
  if (!std::isfinite(options.sampling_temperature) || options.sampling_temperature <= 0.0) {
    throw InputError("sampling-temperature must be positive and finite, not " +
                     std::to_string(options.sampling_temperature));
  }
  if (options.retry_off_target != 0 && (options.retry_off_target < 2 || options.retry_off_target > kMaxBeam)) {
    throw InputError("retry-off-target must be 0 (off) or a beam between 2 and " + std::to_string(kMaxBeam) +
                     ", not " + std::to_string(options.retry_off_target));
  }
  if (options.sampling() && options.retry_off_target != 0) {
    throw InputError("--retry-off-target decodes again by beam search, not by sampling: it and --sampling-topk "
                     "exclude each other");
  }
  if (options.no_repeat_ngram < 0 || options.no_repeat_ngram > 100) {
    throw InputError("no-repeat-ngram must be between 0 (off) and 100, not " + std::to_string(options.no_repeat_ngram));
  }
  if (!std::isfinite(options.repetition_penalty) || options.repetition_penalty < 1.0 || options.repetition_penalty > 100.0) {
    throw InputError("repetition-penalty must be between 1 (off) and 100, not " +
                     std::to_string(options.repetition_penalty));
  }
  if (options.batch_tokens < 1 || options.batch_tokens > kMaxBatchTokens) {
    throw InputError("batch tokens must be between 1 and " + std::to_string(kMaxBatchTokens) + ", not " +
                     std::to_string(options.batch_tokens));
  }
}

int64_t max_output_length(int64_t source_length, const DecodeOptions& options, int64_t max_positions) {
  const double limit = std::floor(options.max_length_a * static_cast<double>(source_length) +
                                  static_cast<double>(options.max_length_b));
  const double cap = static_cast<double>(max_positions - 1);  // bos + pieces must fit the positions
  return static_cast<int64_t>(std::clamp(limit, 0.0, cap));
}

std::vector<int> source_ids(const data::Tokenizer& tokenizer, const std::string& text, int source_tag) {
  auto ids = tokenizer.encode(text);
  if (source_tag >= 0 && !ids.empty()) ids.insert(ids.begin(), source_tag);
  return ids;
}

Translator::Translator(model::Transformer model, const data::Tokenizer& tokenizer, DecodeOptions options)
    : Translator(std::move(model), options) {
  tokenizer_ = &tokenizer;
}

Translator::Translator(model::Transformer model, DecodeOptions options)
    : model_(std::move(model)), models_{model_}, max_positions_(model_->config().max_positions), options_(options) {
  validate(options_);
  search_ = make_search(options_);
  selector_ = make_selector(options_);
}

void Translator::add_to_ensemble(model::Transformer model) {
  if (model->config().vocab_size != model_->config().vocab_size) {
    throw InputError("the models of an ensemble need one vocabulary: " + std::to_string(model->config().vocab_size) +
                     " pieces vs " + std::to_string(model_->config().vocab_size));
  }
  max_positions_ = std::min(max_positions_, model->config().max_positions);
  models_.push_back(std::move(model));
}

std::vector<std::vector<Hypothesis>> Translator::translate(const std::vector<std::string>& sources,
                                                           int64_t first_sentence) {
  if (tokenizer_ == nullptr) throw std::logic_error("Translator::translate needs a tokenizer");
  std::vector<std::vector<int>> ids;
  ids.reserve(sources.size());
  for (const auto& source : sources) ids.push_back(source_ids(*tokenizer_, source, options_.source_tag));
  return translate_ids(ids, first_sentence);
}

std::vector<std::string> Translator::translate_best(const std::vector<std::string>& sources) {
  std::vector<std::string> best;
  best.reserve(sources.size());
  for (auto& hypotheses : translate(sources)) best.push_back(std::move(hypotheses.front().text));
  return best;
}

std::vector<std::vector<Hypothesis>> Translator::translate_ids(const std::vector<std::vector<int>>& sources,
                                                               int64_t first_sentence,
                                                               const std::vector<std::vector<int>>& prefixes) {
  if (!prefixes.empty() && prefixes.size() != sources.size()) {
    throw std::logic_error("Translator::translate_ids: one target prefix per source, or none");
  }
  std::vector<std::vector<Hypothesis>> results(sources.size());
  // Longest first: a batch that runs out of memory does so at once; then packed under the budget.
  std::vector<size_t> order;
  for (size_t i = 0; i < sources.size(); ++i) {
    if (sources[i].empty()) {
      results[i].assign(static_cast<size_t>(options_.n_best), Hypothesis{});  // n-best of nothing: N empty lines
    } else {
      order.push_back(i);
    }
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return sources[a].size() > sources[b].size(); });
  // A sentence a glossary term occurs in is decoded apart, by the constrained beam search at the
  // beam its own constraints give it: what shares its batch never changes its translation.
  std::vector<Constraints> constraints;
  std::map<int, std::vector<size_t>> by_beam;  // constrained sentences by their beam
  if (options_.glossary) {
    constraints.resize(sources.size());
    std::vector<size_t> free;
    for (const size_t i : order) {
      constraints[i] = options_.glossary->constraints(sources[i]);
      if (constraints[i].empty()) {
        free.push_back(i);
      } else {
        by_beam[constrained_beam(options_.beam, constraints[i])].push_back(i);
      }
    }
    order = std::move(free);
  }
  std::vector<std::unique_ptr<model::EvalMode>> eval_modes;
  std::vector<std::unique_ptr<model::PackedInference>> packings;  // one for all batches of this call (fp32 only)
  for (auto& model : models_) {
    eval_modes.push_back(std::make_unique<model::EvalMode>(model));
    packings.push_back(std::make_unique<model::PackedInference>(*model));
  }
  const util::AutocastGuard autocast(options_.bf16, model_->parameters().front().device().type());
  translate_in_batches(sources, order, results, first_sentence, prefixes, Decoding{options_, *search_, {}});
  const BeamSearch constrained_search;
  for (const auto& [beam, sentences] : by_beam) {
    auto options = options_;
    options.beam = beam;
    translate_in_batches(sources, sentences, results, first_sentence, prefixes,
                         Decoding{options, constrained_search, constraints});
  }
  if (tokenizer_ != nullptr) {
    for (auto& hypotheses : results) {
      for (auto& hypothesis : hypotheses) hypothesis.text = one_line(tokenizer_->decode(hypothesis.tokens));
    }
    if (options_.language_check && options_.retry_off_target > 0) {
      retry_off_target(sources, results, first_sentence, prefixes, constraints);
    }
  }
  // Each sentence gives exactly n_best (docs/contracts.md); a search that found fewer repeats its last.
  for (auto& hypotheses : results) {
    while (!hypotheses.empty() && hypotheses.size() < static_cast<size_t>(options_.n_best)) {
      hypotheses.push_back(hypotheses.back());
    }
  }
  return results;
}

void Translator::retry_off_target(const std::vector<std::vector<int>>& sources,
                                  std::vector<std::vector<Hypothesis>>& results, int64_t first_sentence,
                                  const std::vector<std::vector<int>>& prefixes,
                                  const std::vector<Constraints>& constraints) {
  const auto& check = *options_.language_check;
  std::vector<size_t> again;
  std::vector<std::string> asked(sources.size());
  for (size_t i = 0; i < sources.size(); ++i) {
    if (sources[i].empty() || (!constraints.empty() && !constraints[i].empty())) continue;
    asked[i] = check.asked(sources[i]);
    if (!asked[i].empty() && check.off_target(results[i].front().text, asked[i])) again.push_back(i);
  }
  if (again.empty()) return;
  std::stable_sort(again.begin(), again.end(),
                   [&](size_t a, size_t b) { return sources[a].size() > sources[b].size(); });
  auto options = options_;
  options.beam = std::max(options_.beam, options_.retry_off_target);
  options.n_best = options.beam;
  const BeamSearch beam_search;
  std::vector<std::vector<Hypothesis>> second(sources.size());
  translate_in_batches(sources, again, second, first_sentence, prefixes, Decoding{options, beam_search, {}});
  for (const size_t i : again) {
    // The hypotheses in the language asked first, best first; none: the first translation stays.
    auto& hypotheses = second[i];
    for (auto& hypothesis : hypotheses) hypothesis.text = one_line(tokenizer_->decode(hypothesis.tokens));
    const auto on_target = std::stable_partition(hypotheses.begin(), hypotheses.end(), [&](const Hypothesis& h) {
      return check.on_target(h.text, asked[i]);
    });
    if (on_target == hypotheses.begin()) continue;
    hypotheses.resize(std::min(hypotheses.size(), static_cast<size_t>(options_.n_best)));
    results[i] = std::move(hypotheses);
  }
}

void Translator::translate_in_batches(const std::vector<std::vector<int>>& sources, const std::vector<size_t>& order,
                                      std::vector<std::vector<Hypothesis>>& results, int64_t first_sentence,
                                      const std::vector<std::vector<int>>& prefixes, const Decoding& decoding) {
  const int64_t longest = max_positions_ - 1;  // source pieces; eos takes the last position
  std::vector<size_t> batch;
  int64_t width = 0;  // padded source length of `batch` (pieces + eos)
  for (const size_t i : order) {
    const int64_t length = std::min(static_cast<int64_t>(sources[i].size()), longest) + 1;
    // The budget bounds the padded source, and the decoder's rows (sentences × beam) too: 4,096
    // one-word lines at beam 1,024 would otherwise be 4M rows of vocabulary-wide log-probs a step.
    const auto sentences = static_cast<int64_t>(batch.size() + 1);
    if (!batch.empty() && (std::max(width, length) * sentences > decoding.options.batch_tokens ||
                           sentences * decoding.options.beam > decoding.options.batch_tokens)) {
      translate_batch(sources, batch, results, first_sentence, prefixes, decoding);
      batch.clear();
      width = 0;
    }
    batch.push_back(i);
    width = std::max(width, length);
  }
  if (!batch.empty()) translate_batch(sources, batch, results, first_sentence, prefixes, decoding);
}

void Translator::translate_batch(const std::vector<std::vector<int>>& sources, const std::vector<size_t>& rows,
                                 std::vector<std::vector<Hypothesis>>& results, int64_t first_sentence,
                                 const std::vector<std::vector<int>>& prefixes, const Decoding& decoding) {
  const auto& options = decoding.options;
  const int64_t max_positions = max_positions_;
  const int64_t longest = max_positions - 1;
  int64_t width = 0;
  for (const size_t i : rows) width = std::max(width, std::min(static_cast<int64_t>(sources[i].size()), longest) + 1);
  auto src = torch::full({static_cast<int64_t>(rows.size()), width}, model_->config().pad_id, torch::kLong);  // [B,S]
  auto* data = src.data_ptr<int64_t>();
  std::vector<int64_t> max_lengths;
  for (size_t r = 0; r < rows.size(); ++r) {
    const auto& source = sources[rows[r]];
    auto length = static_cast<int64_t>(source.size());
    if (length > longest) {
      spdlog::warn("a source sentence of {} pieces is cut to the model's limit of {}", length, longest);
      length = longest;
    }
    std::copy(source.begin(), source.begin() + length, data + static_cast<int64_t>(r) * width);
    data[static_cast<int64_t>(r) * width + length] = data::Tokenizer::kEos;
    max_lengths.push_back(max_output_length(length, options, max_positions));
  }
  std::vector<std::vector<int>> row_prefixes;  // empty: no prefixes in this call
  if (!prefixes.empty()) {
    const auto cap = static_cast<size_t>(max_positions - 1);  // as max_output_length caps
    for (size_t r = 0; r < rows.size(); ++r) {
      const auto& prefix = prefixes[rows[r]];
      row_prefixes.emplace_back(prefix.begin(), prefix.begin() + static_cast<std::ptrdiff_t>(std::min(prefix.size(), cap)));
      const auto room = static_cast<int64_t>(row_prefixes.back().size()) + options.max_length_b;
      max_lengths[r] = std::max(max_lengths[r], std::min(room, static_cast<int64_t>(cap)));
    }
  }
  std::vector<Constraints> row_constraints;  // empty: none in this call
  if (!decoding.constraints.empty()) {
    // Room for the terms, as for a prefix: their pieces and max_length_b more.
    const auto cap = max_positions - 1;
    for (size_t r = 0; r < rows.size(); ++r) {
      row_constraints.push_back(decoding.constraints[rows[r]]);
      const auto pieces = static_cast<int64_t>(constraint_pieces(row_constraints.back()));
      max_lengths[r] = std::max(max_lengths[r], std::min(pieces + options.max_length_b, cap));
    }
  }
  src = src.to(model_->parameters().front().device());
  std::vector<int64_t> sentences;
  for (const size_t row : rows) sentences.push_back(first_sentence + static_cast<int64_t>(row));
  auto hypotheses =
      decoding.search.search(models_, src, max_lengths, options, *selector_, sentences, row_prefixes, row_constraints);
  for (size_t r = 0; r < rows.size(); ++r) results[rows[r]] = std::move(hypotheses[r]);
}

}  // namespace trafo::decode
