// Greedy and beam search: against each other, against exhaustive search on a tiny model,
// with and without the KV cache, alone and inside batches, and within their length limits.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <set>

#include "model_support.h"
#include "trafo/data/tokenizer.h"
#include "trafo/decode/continuous.h"
#include "trafo/decode/search.h"
#include "trafo/decode/translator.h"
#include "trafo/errors.h"

namespace trafo::decode {
namespace {

using data::Tokenizer;

// Untied output projection whose eos bias is raised by `eos_bias`, so that outputs end at
// varied lengths and finished hypotheses compete with open ones (a random model rarely says eos).
model::Transformer tiny_model(uint64_t seed, int64_t vocab = 20, double eos_bias = 2.0) {
  model::ModelConfig c = testing::tiny_model_config(vocab);
  c.tie_embeddings = false;
  torch::manual_seed(seed);
  at::set_num_threads(1);  // tiny matrices: threads only add overhead
  model::Transformer model(c);
  torch::NoGradGuard no_grad;
  model->output_projection->bias[Tokenizer::kEos].add_(eos_bias);
  model->eval();
  return model;
}

// `count` sentences of random ordinary pieces (ids 4..vocab-1), lengths in [low, high].
std::vector<std::vector<int>> random_sources(int count, int low, int high, unsigned seed, int vocab = 20) {
  std::mt19937 rng(seed);
  std::vector<std::vector<int>> sources(count);
  for (auto& source : sources) {
    source.resize(low + rng() % (high - low + 1));
    for (auto& id : source) id = 4 + static_cast<int>(rng() % (vocab - 4));
  }
  return sources;
}

// [B,S]: ids + eos, padded with pad.
torch::Tensor pad_batch(const std::vector<std::vector<int>>& sources) {
  size_t width = 0;
  for (const auto& s : sources) width = std::max(width, s.size() + 1);
  auto batch = torch::zeros({static_cast<int64_t>(sources.size()), static_cast<int64_t>(width)}, torch::kLong);
  for (size_t r = 0; r < sources.size(); ++r) {
    for (size_t t = 0; t < sources[r].size(); ++t) batch[r][t] = sources[r][t];
    batch[r][sources[r].size()] = Tokenizer::kEos;
  }
  return batch;
}

DecodeOptions make_options(int beam, int n_best = 1, double length_penalty = 0.0) {
  DecodeOptions options;
  options.beam = beam;
  options.n_best = n_best;
  options.length_penalty = length_penalty;
  options.max_length_a = 1.0;
  options.max_length_b = 4;
  return options;
}

void expect_same(const std::vector<std::vector<Hypothesis>>& a, const std::vector<std::vector<Hypothesis>>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].size(), b[i].size()) << "sentence " << i;
    for (size_t k = 0; k < a[i].size(); ++k) {
      EXPECT_EQ(a[i][k].tokens, b[i][k].tokens) << "sentence " << i << " hypothesis " << k;
      EXPECT_NEAR(a[i][k].score, b[i][k].score, 1e-4) << "sentence " << i << " hypothesis " << k;
    }
  }
}

TEST(DecodeTest, BeamOfOneEqualsGreedy) {
  auto model = tiny_model(1);
  const auto sources = random_sources(12, 1, 10, 1);
  const auto src = pad_batch(sources);
  std::vector<int64_t> limits;
  for (const auto& s : sources) limits.push_back(static_cast<int64_t>(s.size()) + 4);
  const auto greedy = greedy_search(model, src, limits, make_options(1));
  expect_same(greedy, beam_search(model, src, limits, make_options(1)));
  // With a length penalty the tokens still agree (greedy keeps the raw score).
  const auto penalised = beam_search(model, src, limits, make_options(1, 1, 1.0));
  for (size_t i = 0; i < greedy.size(); ++i) EXPECT_EQ(greedy[i][0].tokens, penalised[i][0].tokens);
  // And the Translator's beam-1 path is greedy search.
  Translator translator(model, make_options(1));
  expect_same(greedy, translator.translate_ids(sources));
}

