// Parallel text read line by line, validated, and held as compact token arrays.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace trafo::data {

class Tokenizer;

struct CorpusOptions {
  int64_t max_length = 250;      // pairs with more tokens on either side are skipped (0: no limit)
  double max_length_ratio = 0.0; // skip pairs whose token-length ratio exceeds this (0: off)
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

// Every kept pair's token ids (no bos/eos), stored back to back as int32:
// memory is 4 bytes per token plus 16 bytes per pair, so about 2^31 tokens at most.
class Corpus {
 public:
  static Corpus load(const std::filesystem::path& source, const std::filesystem::path& target,
                     const Tokenizer& tokenizer, const CorpusOptions& options);

  int64_t size() const { return static_cast<int64_t>(source_offsets_.size()) - 1; }
  int64_t source_length(int64_t i) const { return source_offsets_[i + 1] - source_offsets_[i]; }
  int64_t target_length(int64_t i) const { return target_offsets_[i + 1] - target_offsets_[i]; }
  const int32_t* source(int64_t i) const { return source_tokens_.data() + source_offsets_[i]; }
  const int32_t* target(int64_t i) const { return target_tokens_.data() + target_offsets_[i]; }
  int64_t line_number(int64_t i) const { return line_numbers_[i]; }  // 1-based, in the files

  int64_t lines_read = 0;
  int64_t skipped_empty = 0;
  int64_t skipped_too_long = 0;
  int64_t skipped_ratio = 0;

  void add(const std::vector<int>& source, const std::vector<int>& target, int64_t line);

 private:
  std::vector<int32_t> source_tokens_, target_tokens_;
  std::vector<int64_t> source_offsets_{0}, target_offsets_{0};
  std::vector<int64_t> line_numbers_;
};

}  // namespace trafo::data
