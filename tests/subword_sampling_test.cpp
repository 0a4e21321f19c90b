// Subword regularisation (--subword-alpha): sampled segmentations drawn from a seed alone, kept in
// token caches of their own that hold the best segmentation's pairs, taken one per epoch in turn by
// the batches, and a training run that uses them, resumes exactly and refuses absurd values.
#include <fstream>
#include <future>
#include <set>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "data_support.h"
#include "model_support.h"
#include "run_support.h"
#include "weights_support.h"
#include "trafo/data/batcher.h"
#include "trafo/data/corpus.h"
#include "trafo/data/token_cache.h"
#include "trafo/data/tokenizer.h"
#include "trafo/toy/toy_corpus.h"
#include "trafo/train/trainer.h"
#include "trafo/util/files.h"

namespace trafo::data {
namespace {

using testing::make_temp_dir;

class Sampling : public ::testing::TestWithParam<const char*> {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::filesystem::path(make_temp_dir("sampling"));
    write_toy_corpus(*dir_, ToyCorpusOptions{3000, 10, 10, 1});  // words of many pieces
  }
  static void TearDownTestSuite() { delete dir_; }
  Tokenizer tokenizer() const {
    TokenizerOptions options;
    options.vocab_size = 400;
    options.model_type = GetParam();
    return Tokenizer::train({*dir_ / "train.en", *dir_ / "train.de"}, options);
  }
  static std::filesystem::path* dir_;
};

std::filesystem::path* Sampling::dir_ = nullptr;

// A draw is a function of its seed: again after other draws, and on another thread; it spells the
// same text as the best segmentation; other seeds give other segmentations, and the bpe model's
// dropped merges give more pieces.
TEST_P(Sampling, ADrawDependsOnItsSeedAloneAndSpellsTheText) {
  const auto pieces = tokenizer();
  const auto lines = util::read_lines(*dir_ / "train.en", 300);
  const double alpha = std::string(GetParam()) == "bpe" ? 0.1 : 0.3;
  std::vector<std::vector<int>> first;
  int64_t best_pieces = 0, sampled_pieces = 0, differ_from_best = 0, differ_by_seed = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    first.push_back(pieces.sample(lines[i], alpha, 1000 + i));
    const auto best = pieces.encode(lines[i]);
    EXPECT_EQ(pieces.decode(first.back()), pieces.decode(best)) << lines[i];
    EXPECT_EQ(pieces.decode(first.back()), lines[i]);
    best_pieces += static_cast<int64_t>(best.size());
    sampled_pieces += static_cast<int64_t>(first.back().size());
    differ_from_best += first.back() != best;
    differ_by_seed += pieces.sample(lines[i], alpha, 7 * i + 1) != first.back();
  }
  EXPECT_GT(differ_from_best, 30) << "of 300 lines";
  EXPECT_GT(differ_by_seed, 30) << "of 300 lines";
  if (std::string(GetParam()) == "bpe") {
    EXPECT_GT(sampled_pieces, best_pieces) << "dropped merges leave more pieces";
  }
  auto again = std::async(std::launch::async, [&] {
    std::vector<std::vector<int>> drawn;
    for (size_t i = lines.size(); i-- > 0;) drawn.insert(drawn.begin(), pieces.sample(lines[i], alpha, 1000 + i));
    return drawn;
  });
  EXPECT_EQ(again.get(), first);
  EXPECT_EQ(pieces.sample_target(lines[3], alpha, 1003), first[3]) << "one joint vocabulary";
}