TEST(DecodeTest, BeamGivesNBestSortedByScore) {
  auto model = tiny_model(2);
  const auto sources = random_sources(8, 2, 9, 2);
  for (const double alpha : {0.0, 1.0}) {
    Translator translator(model, make_options(5, 3, alpha));
    const auto results = translator.translate_ids(sources);
    ASSERT_EQ(results.size(), sources.size());
    for (const auto& hypotheses : results) {
      ASSERT_EQ(hypotheses.size(), 3u);
      for (size_t k = 1; k < hypotheses.size(); ++k) EXPECT_GE(hypotheses[k - 1].score, hypotheses[k].score);
      EXPECT_NE(hypotheses[0].tokens, hypotheses[1].tokens);
    }
  }
}

TEST(DecodeTest, OutputLengthStaysWithinTheLimit) {
  EXPECT_EQ(max_output_length(10, make_options(1), 64), 14);
  DecodeOptions options = make_options(1);
  options.max_length_a = 0.5;
  options.max_length_b = 1;
  EXPECT_EQ(max_output_length(5, options, 64), 3);  // floor(0.5 × 5 + 1)
  EXPECT_EQ(max_output_length(500, options, 64), 63);  // bos + 63 pieces fill the 64 positions
  options.max_length_b = -10;
  EXPECT_EQ(max_output_length(5, options, 64), 0);

  auto model = tiny_model(3, 20, /*eos_bias=*/0.0);  // rarely says eos: runs into the limits
  auto sources = random_sources(10, 1, 12, 3);
  sources.push_back(std::vector<int>(80, 7));  // longer than the model's positions: cut to 63
  for (const int beam : {1, 4}) {
    options = make_options(beam);
    options.max_length_a = 0.5;
    options.max_length_b = 1;
    const auto results = Translator(model, options).translate_ids(sources);
    bool reached = false;
    for (size_t i = 0; i < sources.size(); ++i) {
      const int64_t limit = max_output_length(std::min<int64_t>(sources[i].size(), 63), options, 64);
      for (const auto& hypothesis : results[i]) {
        EXPECT_LE(static_cast<int64_t>(hypothesis.tokens.size()), limit) << "sentence " << i;
        reached = reached || static_cast<int64_t>(hypothesis.tokens.size()) == limit;
      }
    }
    EXPECT_TRUE(reached) << "no hypothesis reached its limit: the test shows nothing";
  }
}

TEST(DecodeTest, CachedAndUncachedDecodingAgree) {
  auto model = tiny_model(4);
  const auto sources = random_sources(9, 1, 11, 4);
  for (const int beam : {1, 4}) {
    auto cached = make_options(beam, beam == 1 ? 1 : 2, 0.6);
    auto uncached = cached;
    uncached.use_cache = false;
    expect_same(Translator(model, cached).translate_ids(sources), Translator(model, uncached).translate_ids(sources));
  }
}

TEST(DecodeTest, SentenceAloneEqualsInsideABatchOfLongerOnes) {
  auto model = tiny_model(5);
  const std::vector<int> short_sentence = {5, 9, 7};
  auto sources = random_sources(6, 10, 16, 5);
  sources.insert(sources.begin() + 3, short_sentence);
  sources.insert(sources.begin() + 1, std::vector<int>{});  // empty: an empty hypothesis
  for (const int beam : {1, 3}) {
    const auto options = make_options(beam);
    const auto alone = Translator(model, options).translate_ids({short_sentence});
    const auto batched = Translator(model, options).translate_ids(sources);
    expect_same(alone, {batched[4]});
    ASSERT_EQ(batched[1].size(), 1u);
    EXPECT_TRUE(batched[1][0].tokens.empty());
    // Small batches (several per call) give the same results, still in input order.
    auto small = options;
    small.batch_tokens = 20;
    expect_same(batched, Translator(model, small).translate_ids(sources));
  }
  // One-piece sentences at beam 3 under a budget of 8: 4 fit by source pieces (4 × 2), 2 by decoder
  // rows (2 × 3): the row bound splits the batch, and changes no result.
  const std::vector<std::vector<int>> words = {{5}, {6}, {7}, {8}, {9}};
  auto options = make_options(3);
  const auto together = Translator(model, options).translate_ids(words);
  options.batch_tokens = 8;
  expect_same(together, Translator(model, options).translate_ids(words));
}

