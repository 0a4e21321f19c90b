// BLEU and chrF against sacreBLEU: its published test vectors (test/test_bleu.py,
// test/test_sentence_bleu.py, test/test_chrf.py in github.com/mjpost/sacrebleu), cases worked
// out with sacreBLEU 2.6.0, and a live comparison with the sacreBLEU in the project's .venv.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "test_support.h"
#include "trafo/errors.h"
#include "trafo/metrics/bleu.h"
#include "trafo/metrics/chrf.h"
#include "trafo/metrics/language_id.h"
#include "trafo/metrics/repetition.h"
#include "trafo/util/files.h"

namespace trafo::metrics {
namespace {

using Lines = std::vector<std::string>;
using Streams = std::vector<Lines>;

// The README example of sacreBLEU, used across its tests: three sentences, two references.
const Lines kHyps = {"The dog bit the man.", "It wasn't surprising.",
                     "The man had just bitten him."};
const Streams kRefs = {
    {"The dog bit the man.", "It was not unexpected.", "The man bit him first."},
    {"The dog had bit the man.", "No one was surprised.", "The man had bitten the dog."}};

// sacreBLEU's raw_corpus_bleu: floor smoothing, no tokenization, effective order.
BleuOptions raw_options(std::optional<double> floor_value) {
  BleuOptions options;
  options.smoothing = BleuSmoothing::kFloor;
  options.smooth_value = floor_value;
  options.tokenizer = BleuTokenizer::kNone;
  options.effective_order = true;
  return options;
}

// --- test_bleu.py ---------------------------------------------------------------------------

TEST(Bleu, CorpusVectorsFromSacrebleu) {
  EXPECT_NEAR(corpus_bleu(kHyps, kRefs).score, 48.530827, 1e-6);
  EXPECT_NEAR(corpus_bleu({"", "", ""}, kRefs).score, 0.0, 1e-9);
  BleuOptions none_tok;
  none_tok.tokenizer = BleuTokenizer::kNone;
  EXPECT_NEAR(corpus_bleu(kHyps, kRefs, none_tok).score, 49.1919566, 1e-6);
  BleuOptions no_smoothing;
  no_smoothing.smoothing = BleuSmoothing::kNone;
  EXPECT_NEAR(corpus_bleu(kHyps, kRefs, no_smoothing).score, 48.530827, 1e-6);
}

TEST(Bleu, RawCorpusVectorsFromSacrebleu) {
  const auto raw = [](const Lines& hyps, const Lines& refs) {
    return corpus_bleu(hyps, {refs}, raw_options(0.01)).score / 100;
  };
  EXPECT_NEAR(raw({"this is a test", "another test"}, {"ref1", "ref2"}), 0.0, 1e-8);
  EXPECT_NEAR(raw({"this is a test"}, {"this is a test"}), 1.0, 1e-8);
  EXPECT_NEAR(raw({"this is a fest"}, {"this is a test"}), 0.223606797749979, 1e-8);
  // effective order
  EXPECT_NEAR(raw({"test"}, {"a test"}), 0.3678794411714425, 1e-8);
  EXPECT_NEAR(raw({"a test"}, {"a test"}), 1.0, 1e-8);
  EXPECT_NEAR(raw({"a little test"}, {"a test"}), 0.03218297948685433, 1e-8);
}

TEST(Bleu, StatisticsAndOffsetFromSacrebleu) {
  const Lines hyp = {"am I am a character sequence"};
  const Streams ref = {{"I am a symbol string sequence a a"}};
  const BleuScore score = corpus_bleu(hyp, ref, raw_options(0.01));
  EXPECT_EQ(score.counts, (std::vector<int64_t>{4, 2, 1, 0}));
  EXPECT_EQ(score.totals, (std::vector<int64_t>{6, 5, 4, 3}));
  EXPECT_NEAR(corpus_bleu(hyp, ref, raw_options(0.0)).score / 100, 0.0, 1e-8);
  EXPECT_NEAR(corpus_bleu(hyp, ref, raw_options(std::nullopt)).score / 100, 0.1555722182, 1e-8);
}

TEST(Bleu, ComputeFromStatisticsFromSacrebleu) {
  BleuOptions none;
  none.smoothing = BleuSmoothing::kNone;
  EXPECT_NEAR(compute_bleu({9, 7, 5, 3}, {10, 8, 6, 4}, 11, 11, none).score / 100, 0.8375922397,
              1e-8);
  // Degenerate statistics with floor smoothing all give exactly 0.
  BleuOptions floor;
  floor.smoothing = BleuSmoothing::kFloor;
  struct Case {
    std::vector<int64_t> counts, totals;
    int64_t sys_len, ref_len;
    double floor_value;
  };
  const std::vector<Case> cases = {
      {{0, 0, 0, 0}, {4, 4, 2, 1}, 0, 1, 0.0}, {{0, 0, 0, 0}, {10, 11, 12, 0}, 14, 10, 0.0},
      {{0, 0, 0, 0}, {0, 0, 0, 0}, 0, 0, 0.0}, {{6, 5, 4, 0}, {6, 5, 4, 3}, 6, 6, 0.0},
      {{0, 0, 0, 0}, {0, 0, 0, 0}, 0, 0, 0.1}, {{0, 0, 0, 0}, {0, 0, 0, 0}, 1, 5, 0.01}};
  for (const Case& c : cases) {
    floor.smooth_value = c.floor_value;
    EXPECT_EQ(compute_bleu(c.counts, c.totals, c.sys_len, c.ref_len, floor).score, 0.0);
  }
}

TEST(Bleu, MaxNgramOrderFromSacrebleu) {
  const std::vector<std::string> expected = {"77.65", "60.50", "53.93", "48.53", "46.14", "43.28"};
  for (int order = 1; order <= 6; ++order) {
    BleuOptions options;
    options.max_ngram_order = order;
    char text[32];
    std::snprintf(text, sizeof text, "%.2f", corpus_bleu(kHyps, kRefs, options).score);
    EXPECT_EQ(text, expected[order - 1]) << "order " << order;
  }
}

// --- test_sentence_bleu.py (a sentence is a corpus of one, with effective order) --------------

TEST(Bleu, SentenceSmoothingVectorsFromSacrebleu) {
  const Lines hyp = {"Producția de zahăr primă va fi exprimată în ceea ce privește zahărul alb;"};
  const Streams ref = {{"producţia de zahăr brut se exprimă în zahăr alb;"}};
  struct Case {
    BleuSmoothing smoothing;
    std::optional<double> value;
    BleuTokenizer tokenizer;
    double expected;
  };
  const std::vector<Case> cases = {
      {BleuSmoothing::kExp, std::nullopt, BleuTokenizer::k13a, 8.493},
      {BleuSmoothing::kNone, std::nullopt, BleuTokenizer::k13a, 0.0},
      {BleuSmoothing::kFloor, std::nullopt, BleuTokenizer::k13a, 4.51688},
      {BleuSmoothing::kFloor, 0.1, BleuTokenizer::k13a, 4.51688},
      {BleuSmoothing::kFloor, 0.5, BleuTokenizer::k13a, 10.10},
      {BleuSmoothing::kAddK, std::nullopt, BleuTokenizer::k13a, 14.882},
      {BleuSmoothing::kAddK, 1.0, BleuTokenizer::k13a, 14.882},
      {BleuSmoothing::kAddK, 2.0, BleuTokenizer::k13a, 21.389},
      {BleuSmoothing::kExp, std::nullopt, BleuTokenizer::kNone, 7.347}};
  for (const Case& c : cases) {
    BleuOptions options;
    options.smoothing = c.smoothing;
    options.smooth_value = c.value;
    options.tokenizer = c.tokenizer;
    options.effective_order = true;
    EXPECT_NEAR(corpus_bleu(hyp, ref, options).score, c.expected, 1e-3);
    // #141: no match at all is 0 whatever the smoothing.
    EXPECT_EQ(corpus_bleu({"this is a cat"}, {{"okay thanks"}}, options).score, 0.0);
  }
}

// --- worked out with sacreBLEU 2.6.0 --------------------------------------------------------

TEST(Bleu, Tokenizer13aMatchesSacrebleu) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"Hello, world!", "Hello , world !"},
      {"It costs $1,000.50 - or 3-4 euros.", "It costs $ 1,000.50 - or 3 - 4 euros ."},
      {"&quot;Quoted&quot; &amp; &lt;b&gt;", "\" Quoted \" & < b >"},
      {"&amp;quot;", "& quot ;"},  // entities are replaced one kind after another
      {"a.b,c .5 5. ,x", "a . b , c . 5 5 . , x"},
      {"U.S.A. e.g. end.", "U . S . A . e . g . end ."},
      {"don't stop-it 1990-2000 x-1", "don't stop-it 1990 - 2000 x-1"},
      {"a..b ,,", "a . . b , ,"},
      {"(hi) [x] {y} ~z | @me #1 %2 ^3 *4 +5 =6 <7> ` _",
       "( hi ) [ x ] { y } ~ z | @ me # 1 % 2 ^ 3 * 4 + 5 = 6 < 7 > ` _"},
      {"Ünïcödé — “quotes” «guillemets» 東京.", "Ünïcödé — “quotes” «guillemets» 東京 ."},
      {"tab\there\u00a0nbsp\u3000ideo", "tab here nbsp ideo"},  // Unicode whitespace splits
      {"<skipped>gone", "gone"},
      {"", ""}};
  for (const auto& [line, expected] : cases) EXPECT_EQ(tokenize_13a(line), expected) << line;
}

