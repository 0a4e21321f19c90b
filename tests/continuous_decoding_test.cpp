// Continuous batching (decode/continuous.h): sentences that join a running batch at any step get
// what Translator gives them, bit for bit: pieces, score and text.
#include <filesystem>
#include <map>
#include <random>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "trafo/checkpoint/checkpoint.h"
#include "trafo/decode/continuous.h"
#include "trafo/decode/translator.h"
#include "trafo/toy/toy_corpus.h"

namespace trafo::decode {
namespace {

const std::filesystem::path kToyModel =
    std::filesystem::path(TRAFO_SOURCE_DIR) / "tests" / "fixtures" / "checkpoints" / "toy-format2.pt";

std::vector<std::string> toy_sentences(int64_t count) {
  data::ToyCorpusOptions toy;
  toy.train = 0;
  toy.dev = 0;
  toy.test = count;
  std::vector<std::string> sentences;
  for (const auto& pair : data::generate_toy_corpus(toy).test) sentences.push_back(pair.source);
  return sentences;
}

// Feeds `sentences` to a ContinuousDecoder, 0 to `most` of them before each step (seeded), and
// returns their results in input order; `steps` counts the steps taken.
std::vector<Hypothesis> decode_continuously(ContinuousDecoder& decoder, const std::vector<std::string>& sentences,
                                            int most, uint32_t seed, int64_t& steps) {
  std::mt19937 random(seed);
  std::map<int64_t, size_t> sentence_of;  // ticket -> input line
  std::vector<Hypothesis> results(sentences.size());
  size_t next = 0;
  size_t done = 0;
  steps = 0;
  while (done < sentences.size()) {
    const size_t joining = std::min<size_t>(sentences.size() - next, std::uniform_int_distribution<int>(0, most)(random));
    if (joining > 0) {
      const std::vector<std::string> batch(sentences.begin() + static_cast<std::ptrdiff_t>(next),
                                           sentences.begin() + static_cast<std::ptrdiff_t>(next + joining));
      const auto tickets = decoder.add(batch);
      for (size_t i = 0; i < tickets.size(); ++i) sentence_of[tickets[i]] = next + i;
      next += joining;
    }
    for (auto& finished : decoder.step()) {
      results.at(sentence_of.at(finished.ticket)) = std::move(finished.hypothesis);
      ++done;
    }
    ++steps;
    EXPECT_LT(steps, 100000) << "the decoder does not finish";
    if (steps >= 100000) break;
  }
  EXPECT_EQ(decoder.sentences(), 0);
  EXPECT_EQ(decoder.source_pieces(), 0);
  return results;
}

// The same pieces and text; the score to float rounding, or (bits) the same bits. The encoder is
// why they may differ: it pads a batch to its longest sentence, and its attention's sums then run
// in another order.
void expect_same(const std::vector<Hypothesis>& continuous, const std::vector<std::vector<Hypothesis>>& offline,
                 const std::vector<std::string>& sentences, bool bits = false) {
  ASSERT_EQ(continuous.size(), offline.size());
  for (size_t i = 0; i < offline.size(); ++i) {
    ASSERT_EQ(offline[i].size(), 1u);
    EXPECT_EQ(continuous[i].tokens, offline[i].front().tokens) << "line " << i << ": " << sentences[i];
    if (bits) {
      EXPECT_EQ(continuous[i].score, offline[i].front().score) << "line " << i;
    } else {
      EXPECT_NEAR(continuous[i].score, offline[i].front().score, 1e-4) << "line " << i;
    }
    EXPECT_EQ(continuous[i].text, offline[i].front().text) << "line " << i;
  }
}

class ContinuousDecoding : public ::testing::Test {
 protected:
  void SetUp() override {
    at::set_num_threads(2);
    saved_ = checkpoint::load(kToyModel, /*with_training_state=*/false);
    model_ = checkpoint::make_model(saved_, torch::kCPU);
    model_->eval();
    tokenizer_ = std::make_unique<data::Tokenizer>(data::Tokenizer::from_bytes(saved_.tokenizer));
  }
  checkpoint::Checkpoint saved_;
  model::Transformer model_{nullptr};
  std::unique_ptr<data::Tokenizer> tokenizer_;
};

TEST_F(ContinuousDecoding, SentencesJoiningARunningBatchGetTheTranslatorsResultsBitForBit) {
  auto sentences = toy_sentences(600);
  sentences[7] = "";                                            // finished when added
  sentences[8] = sentences[9] + " " + sentences[10] + " " + sentences[11];  // a long one
  const DecodeOptions options;
  const auto offline = Translator(model_, *tokenizer_, options).translate(sentences);
  for (const int most : {1, 3, 40}) {
    ContinuousDecoder decoder(model_, *tokenizer_, options);
    int64_t steps = 0;
    const auto continuous = decode_continuously(decoder, sentences, most, /*seed=*/static_cast<uint32_t>(most), steps);
    expect_same(continuous, offline, sentences);
    if (most == 1) {
      // At most one sentence joins a step, so each was encoded alone: against Translator on each
      // sentence alone, the decoder's side is the same bits, whatever shared its steps.
      std::vector<std::vector<Hypothesis>> alone;
      for (const auto& sentence : sentences) alone.push_back(Translator(model_, *tokenizer_, options).translate({sentence}).front());
      expect_same(continuous, alone, sentences, /*bits=*/true);
      // The batch ran for longer than the model's positions: finished rows were reused and dropped,
      // and the positions no row reads were forgotten, on the way.
      EXPECT_GT(steps, saved_.model_config.max_positions);
    }
  }
}

TEST_F(ContinuousDecoding, LengthLimitsAndCutSourcesAreTranslatorsToo) {
  auto sentences = toy_sentences(120);
  std::string very_long;
  for (int i = 0; i < 60; ++i) very_long += sentences[static_cast<size_t>(i)] + " ";
  sentences[3] = very_long;  // cut to the model's positions, with a warning
  DecodeOptions options;
  options.max_length_a = 0.0;
  options.max_length_b = 4;  // most sentences end at their limit
  const auto offline = Translator(model_, *tokenizer_, options).translate(sentences);
  ContinuousDecoder decoder(model_, *tokenizer_, options);
  int64_t steps = 0;
  expect_same(decode_continuously(decoder, sentences, 5, /*seed=*/11, steps), offline, sentences);
  size_t at_limit = 0;
  for (const auto& result : offline) at_limit += result.front().tokens.size() == 4 ? 1 : 0;
  EXPECT_GT(at_limit, sentences.size() / 2);
}

TEST_F(ContinuousDecoding, TakesGreedySearchOfTheBestPiecesOnly) {
  DecodeOptions options;
  EXPECT_TRUE(ContinuousDecoder::supports(options));
  options.beam = 4;
  EXPECT_FALSE(ContinuousDecoder::supports(options));
  options = DecodeOptions{};
  options.sampling_topk = 10;
  EXPECT_FALSE(ContinuousDecoder::supports(options));
  options = DecodeOptions{};
  options.use_cache = false;
  EXPECT_FALSE(ContinuousDecoder::supports(options));
}

}  // namespace
}  // namespace trafo::decode