// Greedy search as CUDA runs it (every row kept to the batch's end, the host looking every N steps)
// gives the pieces and scores of greedy search as the CPU runs it (finished rows leave), for one
// model and an ensemble, the best pieces and sampled ones, with and without the cache, and whatever N.
TEST(DecodeTest, GreedyKeepingEveryRowEqualsGreedyDroppingFinishedRows) {
  const std::vector<model::Transformer> one = {tiny_model(11)}, two = {tiny_model(11), tiny_model(12, 20, 1.0)};
  auto sources = random_sources(12, 1, 14, 11);
  sources.push_back({});  // eos alone
  const auto src = pad_batch(sources);
  for (const bool cache : {true, false}) {
    for (const bool sampled : {false, true}) {
      auto options = make_options(1);
      options.use_cache = cache;
      if (sampled) {
        options.sampling_topk = 0;
        options.seed = 7;
      }
      std::vector<int64_t> limits, sentences;
      for (size_t i = 0; i < sources.size(); ++i) {
        limits.push_back(max_output_length(static_cast<int64_t>(sources[i].size()), options, 64));
        sentences.push_back(static_cast<int64_t>(100 + i));  // sampled draws follow the sentence, not the row
      }
      const auto selector = make_selector(options);
      for (const auto* models : {&one, &two}) {
        const auto dropping = GreedySearch(0).search(*models, src, limits, options, *selector, sentences);
        size_t ended_early = 0;
        for (size_t i = 0; i < dropping.size(); ++i) {
          ended_early += static_cast<int64_t>(dropping[i][0].tokens.size()) < limits[i];
        }
        EXPECT_GE(ended_early, 3u) << "rows must end at varied steps for the comparison to mean anything";
        for (const int64_t every : {int64_t{1}, int64_t{3}, GreedySearch::kSyncFreeSteps}) {
          const auto keeping = GreedySearch(every).search(*models, src, limits, options, *selector, sentences);
          ASSERT_EQ(keeping.size(), dropping.size());
          for (size_t i = 0; i < keeping.size(); ++i) {
            EXPECT_EQ(keeping[i][0].tokens, dropping[i][0].tokens) << "sentence " << i << ", every " << every;
            // The tiny model's products go through MKL, whose blocking follows the batch's rows: a
            // piece's fp32 log-probability may move by an ulp when the batch keeps its ended rows.
            EXPECT_NEAR(keeping[i][0].score, dropping[i][0].score, 1e-6 * std::abs(dropping[i][0].score))
                << "sentence " << i << ", every " << every << (cache ? ", cached" : "") << (sampled ? ", sampled" : "")
                << ", " << models->size() << " model(s)";
          }
        }
      }
    }
  }
}

// On CUDA greedy search keeps every row and looks every kSyncFreeSteps steps (kByDevice): the same
// pieces as on the CPU, in fp32. Runs only where a GPU is.
TEST(DecodeTest, CudaGreedyGivesTheCpusPieces) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  auto model = tiny_model(13);
  const auto sources = random_sources(40, 1, 14, 13);
  const auto options = make_options(1);
  const auto on_cpu = Translator(model, options).translate_ids(sources);
  model->to(torch::kCUDA);
  const auto on_cuda = Translator(model, options).translate_ids(sources);
  ASSERT_EQ(on_cuda.size(), on_cpu.size());
  for (size_t i = 0; i < on_cpu.size(); ++i) {
    EXPECT_EQ(on_cuda[i][0].tokens, on_cpu[i][0].tokens) << "sentence " << i;
    EXPECT_NEAR(on_cuda[i][0].score, on_cpu[i][0].score, 1e-3) << "sentence " << i;
  }
}

