// Data at scale: the token cache, batches planned a window at a time, several corpora sampled by
// weight, the vocabulary's weighted sample, corpus tags and the leak check.
#include <sys/stat.h>

#include <fstream>
#include <map>
#include <set>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "data_support.h"
#include "trafo/data/batcher.h"
#include "trafo/data/corpus.h"
#include "trafo/data/leak_check.h"
#include "trafo/data/token_cache.h"
#include "trafo/data/tokenizer.h"
#include "trafo/errors.h"

namespace trafo::data {
namespace {

using testing::corpus_of_lengths;

using testing::make_temp_dir;
using testing::write_synthetic_corpus;
using testing::write_text;

class TokenCache : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::filesystem::path(make_temp_dir("token-cache"));
    write_synthetic_corpus(*dir_, "train", 30000, 1);  // several chunks of 8192 pairs
    TokenizerOptions options;
    options.vocab_size = 300;
    tokenizer_ = new Tokenizer(Tokenizer::train({*dir_ / "train.en", *dir_ / "train.de"}, options));
  }
  static void TearDownTestSuite() {
    delete tokenizer_;
    delete dir_;
  }
  static std::filesystem::path* dir_;
  static Tokenizer* tokenizer_;
};

std::filesystem::path* TokenCache::dir_ = nullptr;
Tokenizer* TokenCache::tokenizer_ = nullptr;

void expect_same_pairs(const Corpus& a, const Corpus& b) {
  ASSERT_EQ(a.size(), b.size());
  for (int64_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a.source_length(i), b.source_length(i)) << i;
    ASSERT_EQ(a.target_length(i), b.target_length(i)) << i;
    ASSERT_EQ(a.line_number(i), b.line_number(i)) << i;
    ASSERT_EQ(a.record(i).source_hash, b.record(i).source_hash) << i;
    ASSERT_TRUE(std::equal(a.source(i), a.source(i) + a.source_length(i), b.source(i))) << i;
    ASSERT_TRUE(std::equal(a.target(i), a.target(i) + a.target_length(i), b.target(i))) << i;
  }
}

std::string file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::set<std::string> files_in(const std::filesystem::path& folder) {
  std::set<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) names.insert(entry.path().filename().string());
  return names;
}

TEST_F(TokenCache, HoldsWhatReadingTheFilesInMemoryGivesAndIsMappedTheSecondTime) {
  const auto cache = make_temp_dir("cache");
  CorpusOptions options;
  options.max_length = 20;  // some pairs left out, counted alike
  const auto memory = Corpus::load(*dir_ / "train.en", *dir_ / "train.de", *tokenizer_, options);
  const auto built = open_token_cache(cache, *dir_ / "train.en", *dir_ / "train.de", *tokenizer_, options, 2);
  EXPECT_TRUE(built.built);
  EXPECT_TRUE(built.corpus.mapped());
  expect_same_pairs(memory, built.corpus);
  EXPECT_EQ(built.corpus.counts().lines_read, 30000);
  EXPECT_EQ(built.corpus.counts().skipped_too_long, memory.counts().skipped_too_long);
  EXPECT_GT(memory.counts().skipped_too_long, 0);

  const auto again = open_token_cache(cache, *dir_ / "train.en", *dir_ / "train.de", *tokenizer_, options, 2);
  EXPECT_FALSE(again.built);
  EXPECT_TRUE(again.rebuilt_because.empty());
  EXPECT_EQ(again.file, built.file);
  expect_same_pairs(memory, again.corpus);
  EXPECT_EQ(files_in(cache), std::set<std::string>{built.file.filename().string()}) << "no temporary files left";

  // Other filters or another tag are another cache.
  CorpusOptions tagged = options;
  tagged.tag = 5;
  const auto other = open_token_cache(cache, *dir_ / "train.en", *dir_ / "train.de", *tokenizer_, tagged, 1);
  EXPECT_TRUE(other.built);
  EXPECT_NE(other.file, built.file);
  ASSERT_EQ(other.corpus.size(), memory.size());  // the tag counts towards the length: none over 20 here
  EXPECT_EQ(other.corpus.source(0)[0], 5);
  EXPECT_EQ(other.corpus.source_length(0), memory.source_length(0) + 1);
  EXPECT_EQ(other.corpus.record(0).source_hash, memory.record(0).source_hash) << "the hash leaves the tag out";
}

