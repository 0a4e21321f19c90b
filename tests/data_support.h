// Small parallel corpora made inside the tests.
#pragma once

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "test_support.h"
#include "trafo/data/corpus.h"

namespace trafo::testing {

// `pairs` lines of "word word ..." with a made-up translation (each word suffixed), lengths 1-12.
inline void write_synthetic_corpus(const std::filesystem::path& dir, const std::string& name, int pairs,
                                   unsigned seed = 1) {
  static const std::vector<std::string> words = {"the", "cat", "sees", "a", "dog", "house", "red", "big",
                                                 "small", "runs", "and", "tree", "green", "bird", "flies",
                                                 "over", "river", "water", "blue", "sky", "sun", "moon"};
  std::mt19937 rng(seed);
  std::string src, tgt;
  for (int i = 0; i < pairs; ++i) {
    const int length = 1 + static_cast<int>(rng() % 12);
    std::string s, t;
    for (int w = 0; w < length; ++w) {
      const auto& word = words[rng() % words.size()];
      s += (w ? " " : "") + word;
      t = word + "en" + (w ? " " : "") + t;  // reversed order with a suffix
    }
    src += s + "\n";
    tgt += t + "\n";
  }
  write_text(dir / (name + ".en"), src);
  write_text(dir / (name + ".de"), tgt);
}

// A corpus of `pairs` pairs of random lengths 1-30, made without a tokenizer.
inline data::Corpus corpus_of_lengths(int pairs, unsigned seed) {
  std::mt19937 rng(seed);
  data::Corpus corpus;
  for (int i = 0; i < pairs; ++i) {
    std::vector<int> src(1 + rng() % 30, 5 + i % 7), tgt(1 + rng() % 30, 6 + i % 5);
    corpus.add(src, tgt, i + 1);
  }
  return corpus;
}

}  // namespace trafo::testing
