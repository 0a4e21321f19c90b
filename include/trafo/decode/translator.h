// Translation with a trained model: encode once, decode step by step with the KV cache,
// greedy or beam search, batches sorted by length, results in input order.
//
// Lengths: a sentence of S source pieces may produce at most
//   L = min(floor(max_length_a × S + max_length_b), max_positions − 1)
// pieces; at step L only eos is allowed. Pad and bos are never produced. Sources longer than
// max_positions − 1 pieces are cut there (with a warning).
//
// Scores: sum of log p(token) over the output pieces and eos (log-softmax over the whole
// vocabulary). Beam search (beam > 1) ranks finished hypotheses by the length-normalised score
// of GNMT (Wu et al. 2016): score = log p(y) / lp(y), lp(y) = ((5 + |y|) / 6)^α with |y| the
// output pieces plus eos and α = length_penalty (0: raw log p). Each step takes the 2K best of the
// K × V extensions: those ending in eos among the first K are finished, the best K others stay
// open (fairseq's rule). A sentence is done when K hypotheses have finished, or when its n_best-th
// best finished score beats the best score any open hypothesis could still reach (raw log p only
// falls; the penalty is largest at the length limit), or at its length limit.
// Greedy search (beam 1) keeps the raw log p and gives the same tokens as beam search with K = 1.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "trafo/data/tokenizer.h"
#include "trafo/model/transformer.h"

namespace trafo::decode {

class Glossary;
class LanguageCheck;
class SearchStrategy;
class TokenSelector;

struct DecodeOptions {
  int beam = 1;                  // 1: greedy search
  double length_penalty = 1.0;   // beam score = log p / ((5 + |y|) / 6)^alpha (Wu et al. 2016); 0: raw log p
  int n_best = 1;                // hypotheses returned per sentence (≤ beam)
  double max_length_a = 1.5;     // output length ≤ a × source length + b (in pieces)
  int64_t max_length_b = 10;
  int64_t batch_tokens = 4096;   // source pieces per decoding batch (sentences sorted by length), and
                                 // the most decoder rows in one (sentences × beam)
  bool use_cache = true;         // false: recompute the whole prefix every step (benchmarks, tests)
  bool bf16 = false;             // under bf16 autocast (weights cast once a call; log-probs in fp32)
  int source_tag = -1;           // a piece put before every source sentence (a corpus tag, --tag); -1: none
  // Sampling (greedy search only): each piece is drawn at random instead of taken as the most probable,
  // from the K most probable (0: all), then from the fewest of those whose probabilities reach
  // P, with probabilities from log p / T. Each draw comes from (seed, sentence, step) alone, so a
  // sentence's translation does not depend on the batch or the threads.
  int64_t sampling_topk = -1;    // -1: no sampling
  double sampling_topp = 1.0;
  double sampling_temperature = 1.0;
  uint64_t seed = 0;
  // Terms the output must use (--glossary; glossary.h): a sentence a term occurs in is decoded by
  // the constrained beam search, at the beam constrained_beam gives it. Null: none.
  std::shared_ptr<const Glossary> glossary;
  // A model of several target languages (language_check.h): a translation its identifier labels as
  // another language than asked is decoded again by beam search of `retry_off_target` hypotheses
  // (0: off), and the best of them in the language asked replaces it. `language_check` is made from
  // the model (inference::decoding_for); null: no check (a model of one target language).
  int retry_off_target = 0;
  std::shared_ptr<const LanguageCheck> language_check;
  // Repetition kept out (CTranslate2's no_repeat_ngram_size and repetition_penalty): no N-gram of
  // pieces twice in one hypothesis (0: off), and each piece a hypothesis holds has its log p
  // multiplied by the penalty (1: off; above 1 the piece is less likely again).
  int no_repeat_ngram = 0;
  double repetition_penalty = 1.0;
  bool sampling() const { return sampling_topk >= 0; }
};

// Throws trafo::InputError naming the first invalid option.
void validate(const DecodeOptions& options);

// The most pieces (eos not counted) a source of `source_length` pieces may produce (see above).
int64_t max_output_length(int64_t source_length, const DecodeOptions& options, int64_t max_positions);

struct Hypothesis {
  std::vector<int> tokens;  // without bos/eos
  std::string text;         // detokenized, as one printable line (output_text.h: one_line)
  double score = 0.0;       // sum of token log-probabilities (eos included), length-penalised for beams
};

// A source line's ids as the decoders read them: its pieces after `source_tag` (-1: none). An empty
// line stays empty (one empty hypothesis), tagged or not. Not yet cut to the model's positions: the
// decoders cut, and warn.
std::vector<int> source_ids(const data::Tokenizer& tokenizer, const std::string& text, int source_tag);

// The searches on one padded batch with the best tokens (tests, benchmarks; search.h has the
// strategies and selectors behind them): `src` [B,S] holds ids + eos padded with
// pad, on the model's device; `max_lengths[b]` is row b's length limit. One list of hypotheses
// (best first, at most n_best; greedy: exactly one) per row; `text` is left empty.
std::vector<std::vector<Hypothesis>> greedy_search(model::Transformer& model, const torch::Tensor& src,
                                                   const std::vector<int64_t>& max_lengths,
                                                   const DecodeOptions& options);
std::vector<std::vector<Hypothesis>> beam_search(model::Transformer& model, const torch::Tensor& src,
                                                 const std::vector<int64_t>& max_lengths,
                                                 const DecodeOptions& options);

class Translator {
 public:
  // `model` in eval mode on its device; `tokenizer` must outlive the Translator.
  Translator(model::Transformer model, const data::Tokenizer& tokenizer, DecodeOptions options);
  // Without a tokenizer: translate_ids only, and `text` stays empty (tests, benchmarks).
  Translator(model::Transformer model, DecodeOptions options);
  // Makes an ensemble: `model` (same vocabulary, same tokenizer) joins, and every step averages the
  // models' log-probabilities; sources are cut at the smallest max_positions among them.
  void add_to_ensemble(model::Transformer model);