TEST(Bleu, ReportMatchesSacrebleu) {
  const BleuScore score = corpus_bleu(kHyps, kRefs);
  EXPECT_EQ(score.counts, (std::vector<int64_t>{14, 7, 5, 3}));
  EXPECT_EQ(score.totals, (std::vector<int64_t>{17, 14, 11, 8}));
  EXPECT_EQ(
      format(score),
      "BLEU = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 ratio = 0.944 hyp_len = 17 ref_len = 18)");
  const std::string signature = bleu_signature({}, 2);
  EXPECT_EQ(signature,
            "nrefs:2|case:mixed|eff:no|tok:13a|smooth:exp|version:trafo-2.6.0-compatible");
  EXPECT_EQ(format(score, 1, signature),
            "BLEU|" + signature +
                " = 48.5 82.4/50.0/45.5/37.5 (BP = 0.943 ratio = 0.944 hyp_len = 17 ref_len = 18)");
  BleuOptions floor;
  floor.smoothing = BleuSmoothing::kFloor;
  floor.lowercase = true;
  EXPECT_EQ(bleu_signature(floor, 1),
            "nrefs:1|case:lc|eff:no|tok:13a|smooth:floor[0.10]|version:trafo-2.6.0-compatible");
}

TEST(Bleu, SingleReferenceAndEmptyHypotheses) {
  EXPECT_NEAR(corpus_bleu(kHyps, {kRefs[0]}).score, 45.06750632106114, 1e-9);
  // An empty hypothesis adds nothing but its reference's length.
  const BleuScore one_empty = corpus_bleu({"", "a b c d e"}, {{"x y", "a b c d e"}});
  EXPECT_EQ(
      format(one_empty),
      "BLEU = 67.03 100.0/100.0/100.0/100.0 (BP = 0.670 ratio = 0.714 hyp_len = 5 ref_len = 7)");
  const BleuScore all_empty = corpus_bleu({"", ""}, {{"x y", "a b c d e"}});
  EXPECT_EQ(format(all_empty),
            "BLEU = 0.00 0.0/0.0/0.0/0.0 (BP = 0.000 ratio = 0.000 hyp_len = 0 ref_len = 7)");
  EXPECT_EQ(corpus_bleu({}, {{}}).score, 0.0);
}

