#include "trafo/data/corpus.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

#include <spdlog/spdlog.h>
#include <utf8.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "trafo/data/case_variants.h"
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

uint64_t source_hash(const int* ids, size_t count) {
  return XXH3_64bits(ids, count * sizeof(int));
}

struct LinePairReader::Files {
  std::filesystem::path source_path, target_path;
  std::ifstream source, target;
};

LinePairReader::LinePairReader(const std::filesystem::path& source, const std::filesystem::path& target)
    : files_(std::make_unique<Files>()) {
  files_->source_path = source;
  files_->target_path = target;
  files_->source = open_text(source);
  files_->target = open_text(target);
}

LinePairReader::~LinePairReader() = default;

bool LinePairReader::read(int64_t count, std::vector<std::string>& sources, std::vector<std::string>& targets) {
  sources.clear();
  targets.clear();
  auto& f = *files_;
  std::string src_line, tgt_line;
  while (static_cast<int64_t>(sources.size()) < count) {
    const bool has_src = static_cast<bool>(std::getline(f.source, src_line));
    const bool has_tgt = static_cast<bool>(std::getline(f.target, tgt_line));
    if (!has_src && !has_tgt) break;
    if (has_src != has_tgt) {
      throw_mismatch(f.source_path, lines_ + (has_src ? 1 + count_rest(f.source) : 0), f.target_path,
                     lines_ + (has_tgt ? 1 + count_rest(f.target) : 0));
    }
    const int64_t line = ++lines_;
    if (line == 1) {  // the same checks as check_parallel_files
      check_line_breaks(f.source, src_line, f.source_path);
      check_line_breaks(f.target, tgt_line, f.target_path);
    }
    check_utf8(src_line, f.source_path.string(), line);
    check_utf8(tgt_line, f.target_path.string(), line);
    strip_carriage_return(src_line);
    strip_carriage_return(tgt_line);
    sources.push_back(std::move(src_line));
    targets.push_back(std::move(tgt_line));
  }
  return !sources.empty();
}

