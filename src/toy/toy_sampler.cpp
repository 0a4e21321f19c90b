// The generator's choices: which sentence shapes, tenses, words and determiners, and how
// often. The weights are percentages or relative shares; data/README.md lists the shapes.
#include "toy_sampler.h"

#include <algorithm>
#include <string>
#include <vector>

namespace trafo::data::toy {
namespace {

constexpr TenseMask kAllTenses = 0x1f;

uint32_t tags_of(const NounPhrase& phrase) {
  if (phrase.kind != NounPhrase::Kind::kNoun) return kPerson;
  return find_noun(phrase.word).tags;
}

// Picks uniformly among the entries that `keep` accepts; there must be one.
template <typename Entry, typename Keep>
const Entry& pick(ToyRandom& random, const std::vector<Entry>& entries, Keep keep) {
  int count = 0;
  for (const auto& entry : entries) count += keep(entry) ? 1 : 0;
  int chosen = random.below(count);
  for (const auto& entry : entries) {
    if (keep(entry) && chosen-- == 0) return entry;
  }
  return entries.front();  // not reached
}

}  // namespace

ToyRandom::ToyRandom(uint64_t seed) {
  for (auto& word : state_) {  // splitmix64
    seed += 0x9e3779b97f4a7c15ULL;
    uint64_t z = seed;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    word = z ^ (z >> 31);
  }
}

uint64_t ToyRandom::next() {
  auto rotl = [](uint64_t x, int k) { return (x << k) | (x >> (64 - k)); };
  const uint64_t result = rotl(state_[1] * 5, 7) * 9;
  const uint64_t t = state_[1] << 17;
  state_[2] ^= state_[0];
  state_[3] ^= state_[1];
  state_[1] ^= state_[2];
  state_[0] ^= state_[3];
  state_[2] ^= t;
  state_[3] = rotl(state_[3], 45);
  return result;
}

int ToyRandom::below(int bound) {
  // Rejection keeps every value equally likely.
  const uint64_t range = static_cast<uint64_t>(bound);
  const uint64_t limit = UINT64_MAX - UINT64_MAX % range;
  uint64_t value = next();
  while (value >= limit) value = next();
  return static_cast<int>(value % range);
}

bool ToyRandom::percent(int chance) { return below(100) < chance; }

int ToyRandom::weighted(std::initializer_list<int> weights) {
  int total = 0;
  for (const int weight : weights) total += weight;
  int chosen = below(total);
  int index = 0;
  for (const int weight : weights) {
    if (chosen < weight) return index;
    chosen -= weight;
    ++index;
  }
  return index - 1;  // not reached
}

Sentence ToySampler::next() {
  Sentence sentence;
  switch (random_.weighted({30, 12, 14, 16, 10, 18})) {
    case 0: sentence.main = clause(kAllTenses, true); break;
    case 1: {
      const Adverb& adverb = adverbs()[random_.below(static_cast<int>(adverbs().size()))];
      sentence.adverb = std::string(adverb.english);
      sentence.main = clause(adverb.tenses, true);
      break;
    }
    case 2:
      sentence.question = true;
      sentence.main = clause(kAllTenses, false);
      break;
    case 3:
    case 4: {
      const Connective connectives[] = {Connective::kBecause, Connective::kAlthough,
                                        Connective::kIf};
      sentence.connective = connectives[random_.weighted({2, 1, 1})];
      const bool condition = sentence.connective == Connective::kIf;
      // "If the dog sleeps, the child laughs / will laugh / can laugh."
      sentence.main = clause(
          condition ? tense_bit(Tense::kPresent) | tense_bit(Tense::kFuture) | tense_bit(Tense::kCan) : kAllTenses,
          true);
      sentence.subordinate = clause(condition ? tense_bit(Tense::kPresent) : kAllTenses, true);
      sentence.subordinate_first = random_.percent(40);
      break;
    }
    default:
      sentence.connective = Connective::kThat;
      sentence.main = reporting_clause();
      sentence.subordinate = clause(kAllTenses, true);
      if (random_.percent(10)) {
        sentence.question = true;
        sentence.main.negated = false;
      }
      break;
  }
  return sentence;
}

Tense ToySampler::tense(TenseMask tenses) {
  const int weights[] = {40, 15, 20, 12, 13};  // present, past, perfect, future, can
  auto weight = [&](int index) { return (tenses >> index & 1u) ? weights[index] : 0; };
  return static_cast<Tense>(
      random_.weighted({weight(0), weight(1), weight(2), weight(3), weight(4)}));
}

Clause ToySampler::clause(TenseMask tenses, bool may_negate) {
  Clause clause;
  const int frame = random_.weighted({18, 27, 43, 12});  // be, intransitive, transitive, recipient
  const bool copula = frame == 0 && (tenses & ~tense_bit(Tense::kCan)) != 0;
  clause.tense = tense(copula ? tenses & ~tense_bit(Tense::kCan) : tenses);
  clause.negated = may_negate && random_.percent(22);
  if (copula) {
    clause.verb = "be";
    clause.subject = noun_phrase(~0u, true, true);
    // Not "the fresh egg is fresh".
    clause.predicate = adjective_for(tags_of(clause.subject), clause.subject.adjectives);
    return clause;
  }
  const uint32_t wanted = frame <= 1 ? kIntransitive : frame == 2 ? kTransitive : kDitransitive;
  // "read" reads the same in the present and the past: "I read the book".
  const bool past = clause.tense == Tense::kPast;
  const Verb& verb = pick(random_, verbs(), [&](const Verb& candidate) {
    return (candidate.frames & wanted) && !(past && candidate.english_past == candidate.english);
  });
  clause.verb = std::string(verb.english);
  clause.subject = noun_phrase(verb.subjects, true, true);
  if (wanted == kIntransitive) {
    if (verb.companions != 0 && random_.percent(35)) {
      clause.companion = noun_phrase(verb.companions, false, true);
    }
    return clause;
  }
  if (wanted == kDitransitive) {
    clause.recipient = noun_phrase(verb.recipients, false, !clause.negated);
  }
  clause.object = noun_phrase(verb.objects, false, !clause.negated);
  return clause;
}

Clause ToySampler::reporting_clause() {
  const auto& verb = clause_verbs()[random_.below(static_cast<int>(clause_verbs().size()))];
  Clause clause;
  clause.verb = std::string(verb.forms.english);
  clause.subject = noun_phrase(kPerson, true, true);
  if (verb.past) clause.tense = static_cast<Tense>(random_.weighted({50, 20, 20, 10}));
  clause.negated = verb.negation && random_.percent(20);
  return clause;
}

NounPhrase ToySampler::noun_phrase(uint32_t tags, bool subject, bool numbers) {
  NounPhrase phrase;
  if (tags & kPerson) {
    const int choice = random_.below(100);
    if (subject && choice < 15) {
      phrase.kind = NounPhrase::Kind::kPronoun;
      phrase.pronoun = static_cast<Pronoun>(random_.below(6));
      return phrase;
    }
    if (subject ? choice >= 85 : choice < 12) {
      phrase.kind = NounPhrase::Kind::kName;
      phrase.word = std::string(names()[random_.below(static_cast<int>(names().size()))]);
      return phrase;
    }
  }
  const Noun& noun = pick(random_, nouns(), [&](const Noun& n) { return (n.tags & tags) != 0; });
  phrase.word = std::string(noun.english);
  const bool mass = noun.tags & kMass;
  const Determiner determiners[] = {Determiner::kThe, Determiner::kA,    Determiner::kThis,
                                    Determiner::kMy,  Determiner::kOur,  Determiner::kNone,
                                    Determiner::kNumber};
  phrase.determiner = determiners[random_.weighted(
      {40, mass ? 0 : 18, 10, 10, 5, mass ? 0 : 7, (mass || !numbers) ? 0 : 10})];
  switch (phrase.determiner) {
    case Determiner::kNone: phrase.plural = true; break;
    case Determiner::kNumber:
      phrase.plural = true;
      phrase.count = random_.percent(50) ? 2 + random_.below(11) : 2 + random_.below(98);
      break;
    case Determiner::kA: break;
    default: phrase.plural = !mass && random_.percent(30); break;
  }

  const int adjective_count = random_.weighted({62, 33, 5});
  if (adjective_count >= 1) phrase.adjectives.push_back(adjective_for(noun.tags, {}));
  if (adjective_count == 2) {
    // A second adjective of another kind, in English order: "the small black dog".
    const int first_order = find_adjective(phrase.adjectives.front()).order;
    bool any = false;
    for (const auto& adjective : adjectives()) {
      any = any || ((adjective.fits & noun.tags) && adjective.order != first_order);
    }
    if (any) {
      const Adjective& second = pick(random_, adjectives(), [&](const Adjective& a) {
        return (a.fits & noun.tags) && a.order != first_order;
      });
      phrase.adjectives.push_back(std::string(second.english));
      if (second.order < first_order) std::swap(phrase.adjectives[0], phrase.adjectives[1]);
    }
  }
  return phrase;
}

std::string ToySampler::adjective_for(uint32_t tags, const std::vector<std::string>& besides) {
  return std::string(pick(random_, adjectives(), [&](const Adjective& a) {
                       return (a.fits & tags) != 0 &&
                              std::find(besides.begin(), besides.end(), a.english) ==
                                  besides.end();
                     }).english);
}

}  // namespace trafo::data::toy