const Lines kUnicodeHyps = {"Der Bär läuft über die Straße — schnell!", "東京は日本の首都です。",
                            "Ça coûte 1.000,50 € ; non ?"};
const Lines kUnicodeRefs = {"Der Bär rennt über die Straße, schnell!", "東京は日本の首都である。",
                            "Ça coûte 1.000,50 € ; n’est-ce pas ?"};

TEST(Bleu, UnicodeMatchesSacrebleu) {
  const BleuScore score = corpus_bleu(kUnicodeHyps, {kUnicodeRefs});
  EXPECT_NEAR(score.score, 38.953326096196825, 1e-9);
  EXPECT_EQ(score.sys_len, 17);
  EXPECT_EQ(score.ref_len, 18);
}

TEST(Bleu, LowercaseOption) {
  BleuOptions lower;
  lower.lowercase = true;
  const Lines hyp = {"THE BÄR RAN OVER THE STRASSE"};
  const Streams ref = {{"the bär ran over the strasse"}};
  EXPECT_NEAR(corpus_bleu(hyp, ref, lower).score, 100.0, 1e-9);
  EXPECT_EQ(corpus_bleu(hyp, ref).score, 0.0);
}

TEST(Bleu, RejectsBadInput) {
  EXPECT_THROW(corpus_bleu({"a", "b"}, {{"a"}}), InputError);
  EXPECT_THROW(corpus_bleu({"a"}, {}), InputError);
  try {
    corpus_bleu({"ok", "bad \xff byte"}, {{"a", "b"}});
    FAIL() << "invalid UTF-8 accepted";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("line 2"), std::string::npos) << error.what();
  }
}

