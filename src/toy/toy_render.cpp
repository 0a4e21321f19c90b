// A toy sentence in both languages: checks the structure against the grammar, puts the
// clauses together with their connective and punctuation, and measures reordering.
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "toy_render.h"

namespace trafo::data::toy {
namespace {

void require(bool condition, const std::string& message) {
  if (!condition) throw std::invalid_argument("toy sentence: " + message);
}

enum class PhraseRole { kSubject, kOther };

void check_noun_phrase(const NounPhrase& phrase, PhraseRole role) {
  switch (phrase.kind) {
    case NounPhrase::Kind::kPronoun:
      require(role == PhraseRole::kSubject, "pronouns are subjects only");
      require(phrase.adjectives.empty(), "pronouns take no adjectives");
      return;
    case NounPhrase::Kind::kName:
      require(is_name(phrase.word), "unknown name \"" + phrase.word + "\"");
      require(phrase.adjectives.empty(), "names take no adjectives");
      return;
    case NounPhrase::Kind::kNoun: break;
  }
  const Noun& noun = find_noun(phrase.word);
  for (const auto& adjective : phrase.adjectives) find_adjective(adjective);
  const bool plural = is_plural(phrase);
  require(!(phrase.determiner == Determiner::kA && plural), "\"a\" with a plural");
  require(!((noun.tags & kMass) && plural), "\"" + phrase.word + "\" has no plural");
  require(!((noun.tags & kMass) && phrase.determiner == Determiner::kA),
          "\"" + phrase.word + "\" takes no \"a\"");
  if (phrase.determiner == Determiner::kNumber) {
    require(phrase.count >= 2 && phrase.count <= 99, "numbers run from 2 to 99");
  }
}

bool is_number(const std::optional<NounPhrase>& phrase) {
  return phrase && phrase->kind == NounPhrase::Kind::kNoun &&
         phrase->determiner == Determiner::kNumber;
}

// Checks a clause and finds its verb: null for "be".
const Verb* check_clause(const Clause& clause, bool reporting) {
  check_noun_phrase(clause.subject, PhraseRole::kSubject);
  for (const auto* phrase : {&clause.object, &clause.recipient, &clause.companion}) {
    if (*phrase) check_noun_phrase(**phrase, PhraseRole::kOther);
  }
  const bool complements = clause.object || clause.recipient || clause.companion;
  if (reporting) {
    require(!complements && clause.predicate.empty(),
            "\"" + clause.verb + " that\" takes no objects");
    return &find_clause_verb(clause.verb).forms;
  }
  if (clause.verb == "be") {
    require(!complements, "\"be\" takes an adjective, no objects");
    require(!clause.predicate.empty(), "\"be\" needs an adjective");
    find_adjective(clause.predicate);
    require(clause.tense != Tense::kCan, "\"can be\" is not in the toy grammar");
    return nullptr;
  }
  const Verb& verb = find_verb(clause.verb);
  require(clause.predicate.empty(), "only \"be\" takes an adjective");
  require(!clause.recipient || clause.object, "a recipient needs an object");
  const uint32_t frame = clause.recipient ? kDitransitive
                         : clause.object  ? kTransitive
                                          : kIntransitive;
  require((verb.frames & frame) != 0, "\"" + clause.verb + "\" does not take this frame");
  require(!clause.companion || verb.companions != 0, "\"" + clause.verb + "\" takes no \"with\"");
  // "nicht drei Hunde" needs a contrast the toy grammar does not make.
  require(!(clause.negated && (is_number(clause.object) || is_number(clause.recipient))),
          "negated clauses take no numbered objects");
  return &verb;
}

std::string join(const Words& words, const char* end) {
  std::string text;
  for (const auto& word : words) {
    if (!text.empty() && word.text != ",") text += ' ';
    text += word.text;
  }
  return text + end;
}

// True when some German unit comes before a unit that precedes it in English.
bool is_reordered(const Words& english, const Words& german) {
  std::unordered_map<int, int> first_position;
  for (size_t i = 0; i < english.size(); ++i) {
    if (english[i].unit != kNoUnit) first_position.emplace(english[i].unit, static_cast<int>(i));
  }
  int last = -1;
  for (const auto& word : german) {
    const auto found = first_position.find(word.unit);
    if (found == first_position.end()) continue;
    if (found->second < last) return true;
    last = found->second;
  }
  return false;
}

std::vector<std::string> texts(const Words& words) {
  std::vector<std::string> result;
  for (const auto& word : words) result.push_back(word.text);
  return result;
}

}  // namespace

void append(Words& words, const Words& more) {
  words.insert(words.end(), more.begin(), more.end());
}

bool is_plural(const NounPhrase& phrase) {
  if (phrase.kind == NounPhrase::Kind::kPronoun) {
    return pronouns()[static_cast<int>(phrase.pronoun)].plural;
  }
  if (phrase.kind == NounPhrase::Kind::kName) return false;
  return phrase.plural || phrase.determiner == Determiner::kNone ||
         phrase.determiner == Determiner::kNumber;
}

Agreement agreement_of(const NounPhrase& subject) {
  if (subject.kind == NounPhrase::Kind::kPronoun) {
    const auto& pronoun = pronouns()[static_cast<int>(subject.pronoun)];
    return {pronoun.person, pronoun.plural};
  }
  return {PronounPerson::kThird, is_plural(subject)};
}

std::string capitalize(std::string_view word) {
  std::string result(word);
  if (result.empty()) return result;
  if (result[0] >= 'a' && result[0] <= 'z') {
    result[0] = static_cast<char>(result[0] - 'a' + 'A');
  } else if (result.size() >= 2 && result[0] == '\xC3') {
    // ä ö ü (C3 A4, C3 B6, C3 BC) → Ä Ö Ü (C3 84, C3 96, C3 9C).
    const char second = result[1];
    if (second == '\xA4' || second == '\xB6' || second == '\xBC') {
      result[1] = static_cast<char>(second - 0x20);
    }
  }
  return result;
}

}  // namespace trafo::data::toy