TEST_F(TokenCache, TokenizingOnSeveralThreadsWritesTheSameFileAsOne) {
  const auto one = make_temp_dir("cache-1"), two = make_temp_dir("cache-2");
  const auto a = open_token_cache(one, *dir_ / "train.en", *dir_ / "train.de", *tokenizer_, {}, 1);
  const auto b = open_token_cache(two, *dir_ / "train.en", *dir_ / "train.de", *tokenizer_, {}, 3);
  EXPECT_EQ(file_bytes(a.file), file_bytes(b.file));
}

TEST_F(TokenCache, AChangedDataFileOrADamagedCacheIsBuiltAgain) {
  const auto data = make_temp_dir("cache-data");
  write_synthetic_corpus(data, "c", 500, 3);
  const auto cache = make_temp_dir("cache");
  const auto first = open_token_cache(cache, data / "c.en", data / "c.de", *tokenizer_, {}, 2);
  ASSERT_TRUE(first.built);
  const auto memory = Corpus::load(data / "c.en", data / "c.de", *tokenizer_, {});

  // A byte of the tokens changed: the checksum says so.
  {
    std::fstream file(first.file, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(4096 + 8);
    file.put('\x7f');
  }
  const auto damaged = open_token_cache(cache, data / "c.en", data / "c.de", *tokenizer_, {}, 2);
  EXPECT_TRUE(damaged.built);
  EXPECT_NE(damaged.rebuilt_because.find("checksum"), std::string::npos) << damaged.rebuilt_because;
  expect_same_pairs(memory, damaged.corpus);

  // A cut file: its size says so.
  std::filesystem::resize_file(first.file, std::filesystem::file_size(first.file) - 40);
  const auto cut = open_token_cache(cache, data / "c.en", data / "c.de", *tokenizer_, {}, 2);
  EXPECT_TRUE(cut.built);
  EXPECT_FALSE(cut.rebuilt_because.empty());

  // The data changed (another size and time): stale.
  write_synthetic_corpus(data, "c", 400, 4);
  const auto stale = open_token_cache(cache, data / "c.en", data / "c.de", *tokenizer_, {}, 2);
  EXPECT_TRUE(stale.built);
  EXPECT_NE(stale.rebuilt_because.find("changed"), std::string::npos) << stale.rebuilt_because;
  EXPECT_EQ(stale.corpus.size(), 400);
}

TEST_F(TokenCache, BadLinesAreNamedAndLeaveNoCacheBehind) {
  const auto data = make_temp_dir("cache-bad");
  std::string src, tgt;
  for (int i = 1; i <= 20000; ++i) {
    src += "the cat " + std::to_string(i) + "\n";
    tgt += i == 17000 ? "bad \xff byte\n" : "die katze\n";
  }
  write_text(data / "a.en", src);
  write_text(data / "a.de", tgt);
  const auto cache = make_temp_dir("cache");
  try {
    open_token_cache(cache, data / "a.en", data / "a.de", *tokenizer_, {}, 2);
    ADD_FAILURE() << "invalid UTF-8 was taken";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("a.de:17000: invalid UTF-8"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(files_in(cache).empty());

  write_text(data / "a.de", tgt.substr(0, tgt.find("bad")));  // 16999 lines
  try {
    open_token_cache(cache, data / "a.en", data / "a.de", *tokenizer_, {}, 2);
    ADD_FAILURE() << "different line counts were taken";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("has 20000 lines"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("has 16999"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(files_in(cache).empty());

  // A cache folder that cannot be made.
  write_text(data / "plain-file", "x");
  EXPECT_THROW(open_token_cache(data / "plain-file" / "cache", *dir_ / "train.en", *dir_ / "train.de", *tokenizer_,
                                {}, 1),
               InputError);
  EXPECT_THROW(check_cache_folder(data / "plain-file" / "cache"), InputError);
}

TEST_F(TokenCache, PagesGivenBackAreReadAgainFromTheFile) {
  const auto cache = make_temp_dir("cache");
  const auto cached = open_token_cache(cache, *dir_ / "train.en", *dir_ / "train.de", *tokenizer_, {}, 2);
  const auto memory = Corpus::load(*dir_ / "train.en", *dir_ / "train.de", *tokenizer_, {});
  cached.corpus.release(0, cached.corpus.size());
  expect_same_pairs(memory, cached.corpus);
}

TEST_F(TokenCache, TheLineCountIsCheckedOncePerVersionOfTheFiles) {
  const auto data = make_temp_dir("checked");
  write_synthetic_corpus(data, "c", 50, 3);
  const auto cache = make_temp_dir("cache");
  EXPECT_EQ(check_parallel_files_once(cache, data / "c.en", data / "c.de"), 50);
  EXPECT_EQ(files_in(cache).size(), 1u);
  EXPECT_EQ(check_parallel_files_once(cache, data / "c.en", data / "c.de"), 50);
  write_text(data / "c.de", "one line\n");
  EXPECT_THROW(check_parallel_files_once(cache, data / "c.en", data / "c.de"), InputError);
}

// --- batches planned a window at a time ---


TEST(Windows, EveryPairOncePerEpochUnderTheBudgetWithOrdersThatDifferPerEpoch) {
  const auto corpus = corpus_of_lengths(20000, 1);
  BatcherOptions options;
  options.batch_tokens = 300;
  options.window_pairs = 4096;  // 5 windows
  options.prefetch = 0;
  CorpusStream stream({&corpus}, options, 0, {});
  EXPECT_EQ(stream.windows(), 5);
  std::vector<std::vector<int64_t>> epochs(2);
  BatchPosition at;
  int64_t index = 0;
  while (true) {
    auto pairs = stream.next(at);
    if (at.epoch == 2) break;
    if (at.epoch == 0) {
      EXPECT_EQ(at.index, index++);
    }
    int64_t width = 0;
    for (const auto i : pairs) width = std::max({width, corpus.source_length(i) + 1, corpus.target_length(i) + 1});
    EXPECT_LE(width * static_cast<int64_t>(pairs.size()), options.batch_tokens);
    epochs[at.epoch].insert(epochs[at.epoch].end(), pairs.begin(), pairs.end());
  }
  for (auto& epoch : epochs) {
    std::vector<int64_t> sorted = epoch;
    std::sort(sorted.begin(), sorted.end());
    ASSERT_EQ(sorted.size(), 20000u);
    for (int64_t i = 0; i < 20000; ++i) ASSERT_EQ(sorted[i], i);
  }
  EXPECT_NE(epochs[0], epochs[1]);
  // Windows mix the corpus: the first batches do not all come from its first block of pairs.
  EXPECT_TRUE(std::any_of(epochs[0].begin(), epochs[0].begin() + 500, [](int64_t i) { return i >= kBlockPairs; }));
}

TEST(Windows, ACorpusInOneWindowIsPlannedAsAWholeEpoch) {
  const auto corpus = corpus_of_lengths(3000, 2);
  BatcherOptions options;
  options.batch_tokens = 200;
  options.prefetch = 0;
  const auto plan = plan_epoch(corpus, options, 3);
  CorpusStream stream({&corpus}, options, 0, {3, 0});
  BatchPosition at;
  for (const auto& batch : plan) EXPECT_EQ(stream.next(at), batch);
  EXPECT_EQ(at, (BatchPosition{3, static_cast<int64_t>(plan.size()) - 1}));
  EXPECT_EQ(stream.position(), (BatchPosition{4, 0}));
}

TEST(Windows, AResumeInALaterWindowGoesOnAsTheUninterruptedStream) {
  const auto corpus = corpus_of_lengths(20000, 3);
  BatcherOptions options;
  options.batch_tokens = 300;
  options.window_pairs = 4096;
  options.prefetch = 0;
  CorpusStream whole({&corpus}, options, 0, {});
  std::vector<std::pair<BatchPosition, std::vector<int64_t>>> served;
  BatchPosition at;
  while (served.size() < 1500) {
    auto pairs = whole.next(at);
    served.emplace_back(at, std::move(pairs));
  }
  for (const size_t from : {size_t{700}, size_t{1200}}) {  // mid-epoch, past the first window; next epoch
    CorpusStream resumed({&corpus}, options, 0, served[from].first);
    for (size_t i = from; i < served.size(); ++i) {
      ASSERT_EQ(resumed.next(at), served[i].second) << from << " " << i;
      ASSERT_EQ(at, served[i].first);
    }
  }
}

// --- several corpora by weight ---

TEST(Corpora, WeightsThreeToOneGiveSharesWithinTwoPercentAndAResumeIsExact) {
  const auto big = corpus_of_lengths(5000, 4), small = corpus_of_lengths(800, 5);
  BatcherOptions options;
  options.batch_tokens = 400;
  options.seed = 9;
  std::vector<Batch> uninterrupted;
  {
    Batcher batcher(std::vector<const Corpus*>{&big, &small}, {3.0, 1.0}, options);
    for (int i = 0; i < 1000; ++i) uninterrupted.push_back(batcher.next());
  }
  int64_t pairs[2] = {0, 0};
  int64_t batches[2] = {0, 0};
  for (const auto& batch : uninterrupted) {
    pairs[batch.corpus] += static_cast<int64_t>(batch.pairs.size());
    ++batches[batch.corpus];
  }
  const double share = static_cast<double>(pairs[0]) / static_cast<double>(pairs[0] + pairs[1]);
  EXPECT_NEAR(share, 0.75, 0.02);
  EXPECT_EQ(uninterrupted.back().next.pairs[0], pairs[0]);
  EXPECT_GT(uninterrupted.back().next.corpora[1].epoch, 1) << "the small corpus goes round several times";
  // The draw is random, not a fixed pattern: another seed gives another sequence of corpora.
  options.seed = 10;
  Batcher other(std::vector<const Corpus*>{&big, &small}, {3.0, 1.0}, options);
  std::string a, b;
  for (int i = 0; i < 100; ++i) {
    a += static_cast<char>('0' + uninterrupted[i].corpus);
    b += static_cast<char>('0' + other.next().corpus);
  }
  EXPECT_NE(a, b);
  options.seed = 9;

  Batcher resumed(std::vector<const Corpus*>{&big, &small}, {3.0, 1.0}, options, uninterrupted[399].next);
  for (size_t i = 400; i < uninterrupted.size(); ++i) {
    const auto batch = resumed.next();
    ASSERT_EQ(batch.corpus, uninterrupted[i].corpus) << i;
    ASSERT_EQ(batch.pairs, uninterrupted[i].pairs) << i;
    ASSERT_TRUE(torch::equal(batch.source, uninterrupted[i].source)) << i;
    ASSERT_TRUE(torch::equal(batch.target_output, uninterrupted[i].target_output)) << i;
  }
}

TEST(Corpora, ChooseCorpusServesOnlyCorporaBehindTheirShare) {
  StreamPosition position;
  position.corpora.resize(2);
  position.pairs = {100, 0};
  for (int64_t batches = 0; batches < 50; ++batches) {
    position.batches = batches;
    EXPECT_EQ(choose_corpus({1.0, 1.0}, position, 1), 1);
  }
  position.pairs = {0, 0};
  std::set<int> chosen;
  for (int64_t batches = 0; batches < 50; ++batches) {
    position.batches = batches;
    chosen.insert(choose_corpus({1.0, 1.0}, position, 1));
  }
  EXPECT_EQ(chosen.size(), 2u);
}

// --- the vocabulary's sample and corpus tags ---

TEST(VocabularySample, DrawsFromEachCorpusInProportionToItsWeight) {
  const auto dir = make_temp_dir("vocab-sample");
  std::string a_src, a_tgt, b_src, b_tgt;
  for (int i = 0; i < 1000; ++i) {
    a_src += "alpha " + std::to_string(i) + "\n";
    a_tgt += "alpha de\n";
  }
  for (int i = 0; i < 200; ++i) {
    b_src += "beta " + std::to_string(i) + "\n";
    b_tgt += "beta de\n";
  }
  write_text(dir / "a.en", a_src);
  write_text(dir / "a.de", a_tgt);
  write_text(dir / "b.en", b_src);
  write_text(dir / "b.de", b_tgt);
  auto count = [](const std::vector<std::string>& lines, const std::string& word) {
    return std::count_if(lines.begin(), lines.end(), [&](const std::string& l) { return l.rfind(word, 0) == 0; });
  };
  // 3:1 with 800 sentences (400 pairs): 300 pairs of a, 100 of b, both sides of each.
  const auto sample = vocabulary_sample({{dir / "a.en", dir / "a.de", 3.0, 1000}, {dir / "b.en", dir / "b.de", 1.0, 200}}, 800);
  EXPECT_EQ(count(sample, "alpha"), 600);
  EXPECT_EQ(count(sample, "beta"), 200);
  // 1:3 of everything (1200 pairs): b's 900 pairs are its 200 lines more than once.
  const auto all = vocabulary_sample({{dir / "a.en", dir / "a.de", 1.0, 1000}, {dir / "b.en", dir / "b.de", 3.0, 200}}, 0);
  EXPECT_EQ(count(all, "alpha"), 600);
  EXPECT_EQ(count(all, "beta"), 1800);
  // One corpus, fewer lines than the sample: every line once, in order.
  const auto one = vocabulary_sample({{dir / "b.en", dir / "b.de", 1.0, 200}}, 2000000);
  ASSERT_EQ(one.size(), 400u);
  EXPECT_EQ(one[0], "beta 0");
  EXPECT_EQ(one[3], "beta de");
}

TEST(Tags, AReservedPieceIsNeverSplitAndAMissingOneIsNoTag) {
  const auto dir = make_temp_dir("tags");
  write_synthetic_corpus(dir, "train", 300, 1);
  TokenizerOptions options;
  options.vocab_size = 300;
  options.reserved = {"<bt>", ">>fr<<"};
  auto sample = vocabulary_sample({{dir / "train.en", dir / "train.de", 1.0, 300}}, 0);
  const auto tokenizer = Tokenizer::train_on_lines(sample, options);
  const int bt = tokenizer.reserved_id("<bt>"), fr = tokenizer.reserved_id(">>fr<<");
  EXPECT_GE(bt, 4);
  EXPECT_GE(fr, 4);
  EXPECT_NE(bt, fr);
  EXPECT_EQ(tokenizer.piece(bt), "<bt>");
  EXPECT_EQ(tokenizer.reserved_id("<nope>"), -1);
  EXPECT_EQ(tokenizer.reserved_id("the"), -1) << "a learned piece is no tag";

  // A tag written in the training text is refused, naming the line.
  write_text(dir / "t.en", "the cat\nthe <bt> dog\n");
  write_text(dir / "t.de", "x\ny\n");
  CorpusOptions corpus_options;
  corpus_options.tag_pieces = {bt, fr};
  try {
    Corpus::load(dir / "t.en", dir / "t.de", tokenizer, corpus_options);
    ADD_FAILURE() << "a tag in the text was taken";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("<bt>"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
  }
}

// --- the leak check ---

TEST(LeakCheck, CountsDevSourcesThatAreTrainingSourcesUpToNormalisation) {
  const auto dir = make_temp_dir("leaks");
  write_synthetic_corpus(dir, "train", 300, 1);
  TokenizerOptions options;
  options.vocab_size = 300;
  const auto tokenizer = Tokenizer::train({dir / "train.en", dir / "train.de"}, options);
  const auto training = Corpus::load(dir / "train.en", dir / "train.de", tokenizer, {});
  std::ifstream in(dir / "train.en");
  std::vector<std::string> train_lines;
  for (std::string line; std::getline(in, line);) train_lines.push_back(line);
  // Lines 2 and 4 are training sources (4 with other spacing); 1 and 3 are not; 5 is empty.
  write_text(dir / "dev.en", "zebra quokka\n" + train_lines[10] + "\nnever seen words\n  " + train_lines[20] + "  \n\n");
  const auto overlap = find_overlap(dir / "dev.en", tokenizer, {&training});
  EXPECT_EQ(overlap.lines, 5);
  EXPECT_EQ(overlap.in_training, (std::vector<int64_t>{2, 4}));
}

// An epoch of several corpora is the first's: batches_per_epoch() counts every corpus's batches served
// while the first goes round once, so that --max-epochs and the progress line's ETA agree.
TEST(Corpora, BatchesPerEpochCountsEveryCorpusWhileTheFirstGoesRoundOnce) {
  const auto big = corpus_of_lengths(3000, 4), small = corpus_of_lengths(800, 9);
  BatcherOptions options;
  options.batch_tokens = 400;
  Batcher batcher(std::vector<const Corpus*>{&big, &small}, {1.0, 2.0}, options);
  int64_t served = 0, first = 0;  // until the first corpus's second epoch begins
  for (Batch batch = batcher.next(); batch.corpus != 0 || batch.position.epoch == 0; batch = batcher.next()) {
    ++served;
    first += batch.corpus == 0 ? 1 : 0;
  }
  EXPECT_EQ(batcher.first_corpus_batches_per_epoch(), first);
  EXPECT_NEAR(static_cast<double>(batcher.batches_per_epoch()), static_cast<double>(served), 0.03 * served);
  EXPECT_GT(batcher.batches_per_epoch(), 2 * first) << "the second corpus serves two pairs for each of the first's";
}

}  // namespace
}  // namespace trafo::data