// A target prefix begins every hypothesis of its sentence, greedy or beam, dropping or keeping ended
// rows; a prefix the model would choose anyway changes nothing; sentences without one are as before;
// a prefix longer than the length limit still comes out whole.
TEST(DecodeTest, TargetPrefixesBeginEveryOutput) {
  auto model = tiny_model(14);
  const auto sources = random_sources(8, 2, 12, 14);
  auto greedy = make_options(1);
  const auto free = Translator(model, greedy).translate_ids(sources);
  std::vector<std::vector<int>> prefixes(sources.size());
  prefixes[0] = std::vector<int>(free[0][0].tokens.begin(), free[0][0].tokens.begin() + std::min<size_t>(2, free[0][0].tokens.size()));
  prefixes[2] = {5, 6, 7};
  prefixes[5] = std::vector<int>(30, 9);  // past the limit of 1 x source + 4
  const auto begins = [&](const Hypothesis& hypothesis, const std::vector<int>& prefix) {
    return hypothesis.tokens.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), hypothesis.tokens.begin());
  };
  const auto forced = Translator(model, greedy).translate_ids(sources, 0, prefixes);
  EXPECT_EQ(forced[0][0].tokens, free[0][0].tokens) << "the model's own first pieces as the prefix";
  for (size_t i = 0; i < sources.size(); ++i) {
    EXPECT_TRUE(begins(forced[i][0], prefixes[i])) << "sentence " << i;
    if (prefixes[i].empty()) {
      EXPECT_EQ(forced[i][0].tokens, free[i][0].tokens) << "sentence " << i;
    }
  }
  EXPECT_GT(forced[2][0].score, -std::numeric_limits<double>::infinity());
  // Greedy as CUDA runs it (rows kept, src on the CPU here) forces the same pieces.
  std::vector<int64_t> limits;
  const auto src = pad_batch(sources);
  for (size_t i = 0; i < sources.size(); ++i) {
    limits.push_back(std::max<int64_t>(max_output_length(static_cast<int64_t>(sources[i].size()), greedy, 64),
                                       static_cast<int64_t>(prefixes[i].size()) + greedy.max_length_b));
  }
  const auto kept = GreedySearch(GreedySearch::kSyncFreeSteps).search({model}, src, limits, greedy, BestTokens(), {}, prefixes);
  for (size_t i = 0; i < sources.size(); ++i) EXPECT_EQ(kept[i][0].tokens, forced[i][0].tokens) << "sentence " << i;
  // Beam search: every hypothesis of a prefixed sentence begins with it.
  const auto beams = Translator(model, make_options(3, 3)).translate_ids(sources, 0, prefixes);
  for (size_t i = 0; i < sources.size(); ++i) {
    ASSERT_FALSE(beams[i].empty());
    for (const auto& hypothesis : beams[i]) {
      EXPECT_TRUE(begins(hypothesis, prefixes[i])) << "sentence " << i;
      EXPECT_TRUE(std::isfinite(hypothesis.score)) << "sentence " << i;
    }
  }
}

// log p(y) of every output up to `max_length` pieces (plus eos), scored by full forward passes.
struct ScoredOutput {
  std::vector<int> tokens;
  double score;
};