  // One list of n_best hypotheses per input sentence, best first, in input order.
  // Empty input lines give one empty hypothesis.
  // `first_sentence`: the index of sources[0] in the whole input (sampling draws per input sentence).
  std::vector<std::vector<Hypothesis>> translate(const std::vector<std::string>& sources, int64_t first_sentence = 0);
  // The best hypothesis' text per sentence.
  std::vector<std::string> translate_best(const std::vector<std::string>& sources);
  // Pre-tokenized input: token ids without eos (source_ids' for text, the tag included).
  // `prefixes`: empty, or one per source: target pieces each output must begin with (a target
  // prefix, as CTranslate2's; empty: none). The output holds the prefix, which is decoded with the
  // model's own log-probabilities; its length limit grows to the prefix's length + max_length_b
  // where that is more (the model's positions bound both). An empty source stays empty.
  std::vector<std::vector<Hypothesis>> translate_ids(const std::vector<std::vector<int>>& sources,
                                                     int64_t first_sentence = 0,
                                                     const std::vector<std::vector<int>>& prefixes = {});

  const DecodeOptions& options() const { return options_; }

 private:
  // What one group of sentences is decoded with: the options (their beam), the search, and each
  // source's constraints (empty: none in this group).
  struct Decoding {
    const DecodeOptions& options;
    const SearchStrategy& search;
    const std::vector<std::vector<std::vector<int>>>& constraints;
  };
  // Decodes sentences `order` of `sources` (longest first) in batches under the budget.
  void translate_in_batches(const std::vector<std::vector<int>>& sources, const std::vector<size_t>& order,
                            std::vector<std::vector<Hypothesis>>& results, int64_t first_sentence,
                            const std::vector<std::vector<int>>& prefixes, const Decoding& decoding);
  // The language check's second decoding of the translations found off target (language_check.h);
  // sentences with constraints (`constraints[i]` not empty) keep theirs.
  void retry_off_target(const std::vector<std::vector<int>>& sources, std::vector<std::vector<Hypothesis>>& results,
                        int64_t first_sentence, const std::vector<std::vector<int>>& prefixes,
                        const std::vector<std::vector<std::vector<int>>>& constraints);
  // Decodes sentences `rows` of `sources` (sorted by length, one batch) into `results`.
  void translate_batch(const std::vector<std::vector<int>>& sources, const std::vector<size_t>& rows,
                       std::vector<std::vector<Hypothesis>>& results, int64_t first_sentence,
                       const std::vector<std::vector<int>>& prefixes, const Decoding& decoding);

  model::Transformer model_;                 // the first of models_
  std::vector<model::Transformer> models_;  // one, or an ensemble
  int64_t max_positions_ = 0;               // the smallest of the models'
  const data::Tokenizer* tokenizer_ = nullptr;  // null: ids only
  DecodeOptions options_;
  std::shared_ptr<const SearchStrategy> search_;   // made from options_ (search.h)
  std::shared_ptr<const TokenSelector> selector_;
};

}  // namespace trafo::decode
