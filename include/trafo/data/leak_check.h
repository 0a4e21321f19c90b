// Dev and test pairs whose source sentence is also in the training data: scores on them overstate a
// model, and published results have been withdrawn over it. trafo counts them at every start.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

namespace trafo::data {

class Corpus;
class Tokenizer;

struct Overlap {
  int64_t lines = 0;                // lines of the checked file
  std::vector<int64_t> in_training;  // 1-based lines whose source is in training, in order
};

// The lines of `source` (a dev or test source file) whose pieces equal a training source's (tags left
// out; same pieces: the same sentence up to SentencePiece's normalisation). Empty lines never count.
// Reads the training pairs' hashes a block at a time, giving a mapped corpus's pages back after.
Overlap find_overlap(const std::filesystem::path& source, const Tokenizer& tokenizer,
                     const std::vector<const Corpus*>& training);

}  // namespace trafo::data
