// Tokenizer and corpus reader: round trips, stable ids, and every reader error.
#include <gtest/gtest.h>

#include <functional>
#include <torch/torch.h>

#include "data_support.h"
#include "trafo/data/corpus.h"
#include "trafo/data/tokenizer.h"
#include "trafo/errors.h"
#include "trafo/util/language_tag.h"

namespace trafo::data {
namespace {

using trafo::testing::make_temp_dir;
using trafo::testing::write_text;

class DataTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::filesystem::path(make_temp_dir("data"));
    trafo::testing::write_synthetic_corpus(*dir_, "train", 400);
    TokenizerOptions options;
    options.vocab_size = 320;
    tokenizer_ = new Tokenizer(Tokenizer::train({*dir_ / "train.en", *dir_ / "train.de"}, options));
  }
  static void TearDownTestSuite() {
    delete tokenizer_;
    delete dir_;
  }
  static std::filesystem::path* dir_;
  static Tokenizer* tokenizer_;
};
std::filesystem::path* DataTest::dir_ = nullptr;
Tokenizer* DataTest::tokenizer_ = nullptr;

// The two readers refuse alike a file whose lines end in CR alone (it reads as one line). The fuzzer
// found Corpus::load taking what check_parallel_files refused (fuzz/findings/corpus_reader/crash-cc27...).
TEST_F(DataTest, BothReadersRefuseLinesEndingInCarriageReturnsAlone) {
  const auto dir = make_temp_dir("cr-only");
  write_text(dir / "a.src", std::string("\0\0\0\r(*\0\x01", 8));
  write_text(dir / "a.tgt", "ei\x1b\n");
  for (const auto& read : std::vector<std::function<void()>>{
           [&] { check_parallel_files(dir / "a.src", dir / "a.tgt"); },
           [&] { Corpus::load(dir / "a.src", dir / "a.tgt", *tokenizer_, CorpusOptions{}); }}) {
    try {
      read();
      ADD_FAILURE() << "read";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("carriage return (CR) alone"), std::string::npos) << e.what();
    }
  }
}

// A target-language code is ">>" up to the first "<<", read the same way wherever a line or a
// vocabulary piece may hold one.
TEST(LanguageTag, ReadsCodesAsOpusMtWritesThem) {
  EXPECT_EQ(util::language_tag("fr"), ">>fr<<");
  EXPECT_EQ(util::tag_language(">>pt_BR<<"), "pt_BR");
  for (const char* piece : {">><<", ">>fr", "fr<<", "fr", ""}) EXPECT_EQ(util::tag_language(piece), "") << piece;
  EXPECT_EQ(util::leading_tag(">>fr<< Bonjour"), ">>fr<<");
  EXPECT_EQ(util::leading_tag(">>fr<<Bonjour"), ">>fr<<");
  EXPECT_EQ(util::leading_tag("Bonjour >>fr<<"), "");
  EXPECT_EQ(util::leading_tag(">>fr Bonjour"), "");
  EXPECT_EQ(util::tag_language(util::leading_tag(">>es<< Hola")), "es");
}

TEST_F(DataTest, TokenizerHasFixedSpecialIds) {
  EXPECT_EQ(tokenizer_->vocab_size(), 320);
  EXPECT_EQ(tokenizer_->piece(Tokenizer::kPad), "<pad>");
  EXPECT_EQ(tokenizer_->piece(Tokenizer::kUnk), "<unk>");
  EXPECT_EQ(tokenizer_->piece(Tokenizer::kBos), "<s>");
  EXPECT_EQ(tokenizer_->piece(Tokenizer::kEos), "</s>");
}

TEST_F(DataTest, TokenizerRoundTripsTextIncludingUnseenCharacters) {
  for (const std::string text : {"the cat sees a dog", "dogen catten theen", "Zürich ☃ 東京 — naïve € ß",
                                 "the sky, 42 rivers!"}) {
    const auto ids = tokenizer_->encode(text);
    for (const int id : ids) EXPECT_NE(id, Tokenizer::kUnk) << text;  // byte fallback: nothing unknown
    EXPECT_EQ(tokenizer_->decode(ids), text);
  }
}

TEST_F(DataTest, IdsAreStableAfterSaveAndLoad) {
  const auto path = make_temp_dir("spm") / "vocab.model";
  tokenizer_->save(path);
  const auto loaded = Tokenizer::load(path);
  const auto from_bytes = Tokenizer::from_bytes(tokenizer_->to_bytes());
  for (const std::string text : {"the big red house", "moon over the blue river ☃"}) {
    EXPECT_EQ(loaded.encode(text), tokenizer_->encode(text));
    EXPECT_EQ(from_bytes.encode(text), tokenizer_->encode(text));
  }
}

TEST_F(DataTest, SentencePieceAndLibTorchWorkInOneProcess) {
  const auto ids = tokenizer_->encode("the cat sees a dog");
  auto tensor = torch::tensor(std::vector<int64_t>(ids.begin(), ids.end()));
  auto embedded = torch::nn::Embedding(tokenizer_->vocab_size(), 4)(tensor);
  EXPECT_EQ(embedded.size(0), static_cast<int64_t>(ids.size()));
}