// --- test_chrf.py ---------------------------------------------------------------------------

double chrf(const Lines& hyps, const Lines& refs, ChrfOptions options) {
  return corpus_chrf(hyps, {refs}, options).score;
}

TEST(Chrf, EpsilonSmoothingVectorsFromSacrebleu) {
  ChrfOptions options;
  options.beta = 3;
  options.eps_smoothing = true;
  EXPECT_NEAR(chrf({"abcdefg"}, {"hijklmnop"}, options), 0.0, 1e-4);
  EXPECT_NEAR(chrf({"a"}, {"b"}, options), 0.0, 1e-4);
  EXPECT_NEAR(chrf({""}, {"b"}, options), 0.0, 1e-4);
  EXPECT_NEAR(chrf({""}, {"ref"}, options), 0.0, 1e-4);
  EXPECT_NEAR(chrf({""}, {"reference"}, options), 0.0, 1e-4);
  EXPECT_NEAR(chrf({"aa"}, {"ab"}, options), 8.3333, 1e-4);
  EXPECT_NEAR(chrf({"a", "b"}, {"a", "c"}, options), 8.3333, 1e-4);
  EXPECT_NEAR(chrf({"a"}, {"a"}, options), 16.6667, 1e-4);
  EXPECT_NEAR(chrf({"a b c"}, {"a b c"}, options), 50.0, 1e-4);
  EXPECT_NEAR(chrf({"a b c"}, {"abc"}, options), 50.0, 1e-4);
  EXPECT_NEAR(chrf({" risk assessment must be made of those who are qualified and expertise in "
                    "the sector - these are the scientists ."},
                   {"risk assessment has to be undertaken by those who are qualified and expert "
                    "in that area - that is the scientists ."},
                   options),
              63.361730, 1e-4);
  EXPECT_NEAR(
      chrf({" Die    Beziehung zwischen  Obama und Netanjahu ist nicht gerade  freundlich. "},
           {"Das Verhältnis zwischen Obama und Netanyahu ist nicht gerade freundschaftlich."},
           options),
      64.1302698, 1e-4);
  EXPECT_NEAR(chrf({"Niemand hat die Absicht, eine Mauer zu errichten"},
                   {"Niemand hat die Absicht, eine Mauer zu errichten"}, options),
              100.0, 1e-4);
}

TEST(Chrf, EffectiveOrderVectorsFromSacrebleu) {
  ChrfOptions options;
  options.beta = 3;
  EXPECT_NEAR(chrf({"a"}, {"a"}, options), 100.0, 1e-4);
  EXPECT_NEAR(chrf({""}, {"reference"}, options), 0.0, 1e-4);
  EXPECT_NEAR(chrf({"a b c"}, {"a b c"}, options), 100.0, 1e-4);
  EXPECT_NEAR(chrf({"a b c"}, {"abc"}, options), 100.0, 1e-4);
  EXPECT_NEAR(chrf({""}, {"c"}, options), 0.0, 1e-4);
  EXPECT_NEAR(chrf({"a", "b"}, {"a", "c"}, options), 50.0, 1e-4);
  EXPECT_NEAR(chrf({"aa"}, {"ab"}, options), 25.0, 1e-4);
}

TEST(Chrf, KeepWhitespaceVectorsFromSacrebleu) {
  ChrfOptions options;
  options.beta = 3;
  options.whitespace = true;
  EXPECT_NEAR(
      chrf({"Die Beziehung zwischen Obama und Netanjahu ist nicht gerade freundlich."},
           {"Das Verhältnis zwischen Obama und Netanyahu ist nicht gerade freundschaftlich."},
           options),
      67.3481606, 1e-4);
  EXPECT_NEAR(chrf({"risk assessment must be made of those who are qualified and expertise in "
                    "the sector - these are the scientists ."},
                   {"risk assessment has to be undertaken by those who are qualified and expert "
                    "in that area - that is the scientists ."},
                   options),
              65.2414427, 1e-4);
}

