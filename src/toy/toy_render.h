// Rendering a toy sentence into words, shared by toy_english.cpp, toy_german.cpp and
// toy_render.cpp. Private to src/data/toy_*.cpp.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "toy_lexicon.h"
#include "trafo/toy/toy_corpus.h"

namespace trafo::data::toy {

// What a word stands for, the same in both languages: the reordering measure compares the
// order of these units in the English and the German sentence.
enum Role : int {
  kSubjectRole,
  kAuxiliaryRole,  // has, will, can / hat, wird, kann
  kVerbRole,       // the lexical verb or "be"
  kNegationRole,   // not / nicht, kein
  kObjectRole,
  kRecipientRole,
  kCompanionRole,  // with ... / mit ...
  kPredicateRole,  // the adjective after "be"
  kRoleCount,
};

inline constexpr int kNoUnit = -1;                  // a word with no counterpart ("does")
inline constexpr int kAdverbUnit = 2 * kRoleCount;  // units of clauses 0 and 1 come first
inline constexpr int kConnectiveUnit = kAdverbUnit + 1;

inline int unit_of(int clause, Role role) { return clause * kRoleCount + role; }

struct Word {
  std::string text;
  int unit = kNoUnit;
};
using Words = std::vector<Word>;

void append(Words& words, const Words& more);

// Person and number of a subject, which the verb agrees with.
struct Agreement {
  PronounPerson person = PronounPerson::kThird;
  bool plural = false;
};
Agreement agreement_of(const NounPhrase& subject);
bool is_plural(const NounPhrase& phrase);

// The German order of a clause's parts.
enum class ClauseOrder {
  kStatement,    // subject, finite verb, ... (verb second)
  kInverted,     // after a fronted adverb or clause: finite verb, subject, ...
  kQuestion,     // finite verb first
  kSubordinate,  // subject, ..., finite verb last
};

// `verb` is null for "be". English statements and subordinate clauses share one order.
Words english_clause(const Clause& clause, const Verb* verb, bool question, int index);

struct GermanClauseWords {
  Words words;
  std::string finite_verb;
  std::string nonfinite_verb;
};
GermanClauseWords german_clause(const Clause& clause, const Verb* verb, ClauseOrder order,
                                int index);

// "dog" → "Dog"; German umlauts too ("öffnet" → "Öffnet").
std::string capitalize(std::string_view word);

}  // namespace trafo::data::toy
