// Stages 1 and 2 of trafo distill: the teacher's translations of every training source, in chunks
// that survive a kill, and the pairs kept of them. Internal to distill/.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "trafo/inference/translation.h"

namespace trafo::distill {

// One translated line: the teacher's log-probability per piece (its pieces and eos) and the text.
struct Distilled {
  double log_prob_per_piece = 0.0;
  std::string text;
};

// The chunks of one corpus in `folder`: chunk K of corpus C is the file cC-KKKKKK-HASH.tsv, one
// "LOG_PROB<TAB>TEXT" line per source line, HASH the XXH3 of its bytes. A file is written whole
// (a temporary, then renamed), so one whose bytes miss their hash, or whose lines miss the chunk's,
// is a torn or foreign file: translated again.
class Chunks {
 public:
  Chunks(std::filesystem::path folder, int corpus, int64_t lines, int64_t chunk_lines);

  int64_t count() const { return (lines_ + chunk_lines_ - 1) / chunk_lines_; }
  int64_t first_line(int64_t chunk) const { return chunk * chunk_lines_; }
  int64_t lines_of(int64_t chunk) const;
  // The chunk's lines where its file is there and whole; empty otherwise (a bad file is removed).
  std::vector<Distilled> read(int64_t chunk) const;
  void write(int64_t chunk, const std::vector<Distilled>& lines) const;

 private:
  std::filesystem::path path_prefix(int64_t chunk) const;
  std::filesystem::path folder_;
  int corpus_;
  int64_t lines_, chunk_lines_;
};

// Translates each chunk of `sources` that `chunks` lacks with `engine` (beam search, batched), in
// order, logging how far and how fast; returns false where `stop_requested` ended it between chunks.
bool translate_chunks(const inference::Translation& engine, const std::vector<std::string>& sources,
                      const Chunks& chunks, const std::string& name, const std::atomic<bool>* stop_requested);

// Whether a line holds anything but spaces, tabs and carriage returns.
bool has_text(const std::string& line);

// Stage 2: the distilled pairs of one corpus, those without text on a side (a blank source, a
// translation the teacher left empty) and then the teacher's least likely `share` of the others
// dropped, written as `src_out` and `tgt_out`. Returns the pairs kept and those without text;
// InputError where no pair has text.
std::pair<int64_t, int64_t> keep_likely(const std::vector<std::string>& sources, const Chunks& chunks, double share,
                                        const std::filesystem::path& src_out, const std::filesystem::path& tgt_out);

}  // namespace trafo::distill