namespace {

// Sample `options.sample` of one side (0 source, 1 target) of line `line`, whose best segmentation is
// `best`: `best` again where the sample is empty or longer than max_length (`extra`: the tag's place).
std::vector<int> sampled(const std::string& text, const std::vector<int>& best, int64_t line, int side, int64_t extra,
                         const Tokenizer& tokenizer, const CorpusOptions& options) {
  uint64_t seed = 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(options.sample) +
                  0xbf58476d1ce4e5b9ULL * static_cast<uint64_t>(line) + static_cast<uint64_t>(side);
  seed = (seed ^ (seed >> 31)) * 0x94d049bb133111ebULL;
  auto ids = side == 0 ? tokenizer.sample(text, options.sample_alpha, seed)
                       : tokenizer.sample_target(text, options.sample_alpha, seed);
  const bool too_long = options.max_length > 0 && static_cast<int64_t>(ids.size()) + extra > options.max_length;
  return ids.empty() || too_long ? best : ids;
}

// Why a pair is left out, or kKept.
enum class Verdict { kKept, kEmpty, kTooLong, kRatio };

// Appends the pair of `source_text` / `target_text` (pieces `src_ids` / `tgt_ids`) from line `line` to
// `chunk` unless the length filters refuse it.
Verdict add_pair(const std::string& source_text, const std::string& target_text, const std::vector<int>& src_ids,
                 const std::vector<int>& tgt_ids, int64_t line, const Tokenizer& tokenizer,
                 const CorpusOptions& options, EncodedChunk& chunk) {
  if (src_ids.empty() || tgt_ids.empty()) return Verdict::kEmpty;
  const int64_t tag = options.tag >= 0 ? 1 : 0;
  const auto source_length = static_cast<int64_t>(src_ids.size()) + tag;
  const auto target_length = static_cast<int64_t>(tgt_ids.size());
  const auto longer = std::max(source_length, target_length);
  const auto shorter = std::min(source_length, target_length);
  if (options.max_length > 0 && longer > options.max_length) return Verdict::kTooLong;
  if (options.max_length_ratio > 0 && static_cast<double>(longer) / shorter > options.max_length_ratio) {
    return Verdict::kRatio;
  }
  PairRecord record;
  record.line = line;
  record.source_hash = source_hash(src_ids.data(), src_ids.size());
  std::vector<int> src_sample, tgt_sample;
  if (options.sample > 0) {
    src_sample = sampled(source_text, src_ids, line, 0, tag, tokenizer, options);
    tgt_sample = sampled(target_text, tgt_ids, line, 1, 0, tokenizer, options);
  }
  const auto& source = options.sample > 0 ? src_sample : src_ids;
  const auto& target = options.sample > 0 ? tgt_sample : tgt_ids;
  record.source_start = static_cast<int64_t>(chunk.tokens.size());
  record.source_length = static_cast<int32_t>(source.size() + static_cast<size_t>(tag));
  record.target_start = record.source_start + record.source_length;
  record.target_length = static_cast<int32_t>(target.size());
  if (tag) chunk.tokens.push_back(options.tag);
  chunk.tokens.insert(chunk.tokens.end(), source.begin(), source.end());
  chunk.tokens.insert(chunk.tokens.end(), target.begin(), target.end());
  chunk.records.push_back(record);
  return Verdict::kKept;
}

// The case variants (data/case_variants.h) that `options` asks of line `line`'s pair (pieces `src_ids`,
// `tgt_ids`), each beside it where its pieces differ from the pair's and the length filters keep it.
void add_case_variants(const std::string& source, const std::string& target, const std::vector<int>& src_ids,
                       const std::vector<int>& tgt_ids, int64_t line, const Tokenizer& tokenizer,
                       const CorpusOptions& options, EncodedChunk& chunk) {
  auto add = [&](const std::string& new_source, const std::string& new_target) {
    if (new_source == source && new_target == target) return;
    auto new_src_ids = tokenizer.encode(new_source);
    auto new_tgt_ids = tokenizer.encode_target(new_target);
    if (new_src_ids == src_ids && new_tgt_ids == tgt_ids) return;  // a vocabulary that folds case (nmt_nfkc_cf)
    add_pair(new_source, new_target, new_src_ids, new_tgt_ids, line, tokenizer, options, chunk);
  };
  if (options.all_caps_every > 0 && line % options.all_caps_every == 0) add(all_caps(source), all_caps(target));
  if (options.title_case_every > 0 && line % options.title_case_every == 0) {
    add(english_title_case(source), sentence_case(target));
  }
}

}  // namespace

EncodedChunk encode_pairs(const std::vector<std::string>& sources, const std::vector<std::string>& targets,
                          int64_t first_line, const Tokenizer& tokenizer, const CorpusOptions& options) {
  EncodedChunk chunk;
  chunk.counts.lines_read = static_cast<int64_t>(sources.size());
  for (size_t i = 0; i < sources.size(); ++i) {
    const int64_t line = first_line + static_cast<int64_t>(i);
    const auto src_ids = tokenizer.encode(sources[i]);
    const auto tgt_ids = tokenizer.encode_target(targets[i]);
    if (!options.tag_pieces.empty() && chunk.tag_in_text_line == 0) {
      for (const auto* ids : {&src_ids, &tgt_ids}) {
        for (const int id : *ids) {
          if (std::find(options.tag_pieces.begin(), options.tag_pieces.end(), id) == options.tag_pieces.end()) continue;
          chunk.tag_in_text_line = line;
          chunk.tag_in_text = id;
        }
      }
    }
    switch (add_pair(sources[i], targets[i], src_ids, tgt_ids, line, tokenizer, options, chunk)) {
      case Verdict::kKept:
        add_case_variants(sources[i], targets[i], src_ids, tgt_ids, line, tokenizer, options, chunk);
        break;
      case Verdict::kEmpty:
        ++chunk.counts.skipped_empty;
        break;
      case Verdict::kTooLong:
        ++chunk.counts.skipped_too_long;
        break;
      case Verdict::kRatio:
        ++chunk.counts.skipped_ratio;
        break;
    }
  }
  return chunk;
}

Corpus Corpus::view(std::shared_ptr<const void> owner, const PairRecord* records, int64_t pairs, const int32_t* tokens,
                    CorpusCounts counts) {
  Corpus corpus;
  corpus.owner_ = std::move(owner);
  corpus.records_ = records;
  corpus.size_ = pairs;
  corpus.tokens_ = tokens;
  corpus.counts_ = counts;
  return corpus;
}

