// The bundled toy English→German language pair: a lexicon of a few hundred words and a
// grammar whose German word order departs from the English one (verb second after a fronted
// adverb, verb-final subordinate clauses, the perfect split around the objects, "kein" for
// "not a"), so that translating it needs attention. data/README.md describes the pair.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace trafo::data {

struct ToyCorpusOptions {
  int64_t train = 50000;  // training pairs
  int64_t dev = 1000;     // development pairs
  int64_t test = 1000;    // test pairs
  uint64_t seed = 1;      // the same seed gives the same corpus with every compiler and library
};

// The most pairs one corpus may hold in all: memory, not the grammar, sets the limit.
inline constexpr int64_t kMaxToyCorpusPairs = 2'000'000;

struct SentencePair {
  std::string source;  // English
  std::string target;  // German
};

// No source sentence occurs twice, within a split or across splits.
struct ToySplits {
  std::vector<SentencePair> train, dev, test;
  // Pairs whose German order a monotone word-for-word translation cannot reproduce.
  int64_t train_reordered = 0, dev_reordered = 0, test_reordered = 0;
};

// --- The grammar: one sentence as the generator draws it, before it is rendered. ---
// Words are named by their English form in the lexicon ("dog", "look for", "small", "Anna").

enum class Determiner {
  kThe,     // der/die/das; weak adjective endings
  kA,       // ein (singular only); "not a" becomes "kein"; mixed endings
  kThis,    // this/these, dieser; weak endings
  kMy,      // mein; mixed endings
  kOur,     // unser; mixed endings
  kNone,    // a bare plural ("dogs"); strong endings; "not ... any dogs" becomes "keine"
  kNumber,  // a written-out number 2..99 with a plural noun; strong endings
};

enum class Pronoun { kI, kYou, kHe, kShe, kWe, kThey };  // subjects only; "you" is "du"

struct NounPhrase {
  enum class Kind { kNoun, kName, kPronoun };
  Kind kind = Kind::kNoun;
  std::string word;  // the English noun ("dog") or name ("Anna")
  Pronoun pronoun = Pronoun::kI;
  Determiner determiner = Determiner::kThe;
  bool plural = false;                  // implied by kNone and kNumber
  int count = 0;                        // 2..99, with kNumber
  std::vector<std::string> adjectives;  // English, in English order ("small", "black")
};

enum class Tense {
  kPresent,  // sees / sieht
  kPast,     // saw / hat ... gesehen (German speaks of the past in the perfect)
  kPerfect,  // has seen / hat ... gesehen
  kFuture,   // will see / wird ... sehen
  kCan,      // can see / kann ... sehen
};

struct Clause {
  NounPhrase subject;
  std::string verb;                     // English base form: "see", "look for", "be", "say"
  std::optional<NounPhrase> object;     // direct object: German accusative
  std::optional<NounPhrase> recipient;  // "to ...": German dative, before the object
  std::optional<NounPhrase> companion;  // "with ...": German "mit" + dative
  std::string predicate;                // the adjective after "be"
  Tense tense = Tense::kPresent;
  bool negated = false;
};

enum class Connective {
  kNone,
  kBecause,   // weil
  kAlthough,  // obwohl
  kIf,        // wenn
  kThat,      // dass, after a verb of saying or thinking ("say", "know", "think", ...)
};

struct Sentence {
  Clause main;
  std::string adverb;   // fronted time adverb ("today"), empty for none; German inverts
  bool question = false;  // yes/no question: German verb first, English do-support
  Connective connective = Connective::kNone;
  std::optional<Clause> subordinate;  // the clause after the connective: German verb-final
  bool subordinate_first = false;     // "Because ..., the man laughs"; German inverts
};

// One German clause of a rendered sentence, for checks of word order.
struct GermanClause {
  std::vector<std::string> words;  // without commas and final punctuation, as in the sentence
  bool subordinate = false;        // introduced by weil/obwohl/wenn/dass: verb-final
  std::string finite_verb;         // the conjugated verb or auxiliary
  std::string nonfinite_verb;      // participle or infinitive; empty when there is none
};

struct ToySample {
  Sentence sentence;
  SentencePair pair;
  std::vector<GermanClause> german_clauses;  // in the order they appear
  bool reordered = false;  // German order of corresponding words differs from the English one
};

// Renders one sentence in both languages. Throws std::invalid_argument for a word outside
// the lexicon or a structure the grammar does not produce ("a dogs", a pronoun object).
ToySample render_toy_sentence(const Sentence& sentence);

// `count` sentences as the generator draws them for `seed`, repeats included.
std::vector<ToySample> sample_toy_sentences(uint64_t seed, int64_t count);

// The corpus for `options`. Dev is drawn first, then test, then train, each from its own
// stream, so dev and test stay the same whatever the train size. Throws trafo::InputError
// for negative counts or more than kMaxToyCorpusPairs pairs.
ToySplits generate_toy_corpus(const ToyCorpusOptions& options);

// Writes DIR/{train,dev,test}.{en,de}, one sentence a line, creating DIR. Throws
// trafo::InputError when it cannot.
void write_toy_splits(const std::filesystem::path& dir, const ToySplits& splits);
void write_toy_corpus(const std::filesystem::path& dir, const ToyCorpusOptions& options);

// The monotone word-for-word baseline: each English word replaced by its dictionary
// translation from the lexicon, in English order ("The man does not see the dog." →
// "Der Mann nicht sehen der Hund."). data/README.md reports its BLEU.
std::string word_for_word_baseline(const std::string& english);

// A reference word alignment of a toy pair for the words it is sure of: each English content word
// (noun, name, adjective, verb, adverb, number, pronoun; not the grammar's function words) that occurs
// once and whose lexicon translation matches exactly one German word (inflected: the translation
// plus at most 3 letters). Pairs (English word, German word) of whitespace-separated words, 0-based.
std::vector<std::pair<int, int>> toy_reference_alignment(const std::string& english, const std::string& german);

}  // namespace trafo::data
