// The toy corpus: unique pairs drawn split by split, written one sentence a line, and the
// monotone word-for-word baseline that shows the corpus needs attention.
#include "trafo/toy/toy_corpus.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "toy_lexicon.h"
#include "toy_render.h"
#include "toy_sampler.h"
#include "trafo/errors.h"

namespace trafo::data {
namespace {

constexpr int kMaxWords = 20;  // per sentence, in either language
// Draws in a row that bring no new sentence before the grammar counts as exhausted.
constexpr int64_t kMaxFruitlessDraws = 100000;

int word_count(const std::string& sentence) {
  int words = 1;
  for (const char c : sentence) words += c == ' ' ? 1 : 0;
  return words;
}

void check_count(int64_t count, const char* split) {
  if (count < 0) {
    throw InputError(std::string("toy corpus: the number of ") + split +
                     " pairs must be 0 or more, not " + std::to_string(count));
  }
}

// Appends `count` pairs whose sources `seen` does not hold yet, and adds them to it.
void draw_split(uint64_t seed, int64_t count, std::unordered_set<std::string>& seen,
                std::vector<SentencePair>& pairs, int64_t& reordered) {
  toy::ToySampler sampler(seed);
  pairs.reserve(static_cast<size_t>(count));
  int64_t fruitless = 0;
  while (static_cast<int64_t>(pairs.size()) < count) {
    ToySample sample = render_toy_sentence(sampler.next());
    const bool fits = word_count(sample.pair.source) <= kMaxWords &&
                      word_count(sample.pair.target) <= kMaxWords;
    if (!fits || !seen.insert(sample.pair.source).second) {
      if (++fruitless > kMaxFruitlessDraws) {
        throw InputError("toy corpus: the toy grammar ran out of new sentences after " +
                         std::to_string(seen.size()) + " unique pairs; ask for fewer");
      }
      continue;
    }
    fruitless = 0;
    reordered += sample.reordered ? 1 : 0;
    pairs.push_back(std::move(sample.pair));
  }
}

// Through a temporary file renamed into place: a full disk leaves the old file, not half a new one.
void write_lines(const std::filesystem::path& path, const std::vector<SentencePair>& pairs,
                 std::string SentencePair::*side) {
  const std::filesystem::path temporary = path.string() + ".tmp-" + std::to_string(::getpid());
  std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
  if (!out) throw_write_error(path.string(), errno);
  for (const auto& pair : pairs) out << pair.*side << '\n';
  out.close();
  std::error_code error;
  if (out) std::filesystem::rename(temporary, path, error);
  if (!out || error) {
    std::filesystem::remove(temporary, error);
    throw RunError("toy corpus: cannot write " + path.string() + " (is the disk full?)");
  }
}

const std::unordered_map<std::string, std::string>& baseline_dictionary() {
  static const auto dictionary = [] {
    std::unordered_map<std::string, std::string> entries;
    auto add = [&entries](std::string_view english, std::string_view german) {
      english = english.substr(0, english.find(' '));  // "look for" → "look"
      entries.emplace(std::string(english), std::string(german));  // the first entry wins
    };
    // Words of the grammar itself; "do", "to" and "any" have no German word of their own.
    const char* const grammar[][2] = {
        {"the", "der"},      {"a", "ein"},      {"an", "ein"},       {"this", "dieser"},
        {"these", "diese"},  {"my", "mein"},    {"our", "unser"},    {"not", "nicht"},
        {"cannot", "kann nicht"}, {"do", ""},   {"does", ""},        {"did", ""},
        {"to", ""},          {"any", ""},       {"for", ""},         {"with", "mit"},
        {"has", "hat"},      {"have", "haben"}, {"will", "wird"},    {"can", "kann"},
        {"be", "sein"},      {"am", "bin"},     {"is", "ist"},       {"are", "sind"},
        {"was", "war"},      {"were", "waren"}, {"been", "gewesen"}, {"because", "weil"},
        {"although", "obwohl"}, {"if", "wenn"}, {"that", "dass"}};
    for (const auto& entry : grammar) add(entry[0], entry[1]);
    for (const auto& pronoun : toy::pronouns()) {
      add(pronoun.english == "I" ? "i" : pronoun.english, pronoun.german);
    }
    for (const auto& noun : toy::nouns()) {
      add(noun.english, noun.german);
      if (!noun.english_plural.empty()) add(noun.english_plural, noun.german_plural);
    }
    for (const auto& adjective : toy::adjectives()) add(adjective.english, adjective.german);
    auto add_verb = [&add](const toy::Verb& verb) {
      add(verb.english, verb.german);
      add(verb.english_s, verb.german_er);
      add(verb.english_past, verb.german_participle);
      add(verb.english_participle, verb.german_participle);
    };
    for (const auto& verb : toy::verbs()) add_verb(verb);
    for (const auto& verb : toy::clause_verbs()) add_verb(verb.forms);
    for (const auto& adverb : toy::adverbs()) add(adverb.english, adverb.german);
    for (int number = 2; number <= 99; ++number) {
      add(toy::english_number(number), toy::german_number(number));
    }
    return entries;
  }();
  return dictionary;
}

}  // namespace

std::vector<ToySample> sample_toy_sentences(uint64_t seed, int64_t count) {
  toy::ToySampler sampler(seed);
  std::vector<ToySample> samples;
  for (int64_t i = 0; i < count; ++i) samples.push_back(render_toy_sentence(sampler.next()));
  return samples;
}

ToySplits generate_toy_corpus(const ToyCorpusOptions& options) {
  check_count(options.train, "train");
  check_count(options.dev, "dev");
  check_count(options.test, "test");
  const int64_t total = options.train + options.dev + options.test;
  if (options.train > kMaxToyCorpusPairs || options.dev > kMaxToyCorpusPairs ||
      options.test > kMaxToyCorpusPairs || total > kMaxToyCorpusPairs) {
    throw InputError("toy corpus: " + std::to_string(total) +
                     " pairs asked for; the generator makes at most " +
                     std::to_string(kMaxToyCorpusPairs) + " in all (train + dev + test)");
  }
  // One stream per split: dev and test stay the same whatever the train size.
  toy::ToyRandom seeds(options.seed);
  const uint64_t dev_seed = seeds.next();
  const uint64_t test_seed = seeds.next();
  const uint64_t train_seed = seeds.next();

  ToySplits splits;
  std::unordered_set<std::string> seen;
  seen.reserve(static_cast<size_t>(total));
  draw_split(dev_seed, options.dev, seen, splits.dev, splits.dev_reordered);
  draw_split(test_seed, options.test, seen, splits.test, splits.test_reordered);
  draw_split(train_seed, options.train, seen, splits.train, splits.train_reordered);
  return splits;
}

void write_toy_splits(const std::filesystem::path& dir, const ToySplits& splits) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) throw_write_error(dir.string(), error.value());
  const std::pair<const char*, const std::vector<SentencePair>*> named[] = {
      {"train", &splits.train}, {"dev", &splits.dev}, {"test", &splits.test}};
  for (const auto& [name, pairs] : named) {
    write_lines(dir / (std::string(name) + ".en"), *pairs, &SentencePair::source);
    write_lines(dir / (std::string(name) + ".de"), *pairs, &SentencePair::target);
  }
}