std::vector<ScoredOutput> exhaustive_search(model::Transformer& model, const std::vector<int>& source, int64_t max_length,
                                      double alpha) {
  torch::NoGradGuard no_grad;
  const auto src = pad_batch({source});
  const int64_t vocab = model->config().vocab_size;
  std::vector<int> pieces = {Tokenizer::kUnk};  // every id but pad, bos and eos
  for (int id = 4; id < vocab; ++id) pieces.push_back(id);
  std::vector<ScoredOutput> all;
  std::function<void(std::vector<int>&)> visit = [&](std::vector<int>& prefix) {
    std::vector<int64_t> input = {Tokenizer::kBos};
    input.insert(input.end(), prefix.begin(), prefix.end());
    const auto tgt = torch::tensor(input, torch::kLong).unsqueeze(0);           // [1,T]
    const auto log_probs = torch::log_softmax(model(src, tgt)[0], -1);          // [T,V]
    double score = log_probs[static_cast<int64_t>(prefix.size())][Tokenizer::kEos].item<double>();
    for (size_t t = 0; t < prefix.size(); ++t) score += log_probs[t][prefix[t]].item<double>();
    all.push_back({prefix, score / std::pow((5.0 + static_cast<double>(prefix.size()) + 1.0) / 6.0, alpha)});
    if (static_cast<int64_t>(prefix.size()) == max_length) return;
    for (const int id : pieces) {
      prefix.push_back(id);
      visit(prefix);
      prefix.pop_back();
    }
  };
  std::vector<int> prefix;
  visit(prefix);
  std::sort(all.begin(), all.end(), [](const ScoredOutput& a, const ScoredOutput& b) { return a.score > b.score; });
  return all;
}

TEST(DecodeTest, WideBeamEqualsExhaustiveSearch) {
  auto model = tiny_model(6, /*vocab=*/7);
  const std::vector<std::vector<int>> sources = {{4, 5, 6, 5}, {6, 4}, {5}, {6, 6, 5, 4, 4}, {4, 4}, {5, 6}};
  for (const double alpha : {0.0, 1.0, 3.0}) {
    // 4 pieces and 3 steps: 85 outputs, fewer than the beam keeps, so it must find the best 5.
    auto options = make_options(256, 5, alpha);
    options.max_length_a = 0.0;
    options.max_length_b = 3;
    const auto results = Translator(model, options).translate_ids(sources);
    for (size_t i = 0; i < sources.size(); ++i) {
      const auto expected = exhaustive_search(model, sources[i], 3, alpha);
      ASSERT_EQ(expected.size(), 85u);
      ASSERT_EQ(results[i].size(), 5u);
      for (size_t k = 0; k < 5; ++k) {
        EXPECT_EQ(results[i][k].tokens, expected[k].tokens) << "sentence " << i << " rank " << k << " alpha " << alpha;
        EXPECT_NEAR(results[i][k].score, expected[k].score, 1e-4) << "sentence " << i << " rank " << k;
      }
      // A beam as wide as the vocabulary never beats the exhaustive best.
      auto narrow = options;
      narrow.beam = 7;
      narrow.n_best = 1;
      EXPECT_LE(Translator(model, narrow).translate_ids({sources[i]})[0][0].score, expected[0].score + 1e-5);
    }
  }
}

TEST(DecodeTest, TrainingModeIsRestoredAndOptionsAreChecked) {
  auto model = tiny_model(7);
  model->train();
  Translator(model, make_options(2)).translate_ids({{4, 5}});
  EXPECT_TRUE(model->is_training());
  EXPECT_THROW(Translator translator(model, make_options(2, 3)), InputError);  // n-best above the beam
  EXPECT_THROW(Translator translator(model, make_options(0)), InputError);
  EXPECT_THROW(Translator translator(model, make_options(2, 1, -1.0)), InputError);
}

// --- repetition guard ---

// How many times an N-gram of `pieces` repeats one before it.
int repeated_ngrams(const std::vector<int>& pieces, size_t n) {
  std::set<std::vector<int>> seen;
  int repeats = 0;
  for (size_t start = 0; start + n <= pieces.size(); ++start) {
    const std::vector<int> gram(pieces.begin() + static_cast<std::ptrdiff_t>(start),
                                pieces.begin() + static_cast<std::ptrdiff_t>(start + n));
    repeats += seen.insert(gram).second ? 0 : 1;
  }
  return repeats;
}