void Corpus::point_at_owned() {
  records_ = owned_records_.data();
  tokens_ = owned_tokens_.data();
  size_ = static_cast<int64_t>(owned_records_.size());
}

void Corpus::append(const EncodedChunk& chunk) {
  const auto base = static_cast<int64_t>(owned_tokens_.size());
  for (auto record : chunk.records) {
    record.source_start += base;
    record.target_start += base;
    owned_records_.push_back(record);
  }
  owned_tokens_.insert(owned_tokens_.end(), chunk.tokens.begin(), chunk.tokens.end());
  counts_.lines_read += chunk.counts.lines_read;
  counts_.skipped_empty += chunk.counts.skipped_empty;
  counts_.skipped_too_long += chunk.counts.skipped_too_long;
  counts_.skipped_ratio += chunk.counts.skipped_ratio;
  point_at_owned();
}

void Corpus::add(const std::vector<int>& source, const std::vector<int>& target, int64_t line) {
  EncodedChunk chunk;
  PairRecord record;
  record.source_length = static_cast<int32_t>(source.size());
  record.target_start = record.source_length;
  record.target_length = static_cast<int32_t>(target.size());
  record.line = line;
  record.source_hash = source_hash(source.data(), source.size());
  chunk.records.push_back(record);
  chunk.tokens.assign(source.begin(), source.end());
  chunk.tokens.insert(chunk.tokens.end(), target.begin(), target.end());
  append(chunk);
  counts_.lines_read += 1;
}

void Corpus::release(int64_t first, int64_t last) const {
  if (!owner_ || first >= last) return;
  const long page = sysconf(_SC_PAGESIZE);
  auto drop = [page](const void* begin, const void* end) {
    // Whole pages inside [begin, end) only: the pages at the edges may hold pairs still in use.
    auto from = (reinterpret_cast<uintptr_t>(begin) + page - 1) / page * page;
    auto to = reinterpret_cast<uintptr_t>(end) / page * page;
    if (to > from) madvise(reinterpret_cast<void*>(from), to - from, MADV_DONTNEED);
  };
  drop(records_ + first, records_ + last);
  const auto& tail = records_[last - 1];
  drop(tokens_ + records_[first].source_start, tokens_ + tail.target_start + tail.target_length);
}

void check_no_tag_in_text(const EncodedChunk& chunk, const std::filesystem::path& source,
                          const std::filesystem::path& target, const Tokenizer& tokenizer) {
  if (chunk.tag_in_text_line == 0) return;
  throw InputError("the corpus tag " + tokenizer.piece(chunk.tag_in_text) + " is written in the text of " +
                   source.string() + " / " + target.string() + " line " + std::to_string(chunk.tag_in_text_line) +
                   ", so it would not mark a corpus alone: pick a tag that never occurs in the data");
}

void report_counts(const std::filesystem::path& source, const std::filesystem::path& target, int64_t kept,
                   const CorpusCounts& counts, const CorpusOptions& options) {
  if (counts.kept() < counts.lines_read) {  // `kept` counts case variants too: the line pairs are counts.kept()
    spdlog::warn("{} / {}: kept {} of {} pairs; skipped {} empty, {} longer than {} tokens, {} over length ratio {}",
                 source.string(), target.string(), counts.kept(), counts.lines_read, counts.skipped_empty,
                 counts.skipped_too_long, options.max_length, counts.skipped_ratio, options.max_length_ratio);
  }
  if (kept == 0) throw InputError("no usable sentence pairs in " + source.string() + " / " + target.string());
}

Corpus Corpus::load(const std::filesystem::path& source, const std::filesystem::path& target,
                    const Tokenizer& tokenizer, const CorpusOptions& options) {
  constexpr int64_t kChunk = 4096;
  LinePairReader reader(source, target);
  Corpus corpus;
  std::vector<std::string> sources, targets;
  while (reader.read(kChunk, sources, targets)) {
    const auto chunk = encode_pairs(sources, targets, reader.lines_read() - static_cast<int64_t>(sources.size()) + 1,
                                    tokenizer, options);
    check_no_tag_in_text(chunk, source, target, tokenizer);
    corpus.append(chunk);
  }
  report_counts(source, target, corpus.size(), corpus.counts_, options);
  return corpus;
}

}  // namespace trafo::data