TEST(Chrf, SentenceLevelVectorsFromSacrebleu) {
  ChrfOptions options;
  options.eps_smoothing = true;
  EXPECT_NEAR(chrf({"Co nás nejvíc trápí, protože lékaři si vybírají, kdo bude žít a kdo zemře."},
                   {"Nejvíce smutní jsme z toho, že musíme rozhodovat o tom, kdo bude žít a kdo "
                    "zemře."},
                   options),
              39.14078509, 1e-4);
  EXPECT_NEAR(
      chrf({"Nebo prostě nemají vybavení, které by jim pomohlo, uvedli lékaři."},
           {"A někdy nemáme ani potřebný materiál, abychom jim pomohli, popsali lékaři."}, options),
      31.22557079, 1e-4);
  EXPECT_NEAR(chrf({"Lapali po dechu, jejich životy skončily dřív, než skutečně začaly."},
                   {"Lapali po dechu a pak jejich život skončil - dřív, než skutečně mohl začít, "
                    "připomněli."},
                   options),
              57.15704367, 1e-4);
}

// --- chrF worked out with sacreBLEU 2.6.0 ---------------------------------------------------

TEST(Chrf, DefaultsAndChrfPlusPlusMatchSacrebleu) {
  ChrfOptions plus_plus;
  plus_plus.word_order = 2;
  const ChrfScore score = corpus_chrf(kHyps, kRefs);
  EXPECT_NEAR(score.score, 59.72751782684763, 1e-9);
  EXPECT_EQ(format(score), "chrF2 = 59.73");
  EXPECT_EQ(chrf_signature({}, 2),
            "nrefs:2|case:mixed|eff:yes|nc:6|nw:0|space:no|version:trafo-2.6.0-compatible");
  const ChrfScore pp = corpus_chrf(kHyps, kRefs, plus_plus);
  EXPECT_NEAR(pp.score, 59.15310444399262, 1e-9);
  EXPECT_EQ(format(pp, 1, chrf_signature(plus_plus, 2)),
            "chrF2++|nrefs:2|case:mixed|eff:yes|nc:6|nw:2|space:no|"
            "version:trafo-2.6.0-compatible = 59.2");
  // One reference stream at a time.
  EXPECT_NEAR(chrf(kHyps, kRefs[0], {}), 50.043063606582294, 1e-9);
  EXPECT_NEAR(chrf(kHyps, kRefs[1], {}), 51.70106133373036, 1e-9);
  EXPECT_NEAR(chrf(kHyps, kRefs[0], plus_plus), 51.7309698503746, 1e-9);
  EXPECT_NEAR(chrf(kHyps, kRefs[1], plus_plus), 51.66340120735487, 1e-9);
}

TEST(Chrf, UnicodeEmptyAndLowercaseMatchSacrebleu) {
  ChrfOptions plus_plus;
  plus_plus.word_order = 2;
  EXPECT_NEAR(chrf(kUnicodeHyps, kUnicodeRefs, {}), 65.51067904208021, 1e-9);
  EXPECT_NEAR(chrf(kUnicodeHyps, kUnicodeRefs, plus_plus), 65.03120859694647, 1e-9);
  EXPECT_NEAR(chrf({"", "a b c d e"}, {"x y", "a b c d e"}, {}), 92.07459207459206, 1e-9);
  EXPECT_EQ(chrf({"", ""}, {"x y", "a b c d e"}, {}), 0.0);
  ChrfOptions lower;
  lower.lowercase = true;
  EXPECT_NEAR(chrf({"THE BÄR"}, {"the bär"}, lower), 100.0, 1e-9);
  EXPECT_THROW(corpus_chrf({"a"}, {{"a", "b"}}), InputError);
}

// --- live comparison with the sacreBLEU in the project's virtual environment ----------------

#if defined(TRAFO_PYTHON)
const char* const kPython = TRAFO_PYTHON;
#else
const char* const kPython = ".venv/bin/python";  // run from the repository root
#endif

// Prints, one a line: BLEU (2 refs, 1 ref, lowercase, tok none), chrF (2 refs), chrF++ (2 refs),
// chrF lowercase; writes the 13a tokenization of every hypothesis to tok.txt.
const char* const kSacrebleuScript = R"(
import sys
from sacrebleu.metrics import BLEU, CHRF
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a
d = sys.argv[1]
read = lambda name: open(f'{d}/{name}', encoding='utf-8', newline='\n').read().split('\n')[:-1]
hyps, ref1, ref2 = read('hyp.txt'), read('ref1.txt'), read('ref2.txt')
for metric, refs in [(BLEU(), [ref1, ref2]), (BLEU(), [ref1]), (BLEU(lowercase=True), [ref1, ref2]),
                     (BLEU(tokenize='none'), [ref1, ref2]), (CHRF(), [ref1, ref2]),
                     (CHRF(word_order=2), [ref1, ref2]), (CHRF(lowercase=True), [ref1])]:
    print(repr(metric.corpus_score(hyps, refs).score))