// A model that rarely says eos loops; with --no-repeat-ngram N no hypothesis, greedy or beam,
// holds an N-gram twice, and a sentence's translation is the same alone and inside a batch.
TEST(RepetitionGuard, NoHypothesisHoldsAnNgramTwice) {
  auto model = tiny_model(11, 20, /*eos_bias=*/-4.0);
  const auto sources = random_sources(10, 6, 14, 11);
  for (const int beam : {1, 3}) {
    auto options = make_options(beam, beam);
    options.max_length_a = 3.0;
    int unguarded = 0;
    for (const auto& hypotheses : Translator(model, options).translate_ids(sources)) {
      for (const auto& hypothesis : hypotheses) unguarded += repeated_ngrams(hypothesis.tokens, 2);
    }
    EXPECT_GT(unguarded, 0) << "beam " << beam << ": the model should loop without the guard";
    options.no_repeat_ngram = 2;
    const auto guarded = Translator(model, options).translate_ids(sources);
    for (size_t i = 0; i < guarded.size(); ++i) {
      for (const auto& hypothesis : guarded[i]) {
        EXPECT_EQ(repeated_ngrams(hypothesis.tokens, 2), 0) << "beam " << beam << " sentence " << i;
      }
      expect_same(Translator(model, options).translate_ids({sources[i]}), {guarded[i]});
    }
  }
}

// --repetition-penalty P: a piece the translation holds has its log p times P. P = 1 changes
// nothing; a large P keeps every piece of a short output distinct (the vocabulary has 16 ordinary
// pieces), and the continuous decoder leaves such options to the Translator.
TEST(RepetitionGuard, APenaltyMakesHeldPiecesLessLikely) {
  auto model = tiny_model(12, 20, /*eos_bias=*/-4.0);
  const auto sources = random_sources(10, 4, 8, 12);
  auto options = make_options(1);
  options.max_length_a = 1.0;
  options.max_length_b = 4;  // at most 12 pieces
  const auto plain = Translator(model, options).translate_ids(sources);
  options.repetition_penalty = 1.0;
  expect_same(plain, Translator(model, options).translate_ids(sources));
  int plain_repeats = 0;
  for (const auto& hypotheses : plain) plain_repeats += repeated_ngrams(hypotheses.front().tokens, 1);
  EXPECT_GT(plain_repeats, 0);
  options.repetition_penalty = 100.0;
  for (const int beam : {1, 2}) {
    options.beam = beam;
    const auto penalised = Translator(model, options).translate_ids(sources);
    for (size_t i = 0; i < penalised.size(); ++i) {
      EXPECT_EQ(repeated_ngrams(penalised[i].front().tokens, 1), 0) << "beam " << beam << " sentence " << i;
    }
  }
  options.beam = 1;
  EXPECT_FALSE(ContinuousDecoder::supports(options));
  options.repetition_penalty = 0.5;
  EXPECT_THROW(Translator translator(model, options), InputError);
  options.repetition_penalty = 1.0;
  options.no_repeat_ngram = 101;
  EXPECT_THROW(Translator translator(model, options), InputError);
}

// --- sampling ---

DecodeOptions sampling_options(int64_t topk, double temperature, uint64_t seed) {
  DecodeOptions options;
  options.sampling_topk = topk;
  options.sampling_temperature = temperature;
  options.seed = seed;
  return options;
}

// The first piece of each translation (eos for an empty one).
std::vector<int> first_pieces(const std::vector<std::vector<Hypothesis>>& results) {
  std::vector<int> pieces;
  for (const auto& result : results) pieces.push_back(result.front().tokens.empty() ? Tokenizer::kEos : result.front().tokens[0]);
  return pieces;
}

