// Continuous batching (decode/continuous.h): sentences that join a running batch at any step get
// what Translator gives them, bit for bit: pieces, score and text.
#include <filesystem>
#include <map>
#include <random>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "toy_model_support.h"
#include "trafo/checkpoint/checkpoint.h"
#include "trafo/decode/continuous.h"
#include "trafo/decode/translator.h"

namespace trafo::decode {
namespace {

using testing::kToyModel;
using testing::toy_sentences;

// Feeds `sentences` to a ContinuousDecoder, 0 to `most` of them before each step (seeded), and
// returns their results in input order; `steps` counts the steps taken. With `tokenizer`, they join
// as `trafo serve` adds them: tokenized once beforehand (source_ids), through add_ids.
std::vector<Hypothesis> decode_continuously(ContinuousDecoder& decoder, const std::vector<std::string>& sentences,
                                            int most, uint32_t seed, int64_t& steps,
                                            const data::Tokenizer* tokenizer = nullptr) {
  std::vector<std::vector<int>> ids;
  if (tokenizer != nullptr) {
    for (const auto& sentence : sentences) ids.push_back(source_ids(*tokenizer, sentence, decoder.options().source_tag));
  }
  std::mt19937 random(seed);
  std::map<int64_t, size_t> sentence_of;  // ticket -> input line
  std::vector<Hypothesis> results(sentences.size());
  size_t next = 0;
  size_t done = 0;
  steps = 0;
  while (done < sentences.size()) {
    const size_t joining = std::min<size_t>(sentences.size() - next, std::uniform_int_distribution<int>(0, most)(random));
    if (joining > 0) {
      const auto first = static_cast<std::ptrdiff_t>(next), end = static_cast<std::ptrdiff_t>(next + joining);
      const auto tickets = tokenizer != nullptr
                               ? decoder.add_ids({ids.begin() + first, ids.begin() + end})
                               : decoder.add({sentences.begin() + first, sentences.begin() + end});
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
void expect_same_as_offline(const std::vector<Hypothesis>& continuous,
                            const std::vector<std::vector<Hypothesis>>& offline,
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
    expect_same_as_offline(continuous, offline, sentences);
    if (most == 1) {
      // At most one sentence joins a step, so each was encoded alone: against Translator on each
      // sentence alone, the decoder's side is the same bits, whatever shared its steps.
      std::vector<std::vector<Hypothesis>> alone;
      for (const auto& sentence : sentences) alone.push_back(Translator(model_, *tokenizer_, options).translate({sentence}).front());
      expect_same_as_offline(continuous, alone, sentences, /*bits=*/true);
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
  expect_same_as_offline(decode_continuously(decoder, sentences, 5, /*seed=*/11, steps), offline, sentences);
  size_t at_limit = 0;
  for (const auto& result : offline) at_limit += result.front().tokens.size() == 4 ? 1 : 0;
  EXPECT_GT(at_limit, sentences.size() / 2);
}

// `trafo serve` tokenizes each sentence once, as it queues it, and hands the decoders its ids. There
// is no seam to count the tokenizer's calls (data::Tokenizer is a concrete class): this checks that
// the ids it hands them (source_ids: the tag in front, an empty line untagged, a long one uncut) are
// the very ones the text paths decode, in both decoders: the same pieces, scores and text, bit for bit.
TEST_F(ContinuousDecoding, SentencesAddedAsIdsGetWhatTheirTextGets) {
  auto sentences = toy_sentences(150);
  std::string very_long;
  for (int i = 0; i < 60; ++i) very_long += sentences[static_cast<size_t>(i)] + " ";
  sentences[3] = very_long;  // cut to the model's positions by the decoders, not before
  sentences[4] = "";
  DecodeOptions options;
  options.source_tag = tokenizer_->vocab_size() - 1;  // a piece before every non-empty source
  const auto as_ids = [&](const std::vector<std::string>& lines) {
    std::vector<std::vector<int>> ids;
    for (const auto& line : lines) ids.push_back(source_ids(*tokenizer_, line, options.source_tag));
    return ids;
  };
  EXPECT_TRUE(as_ids({""}).front().empty());
  EXPECT_EQ(as_ids({sentences[0]}).front().front(), options.source_tag);

  Translator translator(model_, *tokenizer_, options);
  const auto offline = translator.translate(sentences);
  // The same sentences join the same steps, as text and as ids.
  ContinuousDecoder by_text(model_, *tokenizer_, options), by_ids(model_, *tokenizer_, options);
  int64_t steps = 0;
  std::vector<std::vector<Hypothesis>> from_text;
  for (auto& hypothesis : decode_continuously(by_text, sentences, 4, /*seed=*/5, steps)) from_text.push_back({hypothesis});
  const auto from_ids = decode_continuously(by_ids, sentences, 4, /*seed=*/5, steps, tokenizer_.get());
  expect_same_as_offline(from_ids, from_text, sentences, /*bits=*/true);
  expect_same_as_offline(from_ids, offline, sentences);
  const auto offline_ids = translator.translate_ids(as_ids(sentences));
  ASSERT_EQ(offline_ids.size(), offline.size());
  for (size_t i = 0; i < offline.size(); ++i) {
    expect_same_as_offline({offline_ids[i].front()}, {offline[i]}, {sentences[i]}, /*bits=*/true);
  }
  // The tag was read: it changes translations (else the ids could have lost it unseen).
  EXPECT_NE(Translator(model_, *tokenizer_, DecodeOptions{}).translate_best(sentences), translator.translate_best(sentences));
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
