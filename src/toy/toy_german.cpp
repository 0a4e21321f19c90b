// German noun phrases and clauses: articles and adjective endings by gender, number and
// case (nominative, accusative, dative), conjugation, and the order of the clause's parts.
#include <stdexcept>
#include <string>

#include "toy_render.h"

namespace trafo::data::toy {
namespace {

enum Case { kNominative, kAccusative, kDative };

// Rows: masculine, feminine, neuter, plural; columns: the cases.
using Table = const char* const[4][3];

Table kDefiniteArticle = {
    {"der", "den", "dem"}, {"die", "die", "der"}, {"das", "das", "dem"}, {"die", "die", "den"}};
// Endings of dies-, the strong declension of an article.
Table kDiesEnding = {{"er", "en", "em"}, {"e", "e", "er"}, {"es", "es", "em"}, {"e", "e", "en"}};
// Endings of ein-, kein-, mein-, unser- (ein has no plural).
Table kEinEnding = {{"", "en", "em"}, {"e", "e", "er"}, {"", "", "em"}, {"e", "e", "en"}};
// Adjective endings after der and dies-.
Table kWeakEnding = {{"e", "en", "en"}, {"e", "e", "en"}, {"e", "e", "en"}, {"en", "en", "en"}};
// Adjective endings after ein-words.
Table kMixedEnding = {{"er", "en", "en"}, {"e", "e", "en"}, {"es", "es", "en"}, {"en", "en", "en"}};
// Adjective endings with no article (only plurals here: "drei kleine Hunde").
Table kStrongEnding = {{"er", "en", "em"}, {"e", "e", "er"}, {"es", "es", "em"}, {"e", "e", "en"}};

int slot_of(const Noun& noun, bool plural) {
  if (plural) return 3;
  switch (noun.gender) {
    case Gender::kMasculine: return 0;
    case Gender::kFeminine: return 1;
    case Gender::kNeuter: return 2;
  }
  return 0;
}

// "müde" + "en" is "müden": a stem's final e swallows the ending's first.
std::string with_ending(std::string_view stem, std::string_view ending) {
  if (!stem.empty() && stem.back() == 'e' && !ending.empty() && ending.front() == 'e') {
    ending.remove_prefix(1);
  }
  return std::string(stem) + std::string(ending);
}

std::string noun_form(const Noun& noun, bool plural, Case grammatical_case) {
  if (!plural) {
    if (grammatical_case == kNominative || noun.german_oblique.empty()) {
      return std::string(noun.german);
    }
    return std::string(noun.german_oblique);
  }
  std::string form(noun.german_plural);
  // The dative plural ends in -n: "den Kindern", but "den Frauen", "den Autos".
  if (grammatical_case == kDative && form.back() != 'n' && form.back() != 's') form += 'n';
  return form;
}

// `negated` turns "ein"/no article into "kein": "sieht keinen Hund", "keine Hunde".
Words noun_phrase(const NounPhrase& phrase, Case grammatical_case, bool negated, int unit,
                  int negation_unit) {
  if (phrase.kind == NounPhrase::Kind::kPronoun) {
    if (grammatical_case != kNominative) throw std::invalid_argument("pronouns are subjects");
    return {{std::string(pronouns()[static_cast<int>(phrase.pronoun)].german), unit}};
  }
  if (phrase.kind == NounPhrase::Kind::kName) return {{phrase.word, unit}};

  const Noun& noun = find_noun(phrase.word);
  const bool plural = is_plural(phrase);
  const int slot = slot_of(noun, plural);
  Words words;
  Table* adjective_endings = &kStrongEnding;
  auto article = [&](const char* stem, Table& endings, int article_unit) {
    words.push_back({stem + std::string(endings[slot][grammatical_case]), article_unit});
  };
  switch (phrase.determiner) {
    case Determiner::kThe:
      words.push_back({kDefiniteArticle[slot][grammatical_case], unit});
      adjective_endings = &kWeakEnding;
      break;
    case Determiner::kThis:
      article("dies", kDiesEnding, unit);
      adjective_endings = &kWeakEnding;
      break;
    case Determiner::kA:
      article(negated ? "kein" : "ein", kEinEnding, negated ? negation_unit : unit);
      adjective_endings = &kMixedEnding;
      break;
    case Determiner::kMy:
      article("mein", kEinEnding, unit);
      adjective_endings = &kMixedEnding;
      break;
    case Determiner::kOur:
      article("unser", kEinEnding, unit);
      adjective_endings = &kMixedEnding;
      break;
    case Determiner::kNone:
      if (negated) {
        article("kein", kEinEnding, negation_unit);
        adjective_endings = &kMixedEnding;
      }
      break;
    case Determiner::kNumber:
      words.push_back({german_number(phrase.count), unit});
      break;
  }
  for (const auto& adjective : phrase.adjectives) {
    const std::string_view stem = find_adjective(adjective).german;
    words.push_back({with_ending(stem, (*adjective_endings)[slot][grammatical_case]), unit});
  }
  words.push_back({noun_form(noun, plural, grammatical_case), unit});
  return words;
}

// Index into the four present forms: ich, du, er/sie/es, and the plural.
int form_index(const Agreement& agreement) {
  if (agreement.plural) return 3;
  return static_cast<int>(agreement.person);
}

const char* const kHaben[] = {"habe", "hast", "hat", "haben"};
const char* const kSein[] = {"bin", "bist", "ist", "sind"};
const char* const kWar[] = {"war", "warst", "war", "waren"};
const char* const kWerden[] = {"werde", "wirst", "wird", "werden"};
const char* const kKoennen[] = {"kann", "kannst", "kann", "können"};

std::string present_form(const Verb& verb, int index) {
  const std::string_view forms[] = {verb.german_ich, verb.german_du, verb.german_er, verb.german};
  return std::string(forms[index]);
}

bool negated_by_kein(const Clause& clause) {
  if (!clause.negated || !clause.object || clause.object->kind != NounPhrase::Kind::kNoun) {
    return false;
  }
  return clause.object->determiner == Determiner::kA ||
         clause.object->determiner == Determiner::kNone;
}

}  // namespace

GermanClauseWords german_clause(const Clause& clause, const Verb* verb, ClauseOrder order,
                                int index) {
  auto unit = [index](Role role) { return unit_of(index, role); };
  const int person = form_index(agreement_of(clause.subject));

  Word finite;
  Word nonfinite;  // empty text when the tense has none
  if (verb == nullptr) {
    switch (clause.tense) {
      case Tense::kPresent: finite = {kSein[person], unit(kVerbRole)}; break;
      case Tense::kPast: finite = {kWar[person], unit(kVerbRole)}; break;
      case Tense::kPerfect:
        finite = {kSein[person], unit(kAuxiliaryRole)};
        nonfinite = {"gewesen", unit(kVerbRole)};
        break;
      case Tense::kFuture:
        finite = {kWerden[person], unit(kAuxiliaryRole)};
        nonfinite = {"sein", unit(kVerbRole)};
        break;
      case Tense::kCan: throw std::invalid_argument("\"can be\" is not in the toy grammar");
    }
  } else {
    const char* const* auxiliary = verb->auxiliary == Auxiliary::kSein ? kSein : kHaben;
    switch (clause.tense) {
      case Tense::kPresent: finite = {present_form(*verb, person), unit(kVerbRole)}; break;
      case Tense::kPast:  // English "saw" has no word for the auxiliary
      case Tense::kPerfect:
        finite = {auxiliary[person],
                  clause.tense == Tense::kPast ? kNoUnit : unit(kAuxiliaryRole)};
        nonfinite = {std::string(verb->german_participle), unit(kVerbRole)};
        break;
      case Tense::kFuture:
        finite = {kWerden[person], unit(kAuxiliaryRole)};
        nonfinite = {std::string(verb->german), unit(kVerbRole)};
        break;
      case Tense::kCan:
        finite = {kKoennen[person], unit(kAuxiliaryRole)};
        nonfinite = {std::string(verb->german), unit(kVerbRole)};
        break;
    }
  }

  // The middle field: dative before accusative, "nicht" after the objects but before a
  // prepositional phrase or a predicate adjective.
  Words middle;
  if (clause.recipient) {
    append(middle, noun_phrase(*clause.recipient, kDative, false, unit(kRecipientRole),
                               unit(kNegationRole)));
  }
  const bool kein = negated_by_kein(clause);
  if (clause.object) {
    append(middle, noun_phrase(*clause.object, kAccusative, kein, unit(kObjectRole),
                               unit(kNegationRole)));
  }
  if (clause.negated && !kein) middle.push_back({"nicht", unit(kNegationRole)});
  if (clause.companion) {
    middle.push_back({"mit", unit(kCompanionRole)});
    append(middle, noun_phrase(*clause.companion, kDative, false, unit(kCompanionRole),
                               unit(kNegationRole)));
  }
  if (!clause.predicate.empty()) {
    middle.push_back(
        {std::string(find_adjective(clause.predicate).german), unit(kPredicateRole)});
  }

  const Words subject = noun_phrase(clause.subject, kNominative, false, unit(kSubjectRole),
                                    unit(kNegationRole));
  GermanClauseWords result;
  Words& words = result.words;
  switch (order) {
    case ClauseOrder::kStatement:
      append(words, subject);
      words.push_back(finite);
      break;
    case ClauseOrder::kInverted:
    case ClauseOrder::kQuestion:
      words.push_back(finite);
      append(words, subject);
      break;
    case ClauseOrder::kSubordinate: append(words, subject); break;
  }
  append(words, middle);
  if (!nonfinite.text.empty()) words.push_back(nonfinite);
  if (order == ClauseOrder::kSubordinate) words.push_back(finite);
  result.finite_verb = finite.text;
  result.nonfinite_verb = nonfinite.text;
  return result;
}

}  // namespace trafo::data::toy