tok = Tokenizer13a()
with open(f'{d}/tok.txt', 'w', encoding='utf-8', newline='\n') as out:
    out.writelines(tok(h) + '\n' for h in hyps)
)";

// Words and separators chosen to hit 13a's rules, Unicode whitespace and multi-byte text.
const std::vector<std::string> kWords = {
    "the",       "The",        "cat",       "sat",      "on",       "mat",    "Hello,", "world!",
    "1,000.50",  "3-4",        "1990-2000", "x-1",      "-",        "--",     "&quot;", "&amp;",
    "&lt;b&gt;", "&amp;quot;", "U.S.A.",    "e.g.",     "don't",    "..",     ",",      ".",
    "5.",        ".5",         ",x",        "(hi)",     "[x]",      "$5",     "50%",    "a/b",
    "Bär",       "Straße",     "ÜBER",      "東京",     "日本語。", "—",      "“q”",    "«g»",
    "€",         "؟",          "😀",         "ΑΘΗΝΑ",    "Αθήνα",    "МОСКВА", "Москва", "<skipped>",
    "'",         "naïve",      "Ça",        "İstanbul", "ǅ",        "ß",      "ΟΔΟΣ",   "ΟΔΟΣ.",
    "ΣΟΦΙΑ",     "Σ",          "ΑΣ'Α"};
const std::vector<std::string> kSeparators = {" ",  " ",  " ",      " ",      " ",  "",
                                              "  ", "\t", "\u00a0", "\u3000", "\r", " - "};

struct Corpus {
  Lines hyps, ref1, ref2;
};

Corpus generated_corpus(int sentences) {
  std::mt19937 rng(20240601);
  const auto pick = [&rng](const std::vector<std::string>& from) {
    return from[rng() % from.size()];
  };
  const auto sentence = [&](const std::vector<std::string>& words) {
    std::string line;
    for (std::size_t i = 0; i < words.size(); ++i) line += (i ? pick(kSeparators) : "") + words[i];
    return line;
  };
  const auto mutate = [&](std::vector<std::string> words) {  // drop, replace, swap words
    for (std::size_t i = 0; i < words.size(); ++i) {
      const unsigned roll = rng() % 10;
      if (roll == 0) words[i] = pick(kWords);
      if (roll == 1 && i + 1 < words.size()) std::swap(words[i], words[i + 1]);
      if (roll == 2) words.erase(words.begin() + i);
    }
    return words;
  };
  Corpus corpus;
  for (int s = 0; s < sentences; ++s) {
    std::vector<std::string> words(rng() % 26);
    for (auto& word : words) word = pick(kWords);
    corpus.ref1.push_back(sentence(words));
    corpus.ref2.push_back(sentence(mutate(words)));
    corpus.hyps.push_back(rng() % 15 == 0 ? "" : sentence(mutate(words)));
  }
  return corpus;
}

void write_lines(const std::filesystem::path& path, const Lines& lines) {
  std::ofstream out(path, std::ios::binary);
  for (const auto& line : lines) out << line << '\n';
}

