// The translation engine: what every front door (translate, eval, score-pairs, align, serve) calls to
// translate, score and align, as CTranslate2's Translator is for its command line, its Python API
// and its server. It holds a loaded model (an ensemble too) with its tokenizer and tags, and the
// search options with their glossary and language check; it tokenizes each line once (sources after
// their tag, target prefixes), gives word alignments as links, and puts HTML pages back together
// (pages.h). serve keeps its cross-request queue and continuous batching around it and hands it the
// batches of their own.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "trafo/decode/glossary.h"
#include "trafo/decode/translator.h"
#include "trafo/inference/alignment.h"
#include "trafo/inference/loaded_model.h"
#include "trafo/inference/pair_scores.h"

namespace trafo::text {
class SentenceSplitter;
}

namespace trafo::inference {

class Pages;

// What front doors name: the search's options (their flags and request fields bind them), its
// hypotheses, glossaries.
using SearchOptions = decode::DecodeOptions;
using Hypothesis = decode::Hypothesis;
using Glossary = decode::Glossary;

// Throws InputError naming the first invalid option.
void validate(const SearchOptions& options);
// A glossary file's term pairs, checked for form only: what a command reads before it loads a model.
Glossary::File read_glossary(const std::filesystem::path& path);

// Lines tokenized once, as the decoders read them.
struct Sentences {
  std::vector<std::string> lines;            // the text, one line each
  std::vector<std::vector<int>> ids;         // each line's pieces after the tag (decode::source_ids)
  std::vector<std::vector<int>> prefix_ids;  // empty, or one per line: target pieces it begins with
};

// One line's translation.
struct Translated {
  std::vector<Hypothesis> hypotheses;  // n_best of them, best first
  Links alignment;                     // the best one's word links, where asked
};

// Lines cut into their sentences (Translation::split): what is translated, and how each line is put
// back together (Translation::join).
struct SplitLines {
  std::vector<std::string> sentences;          // the lines to translate
  std::vector<size_t> first;                   // line i's are sentences[first[i] .. first[i + 1])
  std::vector<std::vector<std::string>> gaps;  // line i's spaces between its sentences
  size_t lines() const { return gaps.size(); }
};

class Translation {
 public:
  // `options`: the search (the flags' or a request's), given the model's precision, its tag (or that
  // of `target_language`, on a model of several targets) and, with retry_off_target, its language
  // check; `glossary`: terms every translation uses (none: empty). InputError for options the model
  // cannot take.
  Translation(std::shared_ptr<const LoadedModel> loaded, SearchOptions options, const Glossary::File& glossary = {},
              const std::string& target_language = "");

  const LoadedModel& loaded() const { return *loaded_; }
  const data::Tokenizer& tokenizer() const { return loaded_->tokenizer; }
  const SearchOptions& options() const { return options_; }

  // A request's own glossary, cut by this model's tokenizer (InputError for a term it cannot hold).
  std::shared_ptr<const Glossary> glossary(const std::vector<std::pair<std::string, std::string>>& pairs) const;

  // Each line cut into its sentences by the rules of the model's source language (text/sentences.h),
  // or, with `split` false, each line whole. A line of one sentence stays as it is.
  SplitLines split(const std::vector<std::string>& lines, bool split = true) const;
  // Each line's translation from its sentences' (`sentences[k]` for split.sentences[k]): the k-th
  // hypothesis of each, joined with the line's own spaces, is its k-th (their scores summed); the
  // best ones' word links side by side. A blank line gives `n_best` empty hypotheses.
  static std::vector<Translated> join(const SplitLines& split, std::vector<Translated> sentences, int n_best);

  // `lines` tokenized after the tag `tag` (the engine's: options().source_tag), and `prefixes` (none,
  // or one per line) as target pieces.
  Sentences prepare(std::vector<std::string> lines, const std::vector<std::string>& prefixes = {}) const;
  Sentences prepare(std::vector<std::string> lines, const std::vector<std::string>& prefixes, int tag) const;

  // The n-best translations of each line with `options` (the engine's, or a request's change of
  // them), and with `alignment` the best one's word links. `first_sentence`: the index of the first
  // line in the whole input (sampling draws per input sentence). A line's translation does not
  // depend on what shares the call.
  std::vector<Translated> translate(const Sentences& sentences, const SearchOptions& options, bool alignment = false,
                                    int64_t first_sentence = 0) const;
  std::vector<Translated> translate(const Sentences& sentences, bool alignment = false,
                                    int64_t first_sentence = 0) const {
    return translate(sentences, options_, alignment, first_sentence);
  }
  // The best translation's text of each line.
  std::vector<std::string> translate_best(const std::vector<std::string>& lines) const;
  // Each page with its runs translated (each run cut into its sentences unless `split` is false),
  // their inline tags placed by the word links.
  std::vector<std::string> translate_pages(const Pages& pages, bool split = true) const;

  // How likely the model finds each target given its source (pair_scores.h), with the precision and
  // batch budget of `options` (the engine's where null).
  std::vector<PairScore> score(const Sentences& sources, const std::vector<std::string>& targets, bool per_piece = false,
                               const SearchOptions* options = nullptr) const;
  // The word links of given translations (a pair longer than the model's positions gets none).
  std::vector<Links> align(const std::vector<std::string>& sources, const std::vector<std::string>& targets) const;

 private:
  std::shared_ptr<const LoadedModel> loaded_;
  SearchOptions options_;
  std::shared_ptr<const text::SentenceSplitter> splitter_;  // the source language's
};

}  // namespace trafo::inference
