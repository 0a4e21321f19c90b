// Terms a translation must use (--glossary): pairs of a source term and its target term. Where a
// source term occurs in a sentence, its target term's pieces become a constraint that the
// constrained beam search (search.h, BeamSearch) writes into the output.
//
// Matching is on pieces: a term is cut as text of its own and found as a run of the sentence's
// pieces that begins and ends a word ("cat" does not match in "category"). Rules where terms meet:
//   - each term is required once, however often its source occurs;
//   - terms are matched longest source first (in pieces), then in file order; a term whose every
//     occurrence overlaps a term already matched is not required;
//   - of two lines with the same source term, the first counts;
//   - terms of the same target are required once.
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "trafo/data/tokenizer.h"

namespace trafo::decode {

// Target piece sequences an output must hold, each once.
using Constraints = std::vector<std::vector<int>>;

class Glossary {
 public:
  // A glossary file's term pairs, and where each stands ("FILE:LINE"), checked for form only.
  struct File {
    std::vector<std::pair<std::string, std::string>> pairs;
    std::vector<std::string> places;
  };
  // The form load() checks, before any model is loaded: InputError as load() says.
  static File read(const std::filesystem::path& path);
  // A tab-separated file: "source term<TAB>target term" a line; empty lines and lines that start
  // with '#' are skipped. InputError naming the file and line for a line without one tab, an empty
  // term, a term with characters the vocabulary lacks, or text that is not UTF-8.
  static Glossary load(const std::filesystem::path& path, const data::Tokenizer& tokenizer) {
    const auto file = read(path);
    return from_pairs(file.pairs, tokenizer, file.places);
  }
  // The same from pairs already read; `places` names each pair's origin in messages ("FILE:LINE").
  static Glossary from_pairs(const std::vector<std::pair<std::string, std::string>>& pairs,
                             const data::Tokenizer& tokenizer, const std::vector<std::string>& places = {});

  // The constraints of one source (ids as the decoders read them: source_ids'), in match order.
  Constraints constraints(const std::vector<int>& source) const;
  size_t size() const { return terms_.size(); }

 private:
  struct Term {
    std::vector<int> source, target;
  };
  std::vector<Term> terms_;  // longest source first, then in file order; sources distinct
  std::vector<bool> continues_word_;  // per source piece id: it goes on with the word before it
};

// The pieces of all `constraints` together.
size_t constraint_pieces(const Constraints& constraints);

// The beam a sentence with `constraints` is decoded with: `beam`, or one more than the constraints'
// pieces where that is more (dynamic beam allocation keeps a bank for each count of pieces met),
// at most kMostConstrainedBeam.
int constrained_beam(int beam, const Constraints& constraints);
inline constexpr int kMostConstrainedBeam = 16;

}  // namespace trafo::decode