// Sample k of a corpus holds the best segmentation's pairs (count, order, lines, hashes) spelled
// with other pieces, within --max-length; it is a cache of its own, the same whatever the threads.
TEST_P(Sampling, EverySampleHoldsTheBestSegmentationsPairs) {
  const auto pieces = tokenizer();
  const auto cache = make_temp_dir("sampling-cache");
  CorpusOptions best_options;
  best_options.max_length = 24;
  auto open = [&](int64_t sample, int threads, const std::filesystem::path& folder) {
    CorpusOptions options = best_options;
    options.sample = sample;
    options.sample_alpha = sample > 0 ? 0.3 : 0.0;
    return open_token_cache(folder, *dir_ / "train.en", *dir_ / "train.de", pieces, options, threads);
  };
  const auto best = open(0, 1, cache);
  const auto one = open(1, 2, cache), two = open(2, 1, cache);
  EXPECT_EQ(std::set<std::filesystem::path>({best.file, one.file, two.file}).size(), 3u);
  ASSERT_GT(best.corpus.counts().skipped_too_long, 0);
  for (const auto* sample : {&one.corpus, &two.corpus}) {
    ASSERT_EQ(sample->size(), best.corpus.size());
    int64_t differ = 0;
    for (int64_t i = 0; i < best.corpus.size(); ++i) {
      ASSERT_EQ(sample->line_number(i), best.corpus.line_number(i));
      ASSERT_EQ(sample->record(i).source_hash, best.corpus.record(i).source_hash);
      ASSERT_LE(sample->source_length(i), 24);
      ASSERT_LE(sample->target_length(i), 24);
      const std::vector<int> source(sample->source(i), sample->source(i) + sample->source_length(i));
      const std::vector<int> target(sample->target(i), sample->target(i) + sample->target_length(i));
      const std::vector<int> best_source(best.corpus.source(i), best.corpus.source(i) + best.corpus.source_length(i));
      ASSERT_EQ(pieces.decode(source), pieces.decode(best_source)) << i;
      differ += source != best_source;
      ASSERT_FALSE(target.empty());
    }
    EXPECT_GT(differ, best.corpus.size() / 10);
  }
  int64_t samples_differ = 0;
  for (int64_t i = 0; i < one.corpus.size(); ++i) {
    samples_differ += !std::equal(one.corpus.source(i), one.corpus.source(i) + one.corpus.source_length(i),
                                  two.corpus.source(i), two.corpus.source(i) + two.corpus.source_length(i));
  }
  EXPECT_GT(samples_differ, one.corpus.size() / 10);
  const auto elsewhere = open(1, 3, make_temp_dir("sampling-cache-3"));
  std::ifstream a(one.file, std::ios::binary), b(elsewhere.file, std::ios::binary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(a), {}), std::string(std::istreambuf_iterator<char>(b), {}));
}

INSTANTIATE_TEST_SUITE_P(Vocabularies, Sampling, ::testing::Values("unigram", "bpe"));

// Two segmentations of the same pairs (told apart by their pieces): epoch e takes segmentation e % 2,
// and a resume in the second epoch goes on as the uninterrupted stream.
TEST(Segmentations, EpochETakesSegmentationEModuloTheirCount) {
  Corpus first, second;
  for (int i = 0; i < 200; ++i) {
    const auto length = static_cast<size_t>(1 + i % 9);
    first.add(std::vector<int>(length, 10), std::vector<int>(length, 10), i + 1);
    second.add(std::vector<int>(length + 1, 11), std::vector<int>(length, 11), i + 1);
  }
  BatcherOptions options;
  options.batch_tokens = 64;
  options.prefetch = 0;
  Batcher batcher(std::vector<Segmentations>{{&first, &second}}, {1.0}, options);
  std::vector<std::pair<BatchPosition, std::vector<int64_t>>> served;
  std::vector<StreamPosition> after;
  while (served.empty() || served.back().first.epoch < 3) {
    const auto batch = batcher.next();
    const int expected = batch.position.epoch % 2 == 0 ? 10 : 11;
    EXPECT_EQ(batch.source.select(1, 0).eq(expected).all().item<bool>(), true) << batch.position.epoch;
    for (int64_t row = 0; row < batch.source.size(0); ++row) {
      const auto pair = batch.pairs[static_cast<size_t>(row)];
      const auto length = (expected == 10 ? first : second).source_length(pair);
      EXPECT_EQ(batch.source[row][length].item<int64_t>(), kEosId);
    }
    served.emplace_back(batch.position, batch.pairs);
    after.push_back(batch.next);
  }
  size_t resume_at = 0;
  while (served[resume_at].first.epoch < 1 || served[resume_at].first.index < 2) ++resume_at;
  Batcher resumed(std::vector<Segmentations>{{&first, &second}}, {1.0}, options, after[resume_at - 1]);
  for (size_t i = resume_at; i < served.size(); ++i) {
    const auto batch = resumed.next();
    EXPECT_EQ(batch.position, served[i].first);
    EXPECT_EQ(batch.pairs, served[i].second);
  }
}

}  // namespace
}  // namespace trafo::data