void write_toy_corpus(const std::filesystem::path& dir, const ToyCorpusOptions& options) {
  write_toy_splits(dir, generate_toy_corpus(options));
}

std::string word_for_word_baseline(const std::string& english) {
  const auto& dictionary = baseline_dictionary();
  std::string result;
  auto emit = [&result](const std::string& word, bool punctuation) {
    if (word.empty()) return;
    if (!result.empty() && !punctuation) result += ' ';
    result += word;
  };
  size_t start = 0;
  while (start < english.size()) {
    size_t end = english.find(' ', start);
    if (end == std::string::npos) end = english.size();
    std::string token = english.substr(start, end - start);
    start = end + 1;
    std::string trailing;
    while (!token.empty() && (token.back() == ',' || token.back() == '.' || token.back() == '?')) {
      trailing.insert(trailing.begin(), token.back());
      token.pop_back();
    }
    std::string key = token;
    for (auto& c : key) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    const auto found = dictionary.find(key);
    emit(found == dictionary.end() ? token : found->second, false);  // names stay as they are
    emit(trailing, true);
  }
  return toy::capitalize(result);
}

namespace {

std::vector<std::string> bare_words(const std::string& sentence) {  // lowercased, without , . ?
  std::vector<std::string> words;
  size_t start = 0;
  while (start <= sentence.size()) {
    size_t end = sentence.find(' ', start);
    if (end == std::string::npos) end = sentence.size();
    std::string word = sentence.substr(start, end - start);
    while (!word.empty() && (word.back() == ',' || word.back() == '.' || word.back() == '?')) word.pop_back();
    for (auto& c : word) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    if (end > start) words.push_back(word);
    start = end + 1;
  }
  return words;
}

}  // namespace

std::vector<std::pair<int, int>> toy_reference_alignment(const std::string& english, const std::string& german) {
  static const std::unordered_set<std::string> function_words = {
      "the", "a", "an", "this", "these", "my", "our", "not", "cannot", "do", "does", "did", "to", "any",
      "for", "with", "has", "have", "will", "can", "be", "am", "is", "are", "was", "were", "been",
      "because", "although", "if", "that"};
  const auto& dictionary = baseline_dictionary();
  const auto source = bare_words(english), target = bare_words(german);
  std::vector<std::pair<int, int>> links;
  for (size_t i = 0; i < source.size(); ++i) {
    const auto& word = source[i];
    if (function_words.count(word) > 0 || std::count(source.begin(), source.end(), word) != 1) continue;
    const auto found = dictionary.find(word);
    std::string translation = found == dictionary.end() ? word : found->second;  // names stay
    if (translation.empty() || translation.find(' ') != std::string::npos) continue;
    for (auto& c : translation) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    std::vector<int> matches;
    for (size_t j = 0; j < target.size(); ++j) {
      const auto& candidate = target[j];
      const bool inflected = translation.size() >= 4 && candidate.rfind(translation, 0) == 0 &&
                             candidate.size() <= translation.size() + 3;
      if (candidate == translation || inflected) matches.push_back(static_cast<int>(j));
    }
    if (matches.size() == 1) links.emplace_back(static_cast<int>(i), matches.front());
  }
  return links;
}

}  // namespace trafo::data
