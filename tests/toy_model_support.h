// The toy model of tests/fixtures (a checkpoint of the toy English→German pair) and toy sentences
// to translate with it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "trafo/toy/toy_corpus.h"

namespace trafo::testing {

inline const std::filesystem::path kToyModel =
    std::filesystem::path(TRAFO_SOURCE_DIR) / "tests" / "fixtures" / "checkpoints" / "toy-format2.pt";

// The source side of `count` toy pairs.
inline std::vector<std::string> toy_sentences(int64_t count) {
  data::ToyCorpusOptions toy;
  toy.train = 0;
  toy.dev = 0;
  toy.test = count;
  std::vector<std::string> sentences;
  for (const auto& pair : data::generate_toy_corpus(toy).test) sentences.push_back(pair.source);
  return sentences;
}

}  // namespace trafo::testing
