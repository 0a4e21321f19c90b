#include "teacher_translations.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "trafo/errors.h"
#include "trafo/util/files.h"
#include "trafo/util/hex.h"

namespace trafo::distill {
namespace {

// The raw log p of a hypothesis from its score: beam search divides it by GNMT's length penalty
// ((5 + |y|) / 6)^alpha, |y| its pieces and eos (decode/translator.h); greedy keeps it raw.
double raw_log_prob(const inference::Hypothesis& best, const inference::SearchOptions& options) {
  if (options.beam <= 1 || options.length_penalty == 0.0) return best.score;
  const double pieces = static_cast<double>(best.tokens.size() + 1);
  return best.score * std::pow((5.0 + pieces) / 6.0, options.length_penalty);
}

// "1.5m", "2h03m": a duration for the progress line.
std::string duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  if (seconds < 90) return fmt::format("{:.0f}s", seconds);
  if (seconds < 5400) return fmt::format("{:.1f}m", seconds / 60.0);
  return fmt::format("{}h{:02}m", static_cast<int64_t>(seconds / 3600), static_cast<int64_t>(seconds / 60) % 60);
}

}  // namespace

Chunks::Chunks(std::filesystem::path folder, int corpus, int64_t lines, int64_t chunk_lines)
    : folder_(std::move(folder)), corpus_(corpus), lines_(lines), chunk_lines_(chunk_lines) {}

int64_t Chunks::lines_of(int64_t chunk) const {
  return std::min(chunk_lines_, lines_ - first_line(chunk));
}

std::filesystem::path Chunks::path_prefix(int64_t chunk) const {
  return folder_ / fmt::format("c{}-{:06}-", corpus_, chunk);
}

std::vector<Distilled> Chunks::read(int64_t chunk) const {
  const auto prefix = path_prefix(chunk).filename().string();
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(folder_, error)) {
    const auto name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0 || name.size() != prefix.size() + 16 + 4 || name.substr(name.size() - 4) != ".tsv") {
      continue;
    }
    std::vector<Distilled> lines;
    if (entry.is_regular_file(error)) {
      const auto bytes = util::read_file(entry.path());
      if (util::hex(XXH3_64bits(bytes.data(), bytes.size())) == name.substr(prefix.size(), 16)) {
        size_t start = 0;
        while (start < bytes.size()) {
          const auto end = bytes.find('\n', start);
          const auto tab = bytes.find('\t', start);
          if (end == std::string::npos || tab == std::string::npos || tab > end) break;
          lines.push_back({std::strtod(bytes.c_str() + start, nullptr), bytes.substr(tab + 1, end - tab - 1)});
          start = end + 1;
        }
        if (static_cast<int64_t>(lines.size()) == lines_of(chunk) && start == bytes.size()) return lines;
      }
    }
    spdlog::warn("{} is not a whole chunk of this run: translating it again", entry.path().string());
    util::remove_tree(entry.path());
  }
  return {};
}

void Chunks::write(int64_t chunk, const std::vector<Distilled>& lines) const {
  std::string bytes;
  for (const auto& line : lines) bytes += fmt::format("{:.6f}\t{}\n", line.log_prob_per_piece, line.text);
  const auto path = path_prefix(chunk).string() + util::hex(XXH3_64bits(bytes.data(), bytes.size())) + ".tsv";
  util::write_file_atomically(path, bytes, util::Special::kReplace);
}

