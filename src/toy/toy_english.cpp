// English noun phrases and clauses: a/an, this/these, plurals, third-person -s, and
// do-support in questions and negation ("Does the man see ...", "does not see").
#include <stdexcept>
#include <string>

#include "toy_render.h"

namespace trafo::data::toy {
namespace {

bool starts_with_vowel(std::string_view word) {
  return !word.empty() && std::string_view("aeiou").find(word.front()) != std::string_view::npos;
}

// Adds each word of a possibly multi-word form ("look for").
void add_words(Words& words, std::string_view text, int unit) {
  while (!text.empty()) {
    const size_t space = text.find(' ');
    words.push_back({std::string(text.substr(0, space)), unit});
    text = space == std::string_view::npos ? std::string_view() : text.substr(space + 1);
  }
}

// `any` marks a negated bare plural: "does not see any dogs".
Words noun_phrase(const NounPhrase& phrase, bool any, int unit) {
  if (phrase.kind == NounPhrase::Kind::kPronoun) {
    return {{std::string(pronouns()[static_cast<int>(phrase.pronoun)].english), unit}};
  }
  if (phrase.kind == NounPhrase::Kind::kName) return {{phrase.word, unit}};

  const Noun& noun = find_noun(phrase.word);
  const bool plural = is_plural(phrase);
  const std::string_view first_word =
      phrase.adjectives.empty() ? noun.english : std::string_view(phrase.adjectives.front());
  Words words;
  switch (phrase.determiner) {
    case Determiner::kThe: words.push_back({"the", unit}); break;
    case Determiner::kA:
      words.push_back({starts_with_vowel(first_word) ? "an" : "a", unit});
      break;
    case Determiner::kThis: words.push_back({plural ? "these" : "this", unit}); break;
    case Determiner::kMy: words.push_back({"my", unit}); break;
    case Determiner::kOur: words.push_back({"our", unit}); break;
    case Determiner::kNone:
      if (any) words.push_back({"any", kNoUnit});
      break;
    case Determiner::kNumber: words.push_back({english_number(phrase.count), unit}); break;
  }
  for (const auto& adjective : phrase.adjectives) words.push_back({adjective, unit});
  words.push_back({std::string(plural ? noun.english_plural : noun.english), unit});
  return words;
}

// The verb group in statement order: auxiliary or do-support first, then "not", then the
// verb ("does not see", "has seen", "will not be").
Words verb_group(const Clause& clause, const Verb* verb, const Agreement& agreement,
                 bool question, int index) {
  auto unit = [index](Role role) { return unit_of(index, role); };
  const bool third_singular = agreement.person == PronounPerson::kThird && !agreement.plural;
  Words group;
  auto negation = [&] {
    if (clause.negated) group.push_back({"not", unit(kNegationRole)});
  };
  auto auxiliary = [&](const char* word, int word_unit, std::string_view form) {
    group.push_back({word, word_unit});
    negation();
    add_words(group, form, unit(kVerbRole));
  };
  if (verb == nullptr) {
    const bool you_or_plural = agreement.plural || agreement.person == PronounPerson::kSecond;
    switch (clause.tense) {
      case Tense::kPresent:
        group.push_back({you_or_plural                                   ? "are"
                         : agreement.person == PronounPerson::kFirst ? "am"
                                                                          : "is",
                         unit(kVerbRole)});
        negation();
        break;
      case Tense::kPast:
        group.push_back({you_or_plural ? "were" : "was", unit(kVerbRole)});
        negation();
        break;
      case Tense::kPerfect:
        auxiliary(third_singular ? "has" : "have", unit(kAuxiliaryRole), "been");
        break;
      case Tense::kFuture: auxiliary("will", unit(kAuxiliaryRole), "be"); break;
      case Tense::kCan: throw std::invalid_argument("\"can be\" is not in the toy grammar");
    }
    return group;
  }
  const bool do_support = clause.negated || question;
  switch (clause.tense) {
    case Tense::kPresent:
      if (do_support) {
        auxiliary(third_singular ? "does" : "do", kNoUnit, verb->english);
      } else {
        add_words(group, third_singular ? verb->english_s : verb->english, unit(kVerbRole));
      }
      break;
    case Tense::kPast:
      if (do_support) {
        auxiliary("did", kNoUnit, verb->english);
      } else {
        add_words(group, verb->english_past, unit(kVerbRole));
      }
      break;
    case Tense::kPerfect:
      auxiliary(third_singular ? "has" : "have", unit(kAuxiliaryRole), verb->english_participle);
      break;
    case Tense::kFuture: auxiliary("will", unit(kAuxiliaryRole), verb->english); break;
    case Tense::kCan: auxiliary("can", unit(kAuxiliaryRole), verb->english); break;
  }
  return group;
}

}  // namespace

Words english_clause(const Clause& clause, const Verb* verb, bool question, int index) {
  auto unit = [index](Role role) { return unit_of(index, role); };
  const Words subject = noun_phrase(clause.subject, false, unit(kSubjectRole));
  Words group = verb_group(clause, verb, agreement_of(clause.subject), question, index);

  Words words;
  if (question) {
    words.push_back(group.front());  // "Does the man see ...?", "Is the dog small?"
    append(words, subject);
    words.insert(words.end(), group.begin() + 1, group.end());
  } else {
    append(words, subject);
    if (group.size() >= 2 && group[0].text == "can" && group[1].text == "not") {
      group[0].text = "cannot";
      group.erase(group.begin() + 1);
    }
    append(words, group);
  }
  if (clause.object) {
    const bool any = clause.negated && clause.object->kind == NounPhrase::Kind::kNoun &&
                     clause.object->determiner == Determiner::kNone;
    append(words, noun_phrase(*clause.object, any, unit(kObjectRole)));
  }
  if (clause.recipient) {
    words.push_back({"to", unit(kRecipientRole)});
    append(words, noun_phrase(*clause.recipient, false, unit(kRecipientRole)));
  }
  if (clause.companion) {
    words.push_back({"with", unit(kCompanionRole)});
    append(words, noun_phrase(*clause.companion, false, unit(kCompanionRole)));
  }
  if (!clause.predicate.empty()) words.push_back({clause.predicate, unit(kPredicateRole)});
  return words;
}

}  // namespace trafo::data::toy
