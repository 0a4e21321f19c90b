// Hard word alignments from a model's cross-attention, in Pharaoh format ("0-0 1-2 ..."): each target
// piece is linked to the source piece it attends to most (the heads averaged, of one decoder layer or
// of all), and pieces are mapped to the words of the text as printed (decode::one_line, split at
// spaces): a piece that prints nothing has no link, nor has the punctuation piece that closes a word
// (its word has the links of its other pieces). A source word that no target piece links then gets
// the target word that attends to it most, unless even that attention is weak.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "trafo/data/tokenizer.h"
#include "trafo/decode/translator.h"
#include "trafo/model/transformer.h"

namespace trafo::inference {

using Links = std::vector<std::pair<int, int>>;  // (source word, target word), 0-based, sorted, unique

// Which attention weights give the links: decoder layer `layer`'s cross-attention (0-based; -1: every
// decoder layer's averaged), head `head` (-1: the heads averaged).
struct AlignmentHead {
  int64_t layer = -1;
  int64_t head = -1;
  // Whether the source's eos is the null word (a guided head learns it for target words the aligner
  // left unlinked): a target piece that attends to it most has no link.
  bool null_word = false;
};

// A model trained with guided alignment (ModelConfig::alignment_layer): its guided head, layer
// alignment_layer's first, with the null word. Else the cross-attention that aligns best on the toy corpus (README "Word
// alignments"): every decoder layer's averaged (AER 0.25 against 0.39 and 0.27 for the first and the
// last of a 2-layer decoder).
AlignmentHead default_alignment_head(const model::ModelConfig& config);

// The links of one pair from its attention weights: `weights` row-major [target pieces, `columns`],
// each row over the source pieces (and the null word last, where a guided head has it);
// `source_words`/`target_words` the printed word of each piece (-1: none), `linking[t]` whether
// target piece t may link (it prints a word of its own, not the punctuation closing one).
Links links_of_weights(const float* weights, int64_t columns, const std::vector<int>& source_words,
                       const std::vector<int>& target_words, const std::vector<char>& linking);

// Links of each pair: `sources[i]` the source pieces as the model read them (a leading corpus tag
// `tag` >= 0 is no word), `targets[i]` the output pieces (no eos). Pairs are run a batch at a time
// in one teacher-forced pass each, reading the weights of `head`.
std::vector<Links> align_words(model::Transformer& model, const data::Tokenizer& tokenizer,
                               const std::vector<std::vector<int>>& sources, const std::vector<std::vector<int>>& targets,
                               AlignmentHead head, int tag = -1);

// The links of each pair of `sources` and `targets` (text: the references' own alignment, as
// `trafo align` prints it), from default_alignment_head, cut to the words of the lines. A pair
// longer than the model's positions gets no links.
std::vector<Links> align_pairs(model::Transformer& model, const data::Tokenizer& tokenizer, int tag,
                               const std::vector<std::string>& sources, const std::vector<std::string>& targets);

// The links that index a word of a source line of `source_words` words and of a translation of
// `target_words` (decode::count_words of the lines as printed): every link printed points at a word.
Links within(const Links& links, int source_words, int target_words);

// "0-0 1-2 ..."
std::string pharaoh(const Links& links);

// The links of each source line's best translation (`best[i]`), from `model`'s cross-attention at
// its default layer, cut to the words as printed: what `translate --alignment` prints after " ||| ".
// `source_ids[i]`: the pieces the translator read for `sources[i]` (decode::source_ids: after the
// corpus tag's piece `tag`, -1 for none), so that nothing is tokenized twice; `sources` give the words.
std::vector<Links> align_best(model::Transformer& model, const data::Tokenizer& tokenizer, int tag,
                              const std::vector<std::string>& sources, const std::vector<std::vector<int>>& source_ids,
                              const std::vector<const decode::Hypothesis*>& best);

}  // namespace trafo::inference
