// The toy language pair's lexicon: every English word with its German forms, and the
// semantic tags that keep sentences plausible ("the dog eats the apple", never "the apple
// eats the dog"). Private to src/data/toy_*.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace trafo::data::toy {

// What a noun is; verbs and adjectives say which tags they go with.
enum Tag : uint32_t {
  kPerson = 1u << 0,
  kAnimal = 1u << 1,
  kFlyer = 1u << 2,  // birds: may fly
  kThing = 1u << 3,  // any countable object
  kPortable = 1u << 4,
  kVehicle = 1u << 5,
  kBuildable = 1u << 6,
  kOpenable = 1u << 7,
  kContainer = 1u << 8,
  kClothes = 1u << 9,
  kReadable = 1u << 10,
  kWritable = 1u << 11,
  kSong = 1u << 12,
  kStory = 1u << 13,
  kFood = 1u << 14,
  kBaked = 1u << 15,
  kDrink = 1u << 16,
  kMass = 1u << 17,      // uncountable: never "a", never plural
  kCookable = 1u << 18,  // soup, eggs, vegetables: what one cooks
};
inline constexpr uint32_t kAnimate = kPerson | kAnimal;

enum class Gender { kMasculine, kFeminine, kNeuter };

struct Noun {
  std::string_view english;
  std::string_view english_plural;
  Gender gender;
  std::string_view german;
  std::string_view german_plural;   // empty for mass nouns
  std::string_view german_oblique;  // accusative and dative singular of weak masculines
                                    // ("Jungen"); empty when it equals `german`
  uint32_t tags;
};

struct Adjective {
  std::string_view english;
  std::string_view german;  // the stem, also the predicative form
  int order;                // English order before a noun: 0 quality, 1 size, 2 age, 3 colour
  uint32_t fits;            // tags of the nouns it describes
};

enum class Auxiliary { kHaben, kSein };

// How a verb is used; a verb may allow several.
enum Frame : uint32_t {
  kIntransitive = 1u << 0,  // "the dog sleeps"
  kTransitive = 1u << 1,    // "the dog sees the cat"
  kDitransitive = 1u << 2,  // "the man gives the ball to the child"
};

struct Verb {
  std::string_view english, english_s, english_past, english_participle;
  std::string_view german, german_ich, german_du, german_er, german_participle;
  Auxiliary auxiliary;  // of the German perfect
  uint32_t frames;
  uint32_t subjects;    // tags of its subjects
  uint32_t objects;     // tags of its direct objects (accusative)
  uint32_t recipients;  // tags of "to" recipients (dative)
  uint32_t companions;  // tags after "with" ("mit" + dative); 0: none
};

// Verbs that take a that-clause ("Anna says that ..."); their subjects are people.
struct ClauseVerb {
  Verb forms;
  bool past;      // may stand in the past and perfect ("Anna said that ...")
  bool negation;  // may be negated ("Anna does not believe that ...")
};

enum class PronounPerson { kFirst, kSecond, kThird };

struct PronounEntry {
  std::string_view english;
  std::string_view german;
  PronounPerson person;
  bool plural;
};

// Tense bits of TenseMask, one per trafo::data::Tense value.
using TenseMask = uint32_t;
constexpr TenseMask tense_bit(Tense tense) { return 1u << static_cast<int>(tense); }

struct Adverb {
  std::string_view english;
  std::string_view german;
  TenseMask tenses;  // the tenses it goes with ("yesterday": past only)
};

const std::vector<Noun>& nouns();
const std::vector<Adjective>& adjectives();
const std::vector<Verb>& verbs();
const std::vector<ClauseVerb>& clause_verbs();
const std::vector<PronounEntry>& pronouns();  // in the order of trafo::data::Pronoun
const std::vector<std::string_view>& names();
const std::vector<Adverb>& adverbs();

// Lookups by the English word; they throw std::invalid_argument for words outside the lexicon.
const Noun& find_noun(std::string_view english);
const Adjective& find_adjective(std::string_view english);
const Verb& find_verb(std::string_view english);
const ClauseVerb& find_clause_verb(std::string_view english);
const Adverb& find_adverb(std::string_view english);
bool is_name(std::string_view name);

// Cardinal numbers 2..99 written out: "twenty-one", "einundzwanzig".
std::string english_number(int number);
std::string german_number(int number);

}  // namespace trafo::data::toy
