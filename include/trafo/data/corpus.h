// Parallel text read line by line, validated, and held as compact token arrays: in memory, or
// mapped from a token cache file (data/token_cache.h) so that memory does not grow with the corpus.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace trafo::data {

class Tokenizer;
class PieceLinks;

struct CorpusOptions {
  int64_t max_length = 250;      // pairs with more tokens on either side are skipped (0: no limit)
  double max_length_ratio = 0.0; // skip pairs whose token-length ratio exceeds this (0: off)
  int tag = -1;                  // a piece id put before every source sentence (a corpus tag; -1: none)
  std::vector<int> tag_pieces;   // the ids of every corpus tag: a line whose text encodes to one is refused
  // Subword regularisation: `sample` 0 keeps each side's best segmentation; k >= 1 the k-th sampled
  // one (Tokenizer::sample with `sample_alpha`, seeded by k, the line and the side). The pairs kept
  // and their order are those of the best segmentations whatever k, so that every sample of a
  // corpus holds the same pairs; a side whose sample is longer than max_length keeps its best.
  int64_t sample = 0;
  double sample_alpha = 0.0;
  // Case augmentation (data/case_variants.h): the pair of every line whose number is a multiple of
  // `all_caps_every` is kept a second time in capitals, both sides; that of a multiple of
  // `title_case_every`, with its source as an English title and its target in sentence case (0: off).
  // A variant follows its pair, with its line number; one that reads as the pair does, or that the
  // length filters refuse, is left out (and not counted as skipped).
  int64_t all_caps_every = 0;
  int64_t title_case_every = 0;
};

// Line counts of both files; throws InputError for a file check_text_file refuses, different line
// counts (naming both files and counts), invalid UTF-8 (naming the file and line) or a file that
// holds no text (no line with anything but white space).
int64_t check_parallel_files(const std::filesystem::path& source, const std::filesystem::path& target);

// Throws InputError unless `path` is an existing regular file: a directory, a device or a pipe is
// refused by name (data files are read more than once).
void check_text_file(const std::filesystem::path& path);

// Throws InputError "FILE:LINE: invalid UTF-8" when `line` is not valid UTF-8.
void check_utf8(const std::string& line, const std::string& file, int64_t line_number);
// Throws InputError "NAME is not valid UTF-8" (for text given on the command line).
void check_utf8(const std::string& text, const std::string& name);

// One kept pair: where its pieces lie in the token array, its line in the files, and a hash of its
// source pieces (tag left out) for the leak check. The token cache stores these records as they are.
struct PairRecord {
  int64_t source_start = 0;
  int64_t target_start = 0;
  int32_t source_length = 0;
  int32_t target_length = 0;
  int64_t line = 0;          // 1-based
  uint64_t source_hash = 0;  // source_hash() of the source pieces
};
static_assert(sizeof(PairRecord) == 40, "the token cache's record layout");

// The hash PairRecord::source_hash holds: of the piece ids, in order.
uint64_t source_hash(const int* ids, size_t count);

// What reading a corpus kept and left out.
struct CorpusCounts {
  int64_t lines_read = 0;
  int64_t skipped_empty = 0;
  int64_t skipped_too_long = 0;
  int64_t skipped_ratio = 0;
  int64_t kept() const { return lines_read - skipped_empty - skipped_too_long - skipped_ratio; }  // line pairs
};

// Line pairs read from two files with the checks of check_parallel_files: invalid UTF-8, CR-only line
// ends and different line counts are InputErrors naming the file (and line, or both counts).
class LinePairReader {
 public:
  LinePairReader(const std::filesystem::path& source, const std::filesystem::path& target);
  ~LinePairReader();
  LinePairReader(const LinePairReader&) = delete;
  LinePairReader& operator=(const LinePairReader&) = delete;
  // Up to `count` more pairs (carriage returns before the line feed removed); fewer at the end, none after.
  bool read(int64_t count, std::vector<std::string>& sources, std::vector<std::string>& targets);
  int64_t lines_read() const { return lines_; }

