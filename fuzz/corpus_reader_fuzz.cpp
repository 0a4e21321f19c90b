// The corpus reader on arbitrary bytes: data::check_parallel_files, data::Corpus::load, and the token
// cache built from the same files on two threads, which must hold exactly what Corpus::load read.
// Input: one option byte (length filters and case variants), then the source file's bytes, a 0xFF
// byte (never part of UTF-8), and the target file's bytes.
#include <cstddef>
#include <cstdint>
#include <filesystem>

#include <ATen/Parallel.h>

#include "fuzz_models.h"
#include "fuzz_support.h"
#include "trafo/data/corpus.h"
#include "trafo/data/token_cache.h"
#include "trafo/util/files.h"

using namespace trafo;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  at::set_num_threads(1);
  fuzz::small_tokenizer();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static constexpr int64_t kMaxLengths[] = {250, 0, 1, 4};
  static constexpr double kRatios[] = {0.0, 1.0, 1.5, 3.0};
  data::CorpusOptions options;
  options.max_length = kMaxLengths[data[0] & 3];
  options.max_length_ratio = kRatios[(data[0] >> 2) & 3];
  options.all_caps_every = (data[0] >> 4) & 1 ? 2 : 0;
  options.title_case_every = (data[0] >> 5) & 1 ? 3 : 0;
  const bool variants = options.all_caps_every > 0 || options.title_case_every > 0;
  const auto [source, target] =
      fuzz::split_once(std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1), '\xff');
  const auto source_path = fuzz::write_scratch("train.src", source);
  const auto target_path = fuzz::write_scratch("train.tgt", target);

  int64_t lines = -1;
  const bool checked = fuzz::expect_trafo_errors("check_parallel_files",
                                                 [&] { lines = data::check_parallel_files(source_path, target_path); });
  fuzz::expect_trafo_errors("Corpus::load", [&] {
    const auto corpus = data::Corpus::load(source_path, target_path, fuzz::small_tokenizer(), options);
    // Both read the same lines with the same checks.
    fuzz::check(checked, "Corpus::load accepted files that check_parallel_files rejected");
    const auto& counts = corpus.counts();
    fuzz::check(counts.lines_read == lines, "Corpus::load read " + std::to_string(counts.lines_read) +
                                                " lines, check_parallel_files counted " + std::to_string(lines));
    fuzz::check(counts.kept() + counts.skipped_empty + counts.skipped_too_long + counts.skipped_ratio == lines,
                "kept and skipped pairs do not add up to the lines read");
    // Case variants come beside their pair, two at most, with its line number.
    fuzz::check(variants ? corpus.size() >= counts.kept() && corpus.size() <= 3 * counts.kept()
                         : corpus.size() == counts.kept(),
                "case variants beyond the options' count");
    int64_t previous_line = 0;
    for (int64_t i = 0; i < corpus.size(); ++i) {
      const int64_t longest = std::max(corpus.source_length(i), corpus.target_length(i));
      fuzz::check(corpus.source_length(i) > 0 && corpus.target_length(i) > 0, "an empty side was kept");
      fuzz::check(options.max_length == 0 || longest <= options.max_length, "a pair over max_length was kept");
      const bool variant = i > 0 && corpus.line_number(i) == previous_line;
      fuzz::check((corpus.line_number(i) > previous_line || (variants && variant)) && corpus.line_number(i) <= lines,
                  "line numbers out of order");
      previous_line = corpus.line_number(i);
      for (int64_t j = 0; j < corpus.source_length(i); ++j) {
        fuzz::check(corpus.source(i)[j] >= 0 && corpus.source(i)[j] < fuzz::small_tokenizer().vocab_size(),
                    "a source id outside the vocabulary");
      }
    }
  });
  // The token cache reads with the same checks, and holds the same pairs, counts and pieces.
  const auto cache_folder = source_path.parent_path() / "token-cache";
  util::remove_tree(cache_folder);
  fuzz::expect_trafo_errors("open_token_cache", [&] {
    const auto cached =
        data::open_token_cache(cache_folder, source_path, target_path, fuzz::small_tokenizer(), options, 2);
    fuzz::check(checked, "the token cache accepted files that check_parallel_files rejected");
    const auto memory = data::Corpus::load(source_path, target_path, fuzz::small_tokenizer(), options);
    const auto& a = cached.corpus;
    fuzz::check(a.size() == memory.size() && a.counts().lines_read == memory.counts().lines_read &&
                    a.counts().skipped_empty == memory.counts().skipped_empty &&
                    a.counts().skipped_too_long == memory.counts().skipped_too_long &&
                    a.counts().skipped_ratio == memory.counts().skipped_ratio,
                "the token cache counts other pairs than Corpus::load");
    for (int64_t i = 0; i < a.size(); ++i) {
      fuzz::check(a.line_number(i) == memory.line_number(i) && a.source_length(i) == memory.source_length(i) &&
                      a.target_length(i) == memory.target_length(i) &&
                      std::equal(a.source(i), a.source(i) + a.source_length(i), memory.source(i)) &&
                      std::equal(a.target(i), a.target(i) + a.target_length(i), memory.target(i)),
                  "the token cache holds another pair than Corpus::load");
    }
  });
  return 0;
}
