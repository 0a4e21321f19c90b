// Case augmentation (--all-caps-every, --title-case-every): which words the variants change, the
// variants a corpus gains beside their pairs, and the word links they share with them.
#include "trafo/data/case_variants.h"

#include <gtest/gtest.h>

#include "data_support.h"
#include "run_support.h"
#include "trafo/data/corpus.h"
#include "trafo/data/piece_links.h"
#include "trafo/data/tokenizer.h"

namespace trafo::data {
namespace {

using trafo::testing::make_temp_dir;
using trafo::testing::write_text;

TEST(CaseVariants, CapitalisePlainWordsAndLeaveWhatATranslationCopies) {
  EXPECT_EQ(all_caps("Choose an entry: %s"), "CHOOSE AN ENTRY: %s");
  EXPECT_EQ(all_caps("Propriétaire du fichier « %s »"), "PROPRIÉTAIRE DU FICHIER « %s »");
  EXPECT_EQ(all_caps("ошибка: σφάλμα"), "ОШИБКА: ΣΦΆΛΜΑ");
  // options, placeholders, identifiers with digits or underscores, paths and markup stay
  EXPECT_EQ(all_caps("--quiet, -q work {name} KP_Left _First x86 /usr/bin <b>bold</b> e.g."),
            "--quiet, -q WORK {name} KP_Left _First x86 /usr/bin <b>bold</b> e.g.");
  EXPECT_EQ(all_caps("don't re-read (the file)."), "DON'T RE-READ (THE FILE).");
  EXPECT_EQ(all_caps("  two\tspaces  "), "  TWO\tSPACES  ");

  EXPECT_EQ(english_title_case("owner of the file"), "Owner of the File");
  EXPECT_EQ(english_title_case("the range and its owner"), "The Range and Its Owner");
  EXPECT_EQ(english_title_case("open iPhone backup %s with gVim"), "Open iPhone Backup %s with gVim");
  EXPECT_EQ(english_title_case("--dry-run: show what would change"), "--dry-run: Show What Would Change");

  EXPECT_EQ(sentence_case("propriétaire du fichier"), "Propriétaire du fichier");
  EXPECT_EQ(sentence_case("écrire le fichier"), "Écrire le fichier");
  EXPECT_EQ(sentence_case("%s : propriétaire"), "%s : propriétaire");
  EXPECT_EQ(sentence_case("iPhone"), "iPhone");

  const std::string invalid = "caf\xC3";  // a line the reader refuses anyway is left as it is
  EXPECT_EQ(all_caps(invalid), invalid);
  EXPECT_EQ(all_caps(""), "");
}

class CaseVariantsCorpus : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::filesystem::path(make_temp_dir("case-variants"));
    trafo::testing::write_synthetic_corpus(*dir_, "train", 60);
    // the tokenizer knows capitals, so that a variant's words are pieces, not unknowns
    for (const char* side : {"en", "de"}) {
      std::string capitals;
      for (const auto& line :
           trafo::testing::lines_of(trafo::testing::read_text(*dir_ / ("train." + std::string(side))))) {
        capitals += all_caps(line) + "\n" + english_title_case(line) + "\n";
      }
      write_text(*dir_ / ("caps." + std::string(side)), capitals);
    }
    TokenizerOptions options;
    options.vocab_size = 400;
    tokenizer_ = new Tokenizer(
        Tokenizer::train({*dir_ / "train.en", *dir_ / "train.de", *dir_ / "caps.en", *dir_ / "caps.de"}, options));
  }
  static void TearDownTestSuite() {
    delete tokenizer_;
    delete dir_;
  }
  static std::vector<int> pieces(const int32_t* ids, int64_t length) { return {ids, ids + length}; }
  static std::filesystem::path* dir_;
  static Tokenizer* tokenizer_;
};
std::filesystem::path* CaseVariantsCorpus::dir_ = nullptr;
Tokenizer* CaseVariantsCorpus::tokenizer_ = nullptr;