namespace trafo::train {
namespace {

using testing::make_temp_dir;
using testing::run_trafo;

run_config::TrainConfig sampled_training(const std::filesystem::path& data, const std::filesystem::path& run,
                                         double alpha) {
  run_config::TrainConfig c;
  c.data.data_dir = data.string();
  c.data.cache_dir = (run.parent_path() / "cache").string();
  c.vocab.vocab_size = 300;
  c.model = testing::tiny_model_config(300);
  c.optim.batch_tokens = 200;
  c.optim.warmup_steps = 4;
  c.run.valid_every = 5;
  c.run.valid_max_sentences = 5;
  c.run.log_every = 1;
  c.machine.threads = 1;
  c.data.subword_alpha = alpha;
  c.data.subword_samples = 2;
  c.run.run_dir = run.string();
  return c;
}

// Several epochs on two sampled segmentations: the run says so, keeps one cache per sample, trains
// other weights than the best segmentation gives, and a resume in a later epoch reaches the weights
// of the uninterrupted run.
TEST(SubwordRegularisation, ARunTakesTheSamplesInTurnAndResumesExactly) {
  const auto data = make_temp_dir("subword-data");
  testing::write_synthetic_corpus(data, "train", 40, 1);
  testing::write_synthetic_corpus(data, "dev", 10, 2);
  const auto root = make_temp_dir("subword-runs");
  auto whole = sampled_training(data, root / "whole", 0.3);
  whole.stop.max_steps = 14;
  const auto finished = Trainer(whole).run();
  EXPECT_GE(finished.step, 14);
  int tokens_files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(root / "cache")) {
    tokens_files += entry.path().extension() == ".tokens";
  }
  EXPECT_EQ(tokens_files, 3) << "the best segmentation and two samples";
  const auto log = testing::read_text(root / "whole" / "train.log");
  EXPECT_NE(log.find("subword regularisation: 2 sampled segmentations"), std::string::npos) << log;
  const auto events = testing::read_jsonl(root / "whole" / "metrics.jsonl");
  EXPECT_EQ(events.front()["subword_samples"], 2) << events.front();
  EXPECT_EQ(events.front()["corpora"][0]["sampled_token_caches"].size(), 2u) << events.front();
  EXPECT_GE(events.back().value("epoch", 0), 3) << "the run spans several epochs: " << events.back();

  auto part = sampled_training(data, root / "part", 0.3);
  part.stop.max_steps = 9;
  Trainer(part).run();
  part.stop.max_steps = 14;
  Trainer(part).run();
  auto plain = sampled_training(data, root / "plain", 0.0);
  plain.stop.max_steps = 14;
  Trainer(plain).run();

  testing::expect_resumed_equals_whole_unlike_plain(root / "whole", root / "part", root / "plain",
                                                    "subword regularisation");
}

TEST(SubwordRegularisation, AbsurdValuesAreOneLineAndExitTwo) {
  const auto data = make_temp_dir("subword-bad");
  for (const std::string option : {"--subword-alpha 1.5", "--subword-alpha -0.1", "--subword-alpha nan",
                                   "--subword-alpha 0.2 --subword-samples 0", "--subword-samples 65"}) {
    const auto result = run_trafo("train --data-dir " + testing::quoted(data) + " --src-lang en --tgt-lang de " + option);
    EXPECT_EQ(result.exit_code, 2) << option << ": " << result.errors;
    EXPECT_EQ(testing::lines_of(result.errors).size(), 1u) << option << ": " << result.errors;
    EXPECT_NE(result.errors.find("subword-"), std::string::npos) << option << ": " << result.errors;
  }
}

}  // namespace
}  // namespace trafo::train
