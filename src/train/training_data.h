// The training data of a run, before its first step: the cache folder, the checks of the data files, the
// vocabulary (learned or found in the cache folder), the corpora's tags, the corpora mapped from their
// token caches, the batcher over them, and the leak check. TrainingFiles and TrainingData are parts of a
// train::Session. Internal to train/.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "replicas.h"
#include "resume_choice.h"
#include "trafo/data/batcher.h"
#include "trafo/data/leak_check.h"
#include "trafo/data/token_cache.h"
#include "trafo/data/tokenizer.h"
#include "trafo/run_config/options.h"
#include "trafo/run_config/run_identity.h"

namespace trafo::train {

// --cache-dir, else $TRAFO_CACHE_DIR, $XDG_CACHE_HOME/trafo, ~/.cache/trafo, or RUN_DIR/cache without a
// home; InputError when it cannot be made or written.
std::filesystem::path cache_folder(const run_config::TrainConfig& config);

// Bad input is reported before any work: the dev (and test) files are read whole; each training
// corpus once per version of its files (data::check_parallel_files_once). Returns the corpora's line counts.
std::vector<int64_t> check_data(const run_config::DataFiles& files, const std::filesystem::path& cache);

// The corpora's tags, each once, in order: the tokenizer's reserved pieces.
std::vector<std::string> corpus_tags(const run_config::DataFiles& paths);

// The bytes of a vocabulary: one learned before from the same files (same versions), weights, tags and
// vocabulary options, taken from the cache folder; otherwise one learned from a sample and kept there.
// `vocab` is the run's vocabulary options with the corpora's tags reserved (vocabulary_options).
std::string learn_vocabulary(const data::TokenizerOptions& vocab, const run_config::DataFiles& paths,
                             const std::vector<int64_t>& lines, const std::filesystem::path& cache);

// The run's vocabulary options as the tokenizer is learned with them: `threads`, and the corpora's tags reserved.
data::TokenizerOptions vocabulary_options(const run_config::TrainConfig& config, const run_config::DataFiles& paths,
                                          int threads);

// Each corpus's tag as a piece id (-1: none); InputError for a tag the tokenizer does not reserve.
std::vector<int> tag_ids(const run_config::DataFiles& paths, const data::Tokenizer& tokenizer);

// Every corpus mapped from its token cache, which rank 0 builds (or finds) first: its best
// segmentation (`sample` 0), or with --subword-alpha its sampled segmentation number `sample`. With
// guided alignment, a corpus's word links (of its `lines[i]` line pairs, check_data's) come with it.
std::vector<data::CachedCorpus> load_corpora(const run_config::TrainConfig& config, const run_config::DataFiles& paths,
                                             const std::vector<int64_t>& lines, const data::Tokenizer& tokenizer, const std::vector<int>& tags,
                                             const std::filesystem::path& cache, int threads, Replicas& replicas,
                                             int64_t sample = 0);

// With --subword-alpha, the --subword-samples sampled segmentations of every corpus ([sample][corpus]),
// each a token cache of its own; none without.
std::vector<std::vector<data::CachedCorpus>> load_samples(const run_config::TrainConfig& config,
                                                          const run_config::DataFiles& paths,
                                                          const std::vector<int64_t>& lines,
                                                          const data::Tokenizer& tokenizer, const std::vector<int>& tags,
                                                          const std::filesystem::path& cache, int threads,
                                                          Replicas& replicas);

// Each corpus's weight in the draw: its own (--corpus SRC,TGT,WEIGHT) and, with a sampling temperature
// T > 0, times its pairs^(1/T) (fairseq's temperature sampling: T = 1 draws by size, a larger T
// draws small corpora more often than their size). InputError naming a corpus whose share of the
// draw is under kMinCorpusShare.
inline constexpr double kMinCorpusShare = 1e-4;
std::vector<double> draw_weights(const run_config::DataFiles& paths, const std::vector<data::CachedCorpus>& corpora,
                                 double temperature);

// Batches over the corpora, sampled by draw_weights, from `start`: epoch e of a corpus takes sampled
// segmentation e % samples where there are `samples`, else `corpora`.
data::Batcher make_batcher(const std::vector<data::CachedCorpus>& corpora,
                           const std::vector<std::vector<data::CachedCorpus>>& samples,
                           const run_config::DataFiles& paths, double temperature, data::BatcherOptions options,
                           const data::StreamPosition& start);

// Dev and test pairs whose source is also in the training data.
struct LeakReport {
  data::Overlap dev;
  std::optional<data::Overlap> test;  // with test files
};

// The leak check: counts, and warns with the count and the first lines, for the dev and test sets.
LeakReport find_leaks(const run_config::DataFiles& paths, const data::Tokenizer& tokenizer,
                      const std::vector<data::CachedCorpus>& corpora);

// The data files of a run, checked before anything else is done (check_data), and where their caches go.
struct TrainingFiles {
  explicit TrainingFiles(const run_config::TrainConfig& config);  // InputError for bad data or cache folder

  const std::filesystem::path cache;       // token caches and vocabularies (cache_folder)
  const run_config::DataFiles paths;
  const std::vector<int64_t> train_lines;  // line pairs of each corpus
};

// The tokenizer and the corpora tokenized with it. The tokenizer is `resume`'s checkpoint's, or a new
// one that rank 0 learns (or finds in the cache) and the other ranks receive; its size is the model's
// vocabulary: a small corpus may give fewer pieces than asked for. Rank 0 builds the token caches first.
struct TrainingData {
  TrainingData(const run_config::TrainConfig& config, const TrainingFiles& files, const ResumePoint& resume,
               int threads, Replicas& replicas);
  TrainingData(const TrainingData&) = delete;
  TrainingData& operator=(const TrainingData&) = delete;

  int64_t train_pairs() const;  // of all corpora

  const data::Tokenizer tokenizer;
  const std::vector<int> tags;                    // each corpus's tag piece (-1: none)
  const std::vector<data::CachedCorpus> corpora;  // mapped from their token caches, as paths.train
  const std::vector<std::vector<data::CachedCorpus>> samples;  // load_samples'
};

}  // namespace trafo::train