Lines read_lines(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  Lines lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(Sacrebleu, GeneratedCorpusMatchesTheVenvSacrebleu) {
  TRAFO_REQUIRE_PYTHON_MODULE("sacrebleu");
  const auto dir = std::filesystem::temp_directory_path() /
                   ("trafo-metrics-" + std::to_string(std::random_device{}()));
  std::filesystem::create_directories(dir);
  const Corpus corpus = generated_corpus(300);
  write_lines(dir / "hyp.txt", corpus.hyps);
  write_lines(dir / "ref1.txt", corpus.ref1);
  write_lines(dir / "ref2.txt", corpus.ref2);
  std::ofstream(dir / "score.py") << kSacrebleuScript;
  const std::string command = std::string("'") + kPython + "' '" + (dir / "score.py").string() +
                              "' '" + dir.string() + "' > '" + (dir / "scores.txt").string() + "'";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  const Lines expected = read_lines(dir / "scores.txt");
  const Lines expected_tokens = read_lines(dir / "tok.txt");
  trafo::util::remove_tree(dir);  // std::filesystem::remove_all crashes next to libtorch.so

  ASSERT_EQ(expected.size(), 7u);
  ASSERT_EQ(expected_tokens.size(), corpus.hyps.size());
  for (std::size_t i = 0; i < corpus.hyps.size(); ++i) {
    EXPECT_EQ(tokenize_13a(corpus.hyps[i]), expected_tokens[i]) << corpus.hyps[i];
  }
  const Streams both = {corpus.ref1, corpus.ref2};
  BleuOptions lower, no_tok;
  lower.lowercase = true;
  no_tok.tokenizer = BleuTokenizer::kNone;
  ChrfOptions plus_plus, chrf_lower;
  plus_plus.word_order = 2;
  chrf_lower.lowercase = true;
  const std::vector<double> ours = {corpus_bleu(corpus.hyps, both).score,
                                    corpus_bleu(corpus.hyps, {corpus.ref1}).score,
                                    corpus_bleu(corpus.hyps, both, lower).score,
                                    corpus_bleu(corpus.hyps, both, no_tok).score,
                                    corpus_chrf(corpus.hyps, both).score,
                                    corpus_chrf(corpus.hyps, both, plus_plus).score,
                                    corpus_chrf(corpus.hyps, {corpus.ref1}, chrf_lower).score};
  for (std::size_t k = 0; k < ours.size(); ++k) {
    EXPECT_NEAR(ours[k], std::stod(expected[k]), 1e-9) << "score " << k;
  }
}

TEST(RepetitionLoops, AnNGramFourTimesInARowIsALoop) {
  using trafo::metrics::has_repetition_loop;
  EXPECT_TRUE(has_repetition_loop("the the the the"));
  EXPECT_TRUE(has_repetition_loop("Ein Mann sieht den Hund den Hund den Hund den Hund ."));
  EXPECT_TRUE(has_repetition_loop("a b c d e f g h a b c d e f g h a b c d e f g h a b c d e f g h"));
  EXPECT_FALSE(has_repetition_loop("the the the"));
  EXPECT_FALSE(has_repetition_loop("den Hund den Hund den Hund und die Katze"));
  EXPECT_FALSE(has_repetition_loop("a b a c a d a e"));
  EXPECT_FALSE(has_repetition_loop(""));
  EXPECT_FALSE(has_repetition_loop("a b c d e f g h i a b c d e f g h i a b c d e f g h i a b c d e f g h i"))
      << "9-grams are longer than the loops looked for";
  EXPECT_EQ(trafo::metrics::count_repetition_loops({"x x x x", "x y", "y y y y y"}), 2);
}


// The language identifier tells languages apart by their character n-grams, keeps what it learned
// through its JSON, and refuses JSON it did not write.
TEST(LanguageId, TellsLanguagesApartAndRoundTrips) {
  const std::map<std::string, std::vector<std::string>> text = {
      {"en", {"the cat sees the dog", "where is the house of the king", "this is what they wanted",
              "the weather is nice today", "which file do you want to open"}},
      {"de", {"die Katze sieht den Hund", "wo ist das Haus des Königs", "das ist, was sie wollten",
              "das Wetter ist heute schön", "welche Datei möchten Sie öffnen"}},
      {"fr", {"le chat voit le chien", "où est la maison du roi", "c'est ce qu'ils voulaient",
              "il fait beau aujourd'hui", "quel fichier voulez-vous ouvrir"}}};
  const auto id = metrics::LanguageId::learn(text);
  EXPECT_EQ(id.languages(), (std::vector<std::string>{"de", "en", "fr"}));
  EXPECT_EQ(id.identify("the dog sees the cat"), "en");
  EXPECT_EQ(id.identify("der Hund sieht die Katze"), "de");
  EXPECT_EQ(id.identify("le chien voit le chat"), "fr");
  EXPECT_EQ(id.identify("   "), "");
  const auto back = metrics::LanguageId::from_json(id.to_json());
  EXPECT_EQ(back.to_json(), id.to_json());
  EXPECT_EQ(back.identify("où est le chien"), "fr");
  EXPECT_THROW(metrics::LanguageId::from_json("{}"), InputError);
  EXPECT_THROW(metrics::LanguageId::from_json("not json"), InputError);
}

// Whole words count as well as their letters: two languages of the same letters, told apart by
// which words they make of them.
TEST(LanguageId, WordsTellApartWhatLettersDoNot) {
  const std::map<std::string, std::vector<std::string>> text = {
      {"xa", {"ab ba ab ba ab ba", "ab ab ba ba"}}, {"xb", {"aab bba aab bba", "bba aab"}}};
  const auto id = metrics::LanguageId::learn(text);
  EXPECT_EQ(id.identify("ba ab"), "xa");
  EXPECT_EQ(id.identify("bba aab"), "xb");
}

// A line that two languages write alike is left unlabelled, not given to either.
TEST(LanguageId, ALineTwoLanguagesWriteAlikeIsNotLabelled) {
  const auto id = metrics::LanguageId::learn({{"xa", {"sol luz"}}, {"xb", {"sol mar"}}});
  EXPECT_EQ(id.identify("sol"), "");
  EXPECT_EQ(id.identify("luz"), "xa");
  EXPECT_EQ(id.identify("sol mar"), "xb");
}

// The off-target count judges a translation only where the identifier labels its reference as the
// language asked; the counts over every labelled translation and the references' come along.
TEST(LanguageId, OffTargetJudgesLinesWhoseReferenceItKnows) {
  const auto id = metrics::LanguageId::learn({{"xa", {"sol luz"}}, {"xb", {"sol mar"}}});
  const std::vector<std::string> asked = {"xa", "xa", "xa", "xb", "", "xa"};
  const std::vector<std::string> references = {"luz", "luz", "sol", "mar", "mar", "mar"};
  const std::vector<std::string> translations = {"luz", "mar", "mar", "mar", "luz", "luz"};
  const auto counts = metrics::OffTarget::count(id, asked, references, translations);
  // line 0 right, 1 off, 3 right; 2's reference is unlabelled, 5's labelled xb; 4 asks nothing
  EXPECT_EQ(counts.judged, 3);
  EXPECT_EQ(counts.off(), 1);
  EXPECT_EQ(counts.off_lines, (std::vector<int64_t>{1}));
  EXPECT_EQ(counts.labelled, 5);
  EXPECT_EQ(counts.labelled_off, 2);
  EXPECT_EQ(counts.references, 4);
  EXPECT_EQ(counts.references_right, 3);
  EXPECT_DOUBLE_EQ(counts.rate(), 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(counts.labelled_rate(), 0.4);
  EXPECT_DOUBLE_EQ(counts.references_identified(), 0.75);
  const auto none = metrics::OffTarget::count(id, {}, {}, {});
  EXPECT_EQ(none.rate(), 0.0);
  EXPECT_EQ(none.references_identified(), 0.0);
}

// An identifier in the first format trafo wrote (1-3-grams, log-probabilities; checkpoints of
// 2026-11-28) still loads, identifies as it did, and is written back in today's format.
TEST(LanguageId, ReadsTheFirstFormat) {
  const auto log_p = [](double count) { return std::log(count / 20.0); };
  nlohmann::json first = {
      {"kind", "char-ngrams-1-3"},
      {"languages",
       {{"en", {{"unseen", log_p(0.5)}, {"ngrams", {{"t", log_p(4)}, {"h", log_p(4)}, {"th", log_p(3)}, {" th", log_p(3)}}}}},
        {"fr", {{"unseen", log_p(0.5)}, {"ngrams", {{"l", log_p(4)}, {"e", log_p(4)}, {" le", log_p(3)}, {"le ", log_p(3)}}}}}}}};
  const auto id = metrics::LanguageId::from_json(first.dump());
  EXPECT_EQ(id.languages(), (std::vector<std::string>{"en", "fr"}));
  EXPECT_EQ(id.identify("th th"), "en");
  EXPECT_EQ(id.identify("le le"), "fr");
  const auto written = nlohmann::json::parse(id.to_json());
  EXPECT_EQ(written.at("kind"), "char-ngrams");
  EXPECT_EQ(written.at("longest"), 3);
  EXPECT_EQ(written.at("words"), false);
  EXPECT_EQ(written.at("languages").at("en").at("counts").at("th"), 3);
  EXPECT_EQ(written.at("languages").at("en").at("total"), 20);
  EXPECT_EQ(metrics::LanguageId::from_json(id.to_json()).identify("le le"), "fr");
}

}  // namespace
}  // namespace trafo::metrics
