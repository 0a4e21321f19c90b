// Drawing random toy sentences. Private to src/data/toy_*.cpp.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "toy_lexicon.h"
#include "trafo/toy/toy_corpus.h"

namespace trafo::data::toy {

// xoshiro256** seeded through splitmix64 (Blackman and Vigna): the same numbers with every
// compiler and standard library, unlike the distributions of <random>.
class ToyRandom {
 public:
  explicit ToyRandom(uint64_t seed);
  uint64_t next();
  int below(int bound);  // uniform in [0, bound), bound > 0
  bool percent(int chance);  // true with probability chance / 100
  int weighted(std::initializer_list<int> weights);  // an index, by weight

 private:
  uint64_t state_[4];
};

// Draws sentences of the toy grammar, plausible by the lexicon's tags.
class ToySampler {
 public:
  explicit ToySampler(uint64_t seed) : random_(seed) {}
  Sentence next();

 private:
  Clause clause(TenseMask tenses, bool may_negate);
  Clause reporting_clause();
  NounPhrase noun_phrase(uint32_t tags, bool subject, bool numbers);
  Tense tense(TenseMask tenses);
  std::string adjective_for(uint32_t tags, const std::vector<std::string>& besides);

  ToyRandom random_;
};

}  // namespace trafo::data::toy