bool translate_chunks(const inference::Translation& engine, const std::vector<std::string>& sources,
                      const Chunks& chunks, const std::string& name, const std::atomic<bool>* stop_requested) {
  std::vector<int64_t> missing;
  for (int64_t chunk = 0; chunk < chunks.count(); ++chunk) {
    if (chunks.read(chunk).empty() && chunks.lines_of(chunk) > 0) missing.push_back(chunk);
  }
  if (missing.empty()) {
    spdlog::info("distill stage 1, {}: all {} chunks translated before", name, chunks.count());
    return true;
  }
  spdlog::info("distill stage 1, {}: {} of {} chunks to translate ({} lines), beam {}", name, missing.size(),
               chunks.count(), sources.size(), engine.options().beam);
  const auto start = std::chrono::steady_clock::now();
  int64_t lines_done = 0, lines_left = 0;
  for (const auto chunk : missing) lines_left += chunks.lines_of(chunk);
  for (size_t i = 0; i < missing.size(); ++i) {
    if (stop_requested != nullptr && stop_requested->load()) {
      spdlog::info("distill stage 1, {}: stopped by signal; {} chunks left for the next run", name, missing.size() - i);
      return false;
    }
    const auto chunk = missing[i];
    const auto first = sources.begin() + chunks.first_line(chunk);
    const std::vector<std::string> lines(first, first + chunks.lines_of(chunk));
    const auto translated = engine.translate(engine.prepare(lines), false, chunks.first_line(chunk));
    std::vector<Distilled> out;
    out.reserve(translated.size());
    for (const auto& line : translated) {
      const auto& best = line.hypotheses.front();
      out.push_back({raw_log_prob(best, engine.options()) / static_cast<double>(best.tokens.size() + 1), best.text});
    }
    chunks.write(chunk, out);
    lines_done += static_cast<int64_t>(lines.size());
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double per_s = static_cast<double>(lines_done) / std::max(seconds, 1e-9);
    spdlog::info("distill stage 1, {}: chunk {}/{} | {} of {} lines | {:.1f} lines/s | {} | ETA {}", name, chunk + 1,
                 chunks.count(), lines_done, lines_left, per_s, duration(seconds),
                 duration(static_cast<double>(lines_left - lines_done) / per_s));
  }
  return true;
}

bool has_text(const std::string& line) { return line.find_first_not_of(" \t\r") != std::string::npos; }

std::pair<int64_t, int64_t> keep_likely(const std::vector<std::string>& sources, const Chunks& chunks, double share,
                                        const std::filesystem::path& src_out, const std::filesystem::path& tgt_out) {
  std::vector<Distilled> lines;
  for (int64_t chunk = 0; chunk < chunks.count(); ++chunk) {
    auto read = chunks.read(chunk);
    if (read.empty()) throw RunError("distill: chunk " + std::to_string(chunk + 1) + " went missing after stage 1");
    lines.insert(lines.end(), std::make_move_iterator(read.begin()), std::make_move_iterator(read.end()));
  }
  std::vector<bool> keep(lines.size(), true);
  std::vector<size_t> ranked;
  for (size_t i = 0; i < lines.size(); ++i) {
    keep[i] = has_text(sources[i]) && has_text(lines[i].text);
    if (keep[i]) ranked.push_back(i);
  }
  if (ranked.empty()) {
    throw InputError("the teacher's translations of " + src_out.filename().string() +
                     "'s sources are all empty: it has not learned to translate yet (train it longer)");
  }
  auto worse = [&](size_t a, size_t b) {
    const double x = lines[a].log_prob_per_piece, y = lines[b].log_prob_per_piece;
    if (std::isnan(x) != std::isnan(y)) return std::isnan(x);
    return x < y || (x == y && a < b);
  };
  std::stable_sort(ranked.begin(), ranked.end(), worse);
  const auto dropped = static_cast<size_t>(std::floor(share * static_cast<double>(ranked.size())));
  for (size_t i = 0; i < dropped; ++i) keep[ranked[i]] = false;
  std::string src, tgt;
  int64_t kept = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (!keep[i]) continue;
    src += sources[i] + "\n";
    tgt += lines[i].text + "\n";
    ++kept;
  }
  util::write_file_atomically(src_out, src, util::Special::kReplace);
  util::write_file_atomically(tgt_out, tgt, util::Special::kReplace);
  return {kept, static_cast<int64_t>(lines.size() - ranked.size())};
}

}  // namespace trafo::distill