// A user's first run on a small corpus must not fail on the default size: a smaller vocabulary is
// trained (SentencePiece's soft limit) and the trainer takes the size obtained.
TEST_F(DataTest, VocabularyLargerThanTheTextSupportsIsTrainedSmaller) {
  TokenizerOptions options;
  options.vocab_size = 50000;
  const auto tokenizer = Tokenizer::train({*dir_ / "train.en", *dir_ / "train.de"}, options);
  EXPECT_GT(tokenizer.vocab_size(), 260);
  EXPECT_LT(tokenizer.vocab_size(), 50000);
}

// SentencePiece leaves lines over 4,192 bytes out of learning the vocabulary unless told otherwise:
// a character written only in long lines never got a piece of its own (bytes instead).
TEST(Tokenizer, LongLinesAreLearnedFrom) {
  std::vector<std::string> lines;
  for (int i = 0; i < 300; ++i) lines.push_back("the cat sees the dog number " + std::to_string(i));
  std::string long_line;
  for (int i = 0; i < 600; ++i) long_line += "жук ";  // 4,800 bytes
  lines.push_back(long_line);
  TokenizerOptions options;
  options.vocab_size = 320;
  options.character_coverage = 1.0;
  const auto tokenizer = Tokenizer::train_on_lines(lines, options);
  for (const auto& piece : tokenizer.pieces("жук")) {
    EXPECT_EQ(piece.find("<0x"), std::string::npos) << "a byte piece: " << piece;
  }
}

TEST_F(DataTest, CorpusLoadsEveryPair) {
  const auto corpus = Corpus::load(*dir_ / "train.en", *dir_ / "train.de", *tokenizer_, {});
  EXPECT_EQ(corpus.size(), 400);
  EXPECT_EQ(corpus.counts().lines_read, 400);
  std::vector<int> first(corpus.source(0), corpus.source(0) + corpus.source_length(0));
  EXPECT_FALSE(first.empty());
}

TEST_F(DataTest, MissingFileIsAnError) {
  EXPECT_THROW(check_parallel_files(*dir_ / "nope.en", *dir_ / "train.de"), InputError);
  EXPECT_THROW(Corpus::load(*dir_ / "train.en", *dir_ / "nope.de", *tokenizer_, {}), InputError);
}

TEST_F(DataTest, DifferentLineCountsNameBothFilesAndCounts) {
  const auto dir = make_temp_dir("mismatch");
  write_text(dir / "a.en", "one\ntwo\nthree\n");
  write_text(dir / "a.de", "eins\nzwei\n");
  for (int reader = 0; reader < 2; ++reader) {
    try {
      if (reader == 0) check_parallel_files(dir / "a.en", dir / "a.de");
      else Corpus::load(dir / "a.en", dir / "a.de", *tokenizer_, {});
      FAIL() << "expected an error";
    } catch (const InputError& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("a.en has 3 lines"), std::string::npos) << message;
      EXPECT_NE(message.find("a.de has 2"), std::string::npos) << message;
    }
  }
}

TEST_F(DataTest, InvalidUtf8NamesFileAndLine) {
  const auto dir = make_temp_dir("utf8");
  write_text(dir / "b.en", "fine\nalso fine\nbroken \xC3\x28 here\n");
  write_text(dir / "b.de", "gut\nauch gut\nkaputt\n");
  try {
    check_parallel_files(dir / "b.en", dir / "b.de");
    FAIL() << "expected an error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("b.en:3: invalid UTF-8"), std::string::npos) << e.what();
  }
}

TEST_F(DataTest, EmptyAndOverlongPairsAreSkippedAndCounted) {
  const auto dir = make_temp_dir("skip");
  write_text(dir / "c.en", "the cat\n\nthe dog sees the cat and the bird and the tree and the sky\nthe sun\n");
  write_text(dir / "c.de", "catten theen\ndogen\ntheen\ntheen sunen\n");
  CorpusOptions options;
  options.max_length = 8;
  options.max_length_ratio = 0.0;
  const auto corpus = Corpus::load(dir / "c.en", dir / "c.de", *tokenizer_, options);
  EXPECT_EQ(corpus.size(), 2);
  EXPECT_EQ(corpus.counts().skipped_empty, 1);
  EXPECT_EQ(corpus.counts().skipped_too_long, 1);
  EXPECT_EQ(corpus.line_number(1), 4);
  options.max_length = 0;
  options.max_length_ratio = 4.0;  // the long sentence against "theen" is far over it
  const auto filtered = Corpus::load(dir / "c.en", dir / "c.de", *tokenizer_, options);
  EXPECT_EQ(filtered.counts().skipped_ratio, 1);
  EXPECT_EQ(filtered.size(), 2);
}

}  // namespace
}  // namespace trafo::data