// Each pair is followed by the variants its line number asks for, with that line number; a variant
// that reads as its pair does is left out, and nothing counts as skipped.
TEST_F(CaseVariantsCorpus, EveryNthPairIsFollowedByItsVariants) {
  const auto dir = make_temp_dir("case-variants-lines");
  write_text(dir / "c.en", "the cat\nsees a dog\n%s\nthe red house\nrun\nbig\n");
  write_text(dir / "c.de", "caten theen\ndogen aen seesen\n%s\nhouseen reden theen\nrunen\nbigen\n");
  CorpusOptions options;
  options.all_caps_every = 2;
  options.title_case_every = 3;
  const auto corpus = Corpus::load(dir / "c.en", dir / "c.de", *tokenizer_, options);
  // line 2: caps; line 3 ("%s"): neither variant differs; line 4: caps; line 6: caps and title
  const std::vector<int64_t> lines = {1, 2, 2, 3, 4, 4, 5, 6, 6, 6};
  ASSERT_EQ(corpus.size(), static_cast<int64_t>(lines.size()));
  for (int64_t i = 0; i < corpus.size(); ++i) EXPECT_EQ(corpus.line_number(i), lines[i]) << i;
  EXPECT_EQ(corpus.counts().kept(), 6);
  EXPECT_EQ(corpus.counts().lines_read, 6);

  auto expect_pair = [&](int64_t i, const std::string& source, const std::string& target) {
    EXPECT_EQ(pieces(corpus.source(i), corpus.source_length(i)), tokenizer_->encode(source)) << i;
    EXPECT_EQ(pieces(corpus.target(i), corpus.target_length(i)), tokenizer_->encode_target(target)) << i;
  };
  expect_pair(1, "sees a dog", "dogen aen seesen");
  expect_pair(2, "SEES A DOG", "DOGEN AEN SEESEN");
  expect_pair(5, "THE RED HOUSE", "HOUSEEN REDEN THEEN");
  expect_pair(8, "BIG", "BIGEN");
  expect_pair(9, "Big", "Bigen");
  EXPECT_NE(corpus.record(2).source_hash, corpus.record(1).source_hash);
}

// A variant keeps its pair's words, so it takes its pair's word links (guided alignment).
TEST_F(CaseVariantsCorpus, VariantsTakeTheWordLinksOfTheirLine) {
  const auto dir = make_temp_dir("case-variants-links");
  write_text(dir / "c.en", "the cat\nsees a dog\nthe red house\n");
  write_text(dir / "c.de", "caten theen\ndogen aen seesen\nhouseen reden theen\n");
  write_text(dir / "c.align", "0-1 1-0\n0-2 1-1 2-0\n0-2 1-1 2-0\n");
  CorpusOptions options;
  options.all_caps_every = 1;
  const auto corpus = Corpus::load(dir / "c.en", dir / "c.de", *tokenizer_, options);
  ASSERT_EQ(corpus.size(), 6);
  const auto links = map_word_links(corpus, *tokenizer_, dir / "c.align", 3, -1);
  ASSERT_EQ(links.size(), 6);
  const auto source_starts = word_starts(*tokenizer_, false), target_starts = word_starts(*tokenizer_, true);
  for (int64_t pair = 0; pair < corpus.size(); ++pair) {
    const auto source_words = piece_words(corpus.source(pair), corpus.source_length(pair), 0, source_starts);
    const auto target_words = piece_words(corpus.target(pair), corpus.target_length(pair), 0, target_starts);
    const int words = source_words.back() + 1;
    EXPECT_LT(links.begin(pair), links.end(pair)) << pair;
    for (const auto* link = links.begin(pair); link != links.end(pair); ++link) {  // every line's words reversed
      EXPECT_EQ(target_words[link->target], words - 1 - source_words[link->source]) << pair;
    }
  }
}

}  // namespace
}  // namespace trafo::data