 private:
  struct Files;
  std::unique_ptr<Files> files_;
  int64_t lines_ = 0;
};

// The pieces of `count` line pairs whose first is line `first_line`, filtered by `options`:
// records (starts relative to `tokens`' start) and tokens, each pair's source then its target.
struct EncodedChunk {
  std::vector<PairRecord> records;
  std::vector<int32_t> tokens;
  CorpusCounts counts;
  int64_t tag_in_text_line = 0;  // the first line whose text holds a corpus tag (0: none), and that tag's id
  int tag_in_text = -1;
};
EncodedChunk encode_pairs(const std::vector<std::string>& sources, const std::vector<std::string>& targets,
                          int64_t first_line, const Tokenizer& tokenizer, const CorpusOptions& options);

// Every kept pair's token ids (no bos/eos; the tag first where there is one), 4 bytes a token and 40
// a pair, in memory or in a mapped token cache.
class Corpus {
 public:
  // Reads and tokenizes the files on this thread into memory (dev and test sets).
  static Corpus load(const std::filesystem::path& source, const std::filesystem::path& target,
                     const Tokenizer& tokenizer, const CorpusOptions& options);
  // Over storage that `owner` keeps alive (a mapped file): `pairs` records and the tokens they point into.
  static Corpus view(std::shared_ptr<const void> owner, const PairRecord* records, int64_t pairs, const int32_t* tokens,
                     CorpusCounts counts);

  Corpus() = default;
  Corpus(Corpus&&) noexcept = default;
  Corpus& operator=(Corpus&&) noexcept = default;
  Corpus(const Corpus&) = delete;
  Corpus& operator=(const Corpus&) = delete;

  int64_t size() const { return size_; }
  int64_t source_length(int64_t i) const { return records_[i].source_length; }
  int64_t target_length(int64_t i) const { return records_[i].target_length; }
  const int32_t* source(int64_t i) const { return tokens_ + records_[i].source_start; }
  const int32_t* target(int64_t i) const { return tokens_ + records_[i].target_start; }
  int64_t line_number(int64_t i) const { return records_[i].line; }  // 1-based, in the files
  const PairRecord& record(int64_t i) const { return records_[i]; }
  const CorpusCounts& counts() const { return counts_; }
  bool mapped() const { return owner_ != nullptr; }
  // Guided alignment: each pair's links between its pieces (data/piece_links.h); null when none.
  const PieceLinks* links() const { return links_.get(); }
  void set_links(std::shared_ptr<const PieceLinks> links) { links_ = std::move(links); }

  // A mapped corpus gives back the memory pages of pairs [first, last) and their tokens, which are
  // read again from the file when next used (the pages of a window the batcher is done with).
  void release(int64_t first, int64_t last) const;

  void append(const EncodedChunk& chunk);  // in memory only
  void add(const std::vector<int>& source, const std::vector<int>& target, int64_t line);  // one pair, in memory

 private:
  void point_at_owned();
  std::shared_ptr<const void> owner_;
  std::shared_ptr<const PieceLinks> links_;
  std::vector<PairRecord> owned_records_;
  std::vector<int32_t> owned_tokens_;
  const PairRecord* records_ = nullptr;
  const int32_t* tokens_ = nullptr;
  int64_t size_ = 0;
  CorpusCounts counts_;
};

// Throws InputError when `chunk` found a corpus tag written in the text of `source` or `target`.
void check_no_tag_in_text(const EncodedChunk& chunk, const std::filesystem::path& source,
                          const std::filesystem::path& target, const Tokenizer& tokenizer);

// Warns, naming the files, when reading left pairs out; InputError when it kept none.
void report_counts(const std::filesystem::path& source, const std::filesystem::path& target, int64_t kept,
                   const CorpusCounts& counts, const CorpusOptions& options);

}  // namespace trafo::data