TEST(Sampling, FirstPiecesFollowTheModelsSoftmaxAtTheTemperature) {
  auto model = tiny_model(3, 20, 0.0);
  const auto source = random_sources(1, 5, 5, 1)[0];
  const double temperature = 0.7;
  // What the model gives the first step: log p with pad and bos ruled out, then softmax(log p / T).
  torch::Tensor expected;
  {
    torch::NoGradGuard no_grad;
    auto log_probs = torch::log_softmax(model->forward(pad_batch({source}), torch::full({1, 1}, Tokenizer::kBos, torch::kLong))[0][0], -1);
    log_probs[Tokenizer::kPad] = -INFINITY;
    log_probs[Tokenizer::kBos] = -INFINITY;
    expected = torch::softmax(log_probs.to(torch::kDouble) / temperature, -1);
  }
  constexpr int kSamples = 6000;
  auto options = sampling_options(0, temperature, 11);
  options.max_length_a = 0.0;
  options.max_length_b = 1;  // one piece, then eos
  Translator translator(model, options);
  const auto pieces = first_pieces(translator.translate_ids(std::vector<std::vector<int>>(kSamples, source)));
  std::vector<double> seen(20, 0.0);
  for (const int piece : pieces) seen[piece] += 1.0 / kSamples;
  double total_variation = 0.0;
  for (int v = 0; v < 20; ++v) total_variation += 0.5 * std::abs(seen[v] - expected[v].item<double>());
  EXPECT_LT(total_variation, 0.03);  // the expected value for 6000 draws over 18 pieces is about 0.02
  EXPECT_EQ(seen[Tokenizer::kPad] + seen[Tokenizer::kBos], 0.0);

  // Top-k keeps the k most probable alone.
  auto top = options;
  top.sampling_topk = 3;
  const auto best = std::get<1>(expected.topk(3));
  std::set<int> allowed;
  for (int i = 0; i < 3; ++i) allowed.insert(static_cast<int>(best[i].item<int64_t>()));
  std::set<int> drawn;
  for (const int piece : first_pieces(Translator(model, top).translate_ids(std::vector<std::vector<int>>(2000, source)))) {
    drawn.insert(piece);
  }
  EXPECT_EQ(drawn, allowed);
  // A nucleus below the most probable piece's probability keeps that piece alone.
  auto nucleus = options;
  nucleus.sampling_topp = expected.max().item<double>() * 0.5;
  drawn.clear();
  for (const int piece : first_pieces(Translator(model, nucleus).translate_ids(std::vector<std::vector<int>>(500, source)))) {
    drawn.insert(piece);
  }
  EXPECT_EQ(drawn, std::set<int>{static_cast<int>(expected.argmax().item<int64_t>())});
}

TEST(Sampling, ASentencesSampleDependsOnTheSeedAndItsPlaceNotOnTheBatch) {
  const auto model = tiny_model(5);
  const auto sources = random_sources(40, 3, 9, 2);
  auto tokens_of = [&](DecodeOptions options, const std::vector<std::vector<int>>& input, int64_t first = 0) {
    std::vector<std::vector<int>> out;
    for (const auto& result : Translator(model, options).translate_ids(input, first)) out.push_back(result.front().tokens);
    return out;
  };
  auto options = sampling_options(0, 1.0, 3);
  options.batch_tokens = 4096;
  const auto whole = tokens_of(options, sources);
  options.batch_tokens = 12;  // a few sentences a batch
  EXPECT_EQ(tokens_of(options, sources), whole);
  at::set_num_threads(2);
  EXPECT_EQ(tokens_of(options, sources), whole);
  at::set_num_threads(1);
  const std::vector<std::vector<int>> tail(sources.begin() + 25, sources.end());
  EXPECT_EQ(tokens_of(options, tail, 25), std::vector<std::vector<int>>(whole.begin() + 25, whole.end()));
  options.seed = 4;
  EXPECT_NE(tokens_of(options, sources), whole);
  // Greedy search is sampling's limit at a low temperature.
  options.sampling_temperature = 1e-4;
  auto greedy = options;
  greedy.sampling_topk = -1;
  EXPECT_EQ(tokens_of(options, sources), tokens_of(greedy, sources));
}

TEST(Sampling, NeedsGreedySearchAndSaneOptions) {
  auto options = sampling_options(5, 1.0, 1);
  options.beam = 4;
  EXPECT_THROW(validate(options), InputError);
  options.beam = 1;
  EXPECT_NO_THROW(validate(options));
  options.sampling_topp = 0.0;
  EXPECT_THROW(validate(options), InputError);
  options.sampling_topp = 0.9;
  options.sampling_temperature = 0.0;
  EXPECT_THROW(validate(options), InputError);
}

}  // namespace
}  // namespace trafo::decode
