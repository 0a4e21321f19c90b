#include "trafo/inference/translation.h"

#include <algorithm>

#include "trafo/decode/output_text.h"
#include "trafo/errors.h"
#include "trafo/inference/pages.h"
#include "trafo/text/sentences.h"
#include "trafo/util/language_tag.h"

namespace trafo::inference {
namespace {

// The piece of the >>xx<< tag of `target_language` among the model's corpus tags ("": the model's own
// tag); InputError naming the targets when it has none.
int target_tag(const LoadedModel& loaded, const std::string& target_language) {
  if (target_language.empty()) return loaded.tag;
  const auto ids = corpus_tag_ids(loaded.inference, loaded.tokenizer);
  const auto found = ids.find(util::language_tag(target_language));
  if (found == ids.end()) throw InputError("the model has no >>" + target_language + "<< tag to translate into " +
                                           target_language);
  return found->second;
}

}  // namespace

void validate(const SearchOptions& options) { decode::validate(options); }

Glossary::File read_glossary(const std::filesystem::path& path) { return Glossary::read(path); }

Translation::Translation(std::shared_ptr<const LoadedModel> loaded, SearchOptions options,
                         const Glossary::File& glossary, const std::string& target_language)
    : loaded_(std::move(loaded)),
      options_(decoding_for(std::move(options), *loaded_)),
      splitter_(std::make_shared<const text::SentenceSplitter>(loaded_->inference.src_lang)) {
  options_.source_tag = target_tag(*loaded_, target_language);
  if (!glossary.pairs.empty()) {
    options_.glossary = std::make_shared<const Glossary>(Glossary::from_pairs(glossary.pairs, tokenizer(), glossary.places));
  }
  decode::validate(options_);
}

SplitLines Translation::split(const std::vector<std::string>& lines, bool split) const {
  SplitLines out;
  for (const auto& line : lines) {
    out.first.push_back(out.sentences.size());
    auto cut = split ? splitter_->split(line) : text::LineSentences{};
    if (cut.sentences.size() < 2) {  // a line of one sentence (or none) goes whole
      out.sentences.push_back(line);
      out.gaps.emplace_back();
      continue;
    }
    for (auto& sentence : cut.sentences) out.sentences.push_back(std::move(sentence));
    out.gaps.push_back(std::move(cut.gaps));
  }
  out.first.push_back(out.sentences.size());
  return out;
}

std::vector<Translated> Translation::join(const SplitLines& split, std::vector<Translated> sentences, int n_best) {
  if (sentences.size() != split.sentences.size()) throw std::invalid_argument("Translation::join: one result per sentence");
  std::vector<Translated> lines(split.lines());
  for (size_t i = 0; i < split.lines(); ++i) {
    const size_t first = split.first[i], count = split.first[i + 1] - first;
    if (count == 1) {
      lines[i] = std::move(sentences[first]);
      continue;
    }
    auto& line = lines[i];
    line.hypotheses.assign(static_cast<size_t>(std::max(1, n_best)), Hypothesis{});
    int source_words = 0, target_words = 0;  // of the sentences before: where the next one's words start
    for (size_t s = 0; s < count; ++s) {
      const auto& sentence = sentences[first + s];
      for (size_t k = 0; k < line.hypotheses.size(); ++k) {
        const auto& part = sentence.hypotheses[std::min(k, sentence.hypotheses.size() - 1)];
        auto& whole = line.hypotheses[k];
        if (s > 0) whole.text += split.gaps[i][s - 1];
        whole.text += part.text;
        whole.tokens.insert(whole.tokens.end(), part.tokens.begin(), part.tokens.end());
        whole.score += part.score;
      }
      for (const auto& [source, target] : sentence.alignment) {
        line.alignment.emplace_back(source + source_words, target + target_words);
      }
      source_words += decode::count_words(split.sentences[first + s]);
      target_words += decode::count_words(sentence.hypotheses.front().text);
    }
  }
  return lines;
}

std::shared_ptr<const Glossary> Translation::glossary(const std::vector<std::pair<std::string, std::string>>& pairs) const {
  return std::make_shared<const Glossary>(Glossary::from_pairs(pairs, tokenizer()));
}

Sentences Translation::prepare(std::vector<std::string> lines, const std::vector<std::string>& prefixes) const {
  return prepare(std::move(lines), prefixes, options_.source_tag);
}

Sentences Translation::prepare(std::vector<std::string> lines, const std::vector<std::string>& prefixes, int tag) const {
  Sentences sentences;
  for (const auto& line : lines) sentences.ids.push_back(decode::source_ids(tokenizer(), line, tag));
  for (const auto& prefix : prefixes) sentences.prefix_ids.push_back(tokenizer().encode_target(prefix));
  sentences.lines = std::move(lines);
  return sentences;
}

std::vector<Translated> Translation::translate(const Sentences& sentences, const SearchOptions& options, bool alignment,
                                               int64_t first_sentence) const {
  decode::Translator translator(loaded_->model, tokenizer(), options);
  for (const auto& member : loaded_->ensemble) translator.add_to_ensemble(member);
  auto results = translator.translate_ids(sentences.ids, first_sentence, sentences.prefix_ids);
  std::vector<Translated> translated(results.size());
  for (size_t i = 0; i < results.size(); ++i) translated[i].hypotheses = std::move(results[i]);
  if (alignment) {
    std::vector<const Hypothesis*> best;
    for (const auto& each : translated) best.push_back(&each.hypotheses.front());
    auto model = loaded_->model;
    auto links = align_best(model, tokenizer(), options.source_tag, sentences.lines, sentences.ids, best);
    for (size_t i = 0; i < links.size(); ++i) translated[i].alignment = std::move(links[i]);
  }
  return translated;
}

std::vector<std::string> Translation::translate_best(const std::vector<std::string>& lines) const {
  std::vector<std::string> best;
  for (auto& each : translate(prepare(lines))) best.push_back(std::move(each.hypotheses.front().text));
  return best;
}

std::vector<std::string> Translation::translate_pages(const Pages& pages, bool split) const {
  const auto runs = this->split(pages.lines(), split);
  return pages.render(join(runs, translate(prepare(runs.sentences), /*alignment=*/true), options_.n_best));
}

std::vector<PairScore> Translation::score(const Sentences& sources, const std::vector<std::string>& targets,
                                          bool per_piece, const SearchOptions* options) const {
  const auto& o = options != nullptr ? *options : options_;
  PairScoreOptions scoring;
  scoring.batch_tokens = o.batch_tokens;
  scoring.bf16 = o.bf16;
  scoring.per_piece = per_piece;
  auto model = loaded_->model;
  return score_pairs(model, tokenizer(), sources.ids, targets, scoring);
}

std::vector<Links> Translation::align(const std::vector<std::string>& sources,
                                      const std::vector<std::string>& targets) const {
  auto model = loaded_->model;
  return align_pairs(model, tokenizer(), options_.source_tag, sources, targets);
}

}  // namespace trafo::inference
