#include "trafo/data/piece_links.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <fstream>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "trafo/data/corpus.h"
#include "trafo/data/token_cache.h"
#include "trafo/data/tokenizer.h"
#include "trafo/errors.h"
#include "trafo/util/files.h"

namespace trafo::data {
namespace {

constexpr char kLinksMagic[8] = {'T', 'R', 'A', 'F', 'O', 'A', 'L', '1'};
constexpr char kWordMark[] = "\xe2\x96\x81";  // U+2581, SentencePiece's mark of a word's start

bool is_space(char ch) { return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n' || ch == '\v' || ch == '\f'; }

// A non-negative decimal number (a word's index), at most INT_MAX: a larger one is past any pair's
// words as surely, and is told apart from one that is not a number (-1).
int read_index(std::string_view text) {
  if (text.empty()) return -1;
  int64_t value = 0;
  for (const char ch : text) {
    if (ch < '0' || ch > '9') return -1;
    value = std::min<int64_t>(value * 10 + (ch - '0'), INT_MAX);
  }
  return static_cast<int>(value);
}

}  // namespace

std::vector<std::pair<int, int>> read_word_links(std::string_view line, const std::string& file, int64_t line_number) {
  std::vector<std::pair<int, int>> links;
  size_t at = 0;
  while (true) {
    while (at < line.size() && is_space(line[at])) ++at;
    if (at == line.size()) break;
    size_t end = at;
    while (end < line.size() && !is_space(line[end])) ++end;
    const auto field = line.substr(at, end - at);
    const auto dash = field.find('-');
    const int source = dash == std::string_view::npos ? -1 : read_index(field.substr(0, dash));
    const int target = dash == std::string_view::npos ? -1 : read_index(field.substr(dash + 1));
    if (source < 0 || target < 0) {
      std::string shown(field.substr(0, 40));
      for (auto& ch : shown) {
        if (static_cast<unsigned char>(ch) < 0x20 || static_cast<unsigned char>(ch) >= 0x7f) ch = '?';
      }
      throw InputError(file + ":" + std::to_string(line_number) + ": '" + shown +
                       "' is not a word link SOURCE-TARGET (Pharaoh format, 0-based word numbers)");
    }
    links.emplace_back(source, target);
    at = end;
  }
  return links;
}

std::vector<int> piece_words(const int32_t* ids, int64_t count, int64_t skip, const std::vector<bool>& starts_word) {
  std::vector<int> words(static_cast<size_t>(count), -1);
  int word = -1;
  for (int64_t i = skip; i < count; ++i) {
    const auto id = static_cast<size_t>(ids[i]);
    if (word < 0 || (id < starts_word.size() && starts_word[id])) ++word;
    words[static_cast<size_t>(i)] = word;
  }
  return words;
}

std::vector<bool> word_starts(const Tokenizer& tokenizer, bool target_side) {
  std::vector<bool> starts(static_cast<size_t>(tokenizer.vocab_size()));
  for (int id = 0; id < tokenizer.vocab_size(); ++id) {
    const auto piece = target_side ? tokenizer.target_piece(id) : tokenizer.piece(id);
    starts[static_cast<size_t>(id)] = piece.rfind(kWordMark, 0) == 0;
  }
  return starts;
}

at::Tensor PieceLinks::matrix(const std::vector<int64_t>& pairs, const std::vector<std::pair<int64_t, int64_t>>& lengths,
                              int64_t target_width, int64_t source_width) const {
  const auto rows = static_cast<int64_t>(pairs.size());
  auto matrix = torch::zeros({rows, target_width, source_width}, torch::kFloat);  // [B,T,S]
  auto* out = matrix.data_ptr<float>();
  std::vector<int> per_target;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t pair = pairs[static_cast<size_t>(r)];
    if (begin(pair) == end(pair)) continue;
    per_target.assign(static_cast<size_t>(target_width), 0);
    for (const auto* link = begin(pair); link != end(pair); ++link) ++per_target[link->target];
    for (const auto* link = begin(pair); link != end(pair); ++link) {
      out[(r * target_width + link->target) * source_width + link->source] = 1.0f / static_cast<float>(per_target[link->target]);
    }
    const auto [source_length, target_length] = lengths[static_cast<size_t>(r)];
    for (int64_t t = 0; t <= target_length; ++t) {
      if (per_target[static_cast<size_t>(t)] == 0) out[(r * target_width + t) * source_width + source_length] = 1.0f;
    }
  }
  return matrix;
}

void PieceLinks::add_pair(const std::vector<Link>& links) {
  links_.insert(links_.end(), links.begin(), links.end());
  offsets_.push_back(static_cast<int64_t>(links_.size()));
}

std::string PieceLinks::to_bytes() const {
  const uint64_t pairs = static_cast<uint64_t>(size()), count = links_.size();
  const size_t offsets_bytes = offsets_.size() * sizeof(int64_t), links_bytes = links_.size() * sizeof(Link);
  const uint64_t checksum =
      XXH3_64bits(offsets_.data(), offsets_bytes) ^ XXH3_64bits_withSeed(links_.data(), links_bytes, 1);
  std::string bytes(sizeof kLinksMagic + 3 * sizeof(uint64_t) + offsets_bytes + links_bytes, '\0');
  char* out = bytes.data();
  for (const auto& [data, size] : std::vector<std::pair<const void*, size_t>>{{kLinksMagic, sizeof kLinksMagic},
                                                                              {&pairs, 8},
                                                                              {&count, 8},
                                                                              {&checksum, 8},
                                                                              {offsets_.data(), offsets_bytes},
                                                                              {links_.data(), links_bytes}}) {
    if (size > 0) std::memcpy(out, data, size);
    out += size;
  }
  return bytes;
}

PieceLinks PieceLinks::from_bytes(const std::string& bytes, int64_t pairs) {
  constexpr size_t kHead = sizeof kLinksMagic + 3 * sizeof(uint64_t);
  uint64_t stored_pairs = 0, count = 0, checksum = 0;
  if (bytes.size() < kHead || std::memcmp(bytes.data(), kLinksMagic, sizeof kLinksMagic) != 0) {
    throw InputError("not a trafo alignment table");
  }
  std::memcpy(&stored_pairs, bytes.data() + 8, 8);
  std::memcpy(&count, bytes.data() + 16, 8);
  std::memcpy(&checksum, bytes.data() + 24, 8);
  if (stored_pairs != static_cast<uint64_t>(pairs) || count > bytes.size() ||
      bytes.size() != kHead + (stored_pairs + 1) * sizeof(int64_t) + count * sizeof(Link)) {
    throw InputError("an alignment table of another size");
  }
  PieceLinks table;
  table.offsets_.resize(stored_pairs + 1);
  table.links_.resize(count);
  std::memcpy(table.offsets_.data(), bytes.data() + kHead, table.offsets_.size() * sizeof(int64_t));
  if (count > 0) {
    std::memcpy(table.links_.data(), bytes.data() + kHead + table.offsets_.size() * sizeof(int64_t), count * sizeof(Link));
  }
  const uint64_t found = XXH3_64bits(table.offsets_.data(), table.offsets_.size() * sizeof(int64_t)) ^
                         XXH3_64bits_withSeed(table.links_.data(), count * sizeof(Link), 1);
  if (found != checksum || table.offsets_.front() != 0 || table.offsets_.back() != static_cast<int64_t>(count)) {
    throw InputError("an alignment table whose checksum does not match");
  }
  for (size_t i = 1; i < table.offsets_.size(); ++i) {
    if (table.offsets_[i] < table.offsets_[i - 1]) throw InputError("an alignment table out of order");
  }
  return table;
}

PieceLinks map_word_links(const Corpus& corpus, const Tokenizer& tokenizer, const std::filesystem::path& alignment,
                          int64_t lines, int tag) {
  check_text_file(alignment);
  std::ifstream in(alignment, std::ios::binary);
  if (!in) throw InputError("cannot read alignment file " + alignment.string());
  const auto source_starts = word_starts(tokenizer, false), target_starts = word_starts(tokenizer, true);
  const std::string file = alignment.string();
  PieceLinks table;
  std::string line, first_past;
  int64_t number = 0, pair = 0, pairs_past = 0;
  std::vector<PieceLinks::Link> links;
  while (std::getline(in, line)) {
    ++number;
    // The pair of this line, if the corpus kept it, and its case variants (data/case_variants.h),
    // which keep its words and so its links.
    while (pair < corpus.size() && corpus.line_number(pair) == number) {
      const auto* source = corpus.source(pair);
      const int64_t skip = tag >= 0 && corpus.source_length(pair) > 0 && source[0] == tag ? 1 : 0;
      const auto source_words = piece_words(source, corpus.source_length(pair), skip, source_starts);
      const auto target_words = piece_words(corpus.target(pair), corpus.target_length(pair), 0, target_starts);
      const int source_count = source_words.empty() ? 0 : source_words.back() + 1;
      const int target_count = target_words.empty() ? 0 : target_words.back() + 1;
      links.clear();
      auto word_links = read_word_links(line, file, number);
      std::sort(word_links.begin(), word_links.end());
      word_links.erase(std::unique(word_links.begin(), word_links.end()), word_links.end());
      const auto past = std::find_if(word_links.begin(), word_links.end(), [&](const std::pair<int, int>& link) {
        return link.first >= source_count || link.second >= target_count;
      });
      if (past != word_links.end()) {
        // A line whose words SentencePiece's normalisation counts otherwise (a zero-width or odd space)
        // loses its links; more than a few such lines is the wrong file.
        if (first_past.empty()) {
          first_past = file + ":" + std::to_string(number) + ": link " + std::to_string(past->first) + "-" +
                       std::to_string(past->second) + " points past the pair's " + std::to_string(source_count) +
                       " source and " + std::to_string(target_count) +
                       " target words (words as SentencePiece splits the lines: at white space)";
        }
        ++pairs_past;
        word_links.clear();
      }
      for (const auto& [i, j] : word_links) {
        for (size_t p = 0; p < source_words.size(); ++p) {
          if (source_words[p] != i) continue;
          for (size_t q = 0; q < target_words.size(); ++q) {
            if (target_words[q] == j) links.push_back({static_cast<uint16_t>(p), static_cast<uint16_t>(q)});
          }
        }
      }
      table.add_pair(links);
      ++pair;
    }
  }
  if (number != lines) {
    throw InputError("alignment file " + file + " has " + std::to_string(number) + " lines, its corpus " +
                     std::to_string(lines) + ": one line of links per line pair");
  }
  if (pair != corpus.size()) throw std::logic_error("map_word_links: the corpus's lines are out of order");
  if (pairs_past > corpus.size() / 100) {
    throw InputError(first_past + "; " + std::to_string(pairs_past) + " of " + std::to_string(corpus.size()) +
                     " pairs have such links (is it the alignment of these files, source to target?)");
  }
  if (pairs_past > 0) {
    spdlog::warn("{} of {} pairs of {} have word links past their words and are trained without links; the first: {}",
                 pairs_past, corpus.size(), file, first_past);
  }
  return table;
}

PieceLinks open_piece_links(const std::filesystem::path& folder, const std::filesystem::path& corpus_file,
                            const std::filesystem::path& source, const std::filesystem::path& target,
                            const Corpus& corpus, const Tokenizer& tokenizer, const std::filesystem::path& alignment,
                            int64_t lines, int tag) {
  const std::string key = "links 1\n" + corpus_file.filename().string() + "\n" + file_stamp(source) + "\n" +
                          file_stamp(target) + "\n" + file_stamp(alignment) + "\n";
  const auto path = folder / fmt::format("links-{:016x}.bin", XXH3_64bits(key.data(), key.size()));
  std::error_code error;
  if (std::filesystem::is_regular_file(path, error)) {
    try {
      return PieceLinks::from_bytes(util::read_file(path), corpus.size());
    } catch (const InputError& e) {
      spdlog::warn("mapping the word links of {} again: {} cannot be used ({})", alignment.string(), path.string(),
                   e.what());
    }
  }
  auto table = map_word_links(corpus, tokenizer, alignment, lines, tag);
  util::write_file_atomically(path, table.to_bytes(), util::Special::kReplace);
  spdlog::info("mapped {} word-link lines of {} onto pieces ({} piece links), kept for later runs: {}", lines,
               alignment.string(), table.links(), path.string());
  return table;
}

}  // namespace trafo::data
