#include "trafo/data/corpus.h"

#include <fstream>

#include <spdlog/spdlog.h>
#include <utf8.h>

#include "trafo/data/tokenizer.h"
#include "trafo/errors.h"

namespace trafo::data {
namespace {

std::ifstream open_text(const std::filesystem::path& path) {
  check_text_file(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read data file " + path.string());
  return in;
}

int64_t count_rest(std::ifstream& in) {
  int64_t count = 0;
  std::string line;
  while (std::getline(in, line)) ++count;
  return count;
}

[[noreturn]] void throw_mismatch(const std::filesystem::path& source, int64_t source_lines,
                                 const std::filesystem::path& target, int64_t target_lines) {
  throw InputError("parallel files differ in length: " + source.string() + " has " + std::to_string(source_lines) +
                   " lines, " + target.string() + " has " + std::to_string(target_lines));
}

void strip_carriage_return(std::string& line) {
  if (!line.empty() && line.back() == '\r') line.pop_back();
}

// A file whose lines end in CR alone (classic Mac OS) reads as one line holding them all.
void check_line_breaks(std::ifstream& in, const std::string& first_line, const std::filesystem::path& path) {
  const auto cr = first_line.find('\r');
  if (cr == std::string::npos || cr + 1 == first_line.size() || in.peek() != std::ifstream::traits_type::eof()) return;
  throw InputError(path.string() + " ends its lines with a carriage return (CR) alone, so it reads as one line; "
                   "convert them to line feeds, e.g. tr '\\r' '\\n' < FILE > FILE.lf");
}

bool has_text(const std::string& line) { return line.find_first_not_of(" \t\r\f\v") != std::string::npos; }

}  // namespace

void check_text_file(const std::filesystem::path& path) {
  std::error_code error;
  const auto status = std::filesystem::status(path, error);
  if (status.type() == std::filesystem::file_type::not_found) throw InputError("missing data file " + path.string());
  if (error) throw InputError("cannot read data file " + path.string() + ": " + error.message());
  if (std::filesystem::is_directory(status)) throw InputError(path.string() + " is a directory, not a text file");
  if (!std::filesystem::is_regular_file(status)) {
    throw InputError(path.string() + " is not a regular file (data files are read more than once)");
  }
}

void check_utf8(const std::string& text, const std::string& name) {
  if (!utf8::is_valid(text.begin(), text.end())) throw InputError(name + " is not valid UTF-8");
}

void check_utf8(const std::string& line, const std::string& file, int64_t line_number) {
  if (!utf8::is_valid(line.begin(), line.end())) {
    throw InputError(file + ":" + std::to_string(line_number) + ": invalid UTF-8");
  }
}

int64_t check_parallel_files(const std::filesystem::path& source, const std::filesystem::path& target) {
  auto src = open_text(source);
  auto tgt = open_text(target);
  std::string src_line, tgt_line;
  int64_t lines = 0;
  bool src_text = false, tgt_text = false;
  while (true) {
    const bool has_src = static_cast<bool>(std::getline(src, src_line));
    const bool has_tgt = static_cast<bool>(std::getline(tgt, tgt_line));
    if (!has_src && !has_tgt) {
      if (!src_text) throw InputError(source.string() + " holds no text");
      if (!tgt_text) throw InputError(target.string() + " holds no text");
      return lines;
    }
    if (has_src != has_tgt) {
      const int64_t src_total = lines + (has_src ? 1 + count_rest(src) : 0);
      const int64_t tgt_total = lines + (has_tgt ? 1 + count_rest(tgt) : 0);
      throw_mismatch(source, src_total, target, tgt_total);
    }
    ++lines;
    if (lines == 1) {
      check_line_breaks(src, src_line, source);
      check_line_breaks(tgt, tgt_line, target);
    }
    check_utf8(src_line, source.string(), lines);
    check_utf8(tgt_line, target.string(), lines);
    src_text = src_text || has_text(src_line);
    tgt_text = tgt_text || has_text(tgt_line);
  }
}

void Corpus::add(const std::vector<int>& source, const std::vector<int>& target, int64_t line) {
  source_tokens_.insert(source_tokens_.end(), source.begin(), source.end());
  target_tokens_.insert(target_tokens_.end(), target.begin(), target.end());
  source_offsets_.push_back(static_cast<int64_t>(source_tokens_.size()));
  target_offsets_.push_back(static_cast<int64_t>(target_tokens_.size()));
  line_numbers_.push_back(line);
}

Corpus Corpus::load(const std::filesystem::path& source, const std::filesystem::path& target,
                    const Tokenizer& tokenizer, const CorpusOptions& options) {
  auto src = open_text(source);
  auto tgt = open_text(target);
  Corpus corpus;
  std::string src_line, tgt_line;
  while (true) {
    const bool has_src = static_cast<bool>(std::getline(src, src_line));
    const bool has_tgt = static_cast<bool>(std::getline(tgt, tgt_line));
    if (!has_src && !has_tgt) break;
    if (has_src != has_tgt) {
      const int64_t read = corpus.lines_read;
      throw_mismatch(source, read + (has_src ? 1 + count_rest(src) : 0), target,
                     read + (has_tgt ? 1 + count_rest(tgt) : 0));
    }
    const int64_t line = ++corpus.lines_read;
    if (line == 1) {  // the same checks as check_parallel_files
      check_line_breaks(src, src_line, source);
      check_line_breaks(tgt, tgt_line, target);
    }
    check_utf8(src_line, source.string(), line);
    check_utf8(tgt_line, target.string(), line);
    strip_carriage_return(src_line);
    strip_carriage_return(tgt_line);
    const auto src_ids = tokenizer.encode(src_line);
    const auto tgt_ids = tokenizer.encode(tgt_line);
    if (src_ids.empty() || tgt_ids.empty()) {
      ++corpus.skipped_empty;
      continue;
    }
    const auto longer = static_cast<int64_t>(std::max(src_ids.size(), tgt_ids.size()));
    const auto shorter = static_cast<int64_t>(std::min(src_ids.size(), tgt_ids.size()));
    if (options.max_length > 0 && longer > options.max_length) {
      ++corpus.skipped_too_long;
      continue;
    }
    if (options.max_length_ratio > 0 && static_cast<double>(longer) / shorter > options.max_length_ratio) {
      ++corpus.skipped_ratio;
      continue;
    }
    corpus.add(src_ids, tgt_ids, line);
  }
  if (corpus.skipped_empty + corpus.skipped_too_long + corpus.skipped_ratio > 0) {
    spdlog::warn("{} / {}: kept {} of {} pairs; skipped {} empty, {} longer than {} tokens, {} over length ratio {}",
                 source.string(), target.string(), corpus.size(), corpus.lines_read, corpus.skipped_empty,
                 corpus.skipped_too_long, options.max_length, corpus.skipped_ratio, options.max_length_ratio);
  }
  if (corpus.size() == 0) throw InputError("no usable sentence pairs in " + source.string() + " / " + target.string());
  return corpus;
}

}  // namespace trafo::data