namespace trafo::data {

ToySample render_toy_sentence(const Sentence& sentence) {
  using namespace toy;
  const bool reporting = sentence.connective == Connective::kThat;
  const bool adverbial = sentence.connective != Connective::kNone && !reporting;
  require(sentence.subordinate.has_value() == (sentence.connective != Connective::kNone),
          "a connective goes with a subordinate clause");
  require(!sentence.question || !adverbial, "questions take no because/although/if clause");
  require(!sentence.subordinate_first || (adverbial && sentence.adverb.empty() &&
                                          !sentence.question),
          "only a because/although/if clause goes first, without a fronted adverb");
  const Verb* main_verb = check_clause(sentence.main, reporting);
  const Verb* subordinate_verb =
      sentence.subordinate ? check_clause(*sentence.subordinate, false) : nullptr;
  if (!sentence.adverb.empty()) {
    require(!sentence.question, "questions take no fronted adverb");
    const TenseMask tense = 1u << static_cast<int>(sentence.main.tense);
    require((find_adverb(sentence.adverb).tenses & tense) != 0,
            "\"" + sentence.adverb + "\" does not go with this tense");
  }

  static const char* const kEnglishConnective[] = {"", "because", "although", "if", "that"};
  static const char* const kGermanConnective[] = {"", "weil", "obwohl", "wenn", "dass"};
  const int connective = static_cast<int>(sentence.connective);

  ToySample sample;
  sample.sentence = sentence;
  Words english;
  Words german;
  GermanClauseWords main_german = german_clause(
      sentence.main, main_verb,
      sentence.question ? ClauseOrder::kQuestion
      : (!sentence.adverb.empty() || sentence.subordinate_first) ? ClauseOrder::kInverted
                                                                 : ClauseOrder::kStatement,
      0);
  const Words main_english = english_clause(sentence.main, main_verb, sentence.question, 0);
  if (!sentence.adverb.empty()) {
    const Adverb& adverb = find_adverb(sentence.adverb);
    english.push_back({std::string(adverb.english), kAdverbUnit});
    main_german.words.insert(main_german.words.begin(),
                             {std::string(adverb.german), kAdverbUnit});
  }

  GermanClauseWords subordinate_german;
  Words subordinate_english;
  if (sentence.subordinate) {
    subordinate_german =
        german_clause(*sentence.subordinate, subordinate_verb, ClauseOrder::kSubordinate, 1);
    subordinate_german.words.insert(subordinate_german.words.begin(),
                                    {kGermanConnective[connective], kConnectiveUnit});
    subordinate_english = english_clause(*sentence.subordinate, subordinate_verb, false, 1);
    subordinate_english.insert(subordinate_english.begin(),
                               {kEnglishConnective[connective], kConnectiveUnit});
  }

  GermanClauseWords& first_german = sentence.subordinate_first ? subordinate_german : main_german;
  first_german.words.front().text = capitalize(first_german.words.front().text);
  if (sentence.question) first_german.finite_verb = first_german.words.front().text;

  const Word comma{",", kNoUnit};
  if (sentence.subordinate_first) {
    append(english, subordinate_english);
    english.push_back(comma);
    append(english, main_english);
    append(german, subordinate_german.words);
    german.push_back(comma);
    append(german, main_german.words);
  } else {
    append(english, main_english);
    append(english, subordinate_english);  // no comma before "because" or "that" in English
    append(german, main_german.words);
    if (sentence.subordinate) {
      german.push_back(comma);
      append(german, subordinate_german.words);
    }
  }
  english.front().text = capitalize(english.front().text);

  const char* end = sentence.question ? "?" : ".";
  sample.pair = {join(english, end), join(german, end)};
  sample.reordered = is_reordered(english, german);

  auto facts = [](const GermanClauseWords& clause, bool subordinate) {
    return GermanClause{texts(clause.words), subordinate, clause.finite_verb,
                        clause.nonfinite_verb};
  };
  if (sentence.subordinate_first) {
    sample.german_clauses = {facts(subordinate_german, true), facts(main_german, false)};
  } else {
    sample.german_clauses = {facts(main_german, false)};
    if (sentence.subordinate) sample.german_clauses.push_back(facts(subordinate_german, true));
  }
  return sample;
}

}  // namespace trafo::data
