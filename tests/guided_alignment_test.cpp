// Guided alignment (train --guided-alignment): word links read and mapped onto pieces, kept in the
// cache folder, the loss that teaches one cross-attention head the links, a run that resumes exactly,
// `trafo align` reading the guided head, eflomal's links as the input, and bad alignment files refused.
//
// The synthetic corpus (data_support.h) reverses its words: source word i of n is target word n-1-i,
// so its gold links are known.
#include <random>
#include <regex>
#include <set>

#include <gtest/gtest.h>

#include <climits>
#include <torch/torch.h>

#include "data_support.h"
#include "model_support.h"
#include "run_support.h"
#include "weights_support.h"
#include "trafo/checkpoint/checkpoint.h"
#include "trafo/data/batcher.h"
#include "trafo/data/corpus.h"
#include "trafo/data/piece_links.h"
#include "trafo/data/tokenizer.h"
#include "trafo/errors.h"
#include "trafo/model/loss.h"
#include "trafo/run_config/options.h"
#include "trafo/train/optimizer.h"
#include "trafo/train/train_step.h"
#include "trafo/train/trainer.h"

namespace trafo {
namespace {

using testing::make_temp_dir;
using testing::quoted;
using testing::run_trafo;
using testing::write_text;

// The gold links of each line of the synthetic corpus's FILE.en: "0-2 1-1 2-0" for three words.
std::string gold_links(const std::filesystem::path& source) {
  std::string out;
  for (const auto& line : testing::lines_of(testing::read_text(source))) {
    int words = 0;
    for (size_t at = 0; at < line.size(); ++at) words += line[at] != ' ' && (at == 0 || line[at - 1] == ' ');
    for (int i = 0; i < words; ++i) out += (i ? " " : "") + std::to_string(i) + "-" + std::to_string(words - 1 - i);
    out += "\n";
  }
  return out;
}

TEST(PieceLinks, ReadsPharaohLinksAndRefusesAnythingElse) {
  using Pairs = std::vector<std::pair<int, int>>;
  EXPECT_EQ(data::read_word_links("0-0 1-2\t3-1 ", "a.align", 1), (Pairs{{0, 0}, {1, 2}, {3, 1}}));
  EXPECT_EQ(data::read_word_links("", "a.align", 1), Pairs{});
  EXPECT_EQ(data::read_word_links("  \r", "a.align", 1), Pairs{});
  // A well-formed link past any pair's words is a link (its pair loses its links, with a warning).
  EXPECT_EQ(data::read_word_links("65536-0 99999999999999999999-1", "a.align", 1),
            (Pairs{{65536, 0}, {INT_MAX, 1}}));
  for (const std::string bad : {"0-0 x", "1--2", "-1-2", "1-", "3", "0-0,1-1", "1p2", "+1-2"}) {
    try {
      data::read_word_links(bad, "a.align", 7);
      ADD_FAILURE() << bad << " was read";
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("a.align:7: ", 0), 0u) << e.what();
    }
  }
}

class PieceLinksTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::filesystem::path(make_temp_dir("piece-links"));
    testing::write_synthetic_corpus(*dir_, "train", 200);
    data::TokenizerOptions options;
    options.vocab_size = 300;
    tokenizer_ = new data::Tokenizer(data::Tokenizer::train({*dir_ / "train.en", *dir_ / "train.de"}, options));
    write_text(*dir_ / "train.align", gold_links(*dir_ / "train.en"));
  }
  static void TearDownTestSuite() {
    delete tokenizer_;
    delete dir_;
  }
  static std::filesystem::path* dir_;
  static data::Tokenizer* tokenizer_;
};
std::filesystem::path* PieceLinksTest::dir_ = nullptr;
data::Tokenizer* PieceLinksTest::tokenizer_ = nullptr;

// Every link joins a piece of source word i with a piece of target word j for a word link i-j, and
// every such piece pair is there once.
TEST_F(PieceLinksTest, WordLinksReachEveryPieceOfTheirWordsAndOnlyThose) {
  const auto corpus = data::Corpus::load(*dir_ / "train.en", *dir_ / "train.de", *tokenizer_, {});
  ASSERT_EQ(corpus.size(), 200);
  const auto links = data::map_word_links(corpus, *tokenizer_, *dir_ / "train.align", 200, -1);
  ASSERT_EQ(links.size(), 200);
  const auto source_starts = data::word_starts(*tokenizer_, false), target_starts = data::word_starts(*tokenizer_, true);
  int64_t pieces_split = 0;
  for (int64_t pair = 0; pair < corpus.size(); ++pair) {
    const auto source_words = data::piece_words(corpus.source(pair), corpus.source_length(pair), 0, source_starts);
    const auto target_words = data::piece_words(corpus.target(pair), corpus.target_length(pair), 0, target_starts);
    const int words = source_words.back() + 1;
    ASSERT_EQ(target_words.back() + 1, words) << "pair " << pair;
    pieces_split += static_cast<int64_t>(source_words.size()) > words;
    std::set<std::pair<int, int>> expected, found;
    for (size_t p = 0; p < source_words.size(); ++p) {
      for (size_t q = 0; q < target_words.size(); ++q) {
        if (target_words[q] == words - 1 - source_words[p]) expected.emplace(static_cast<int>(p), static_cast<int>(q));
      }
    }
    for (const auto* link = links.begin(pair); link != links.end(pair); ++link) {
      EXPECT_TRUE(found.emplace(link->source, link->target).second) << "a link twice in pair " << pair;
    }
    EXPECT_EQ(found, expected) << "pair " << pair;
  }
  EXPECT_GT(pieces_split, 0) << "some words span several pieces";

  // The batch's matrix: each target row a distribution over the linked source pieces; the eos row
  // (and any row the aligner left unlinked) on the source's eos, the null word.
  std::vector<int64_t> pairs = {0, 1, 2, 3};
  auto owned = data::Corpus::load(*dir_ / "train.en", *dir_ / "train.de", *tokenizer_, {});
  owned.set_links(std::make_shared<const data::PieceLinks>(links));
  const auto batch = data::make_batch(owned, pairs);
  ASSERT_TRUE(batch.alignment.defined());
  EXPECT_EQ(batch.alignment.sizes(), (std::vector<int64_t>{4, batch.target_input.size(1), batch.source.size(1)}));
  const auto row_sums = batch.alignment.sum(-1);
  for (int64_t r = 0; r < 4; ++r) {
    const auto pair = pairs[static_cast<size_t>(r)];
    const auto source_eos = owned.source_length(pair);
    for (int64_t t = 0; t < row_sums.size(1); ++t) {
      const float sum = row_sums[r][t].item<float>();
      if (t < owned.target_length(pair)) {
        EXPECT_NEAR(sum, 1.0f, 1e-5) << "row " << r << " target piece " << t;
        EXPECT_EQ(batch.alignment[r][t][source_eos].item<float>(), 0.0f) << "a linked word is not null";
      } else if (t == owned.target_length(pair)) {
        EXPECT_EQ(batch.alignment[r][t][source_eos].item<float>(), 1.0f) << "the eos row is the null word's";
        EXPECT_EQ(sum, 1.0f);
      } else {
        EXPECT_EQ(sum, 0.0f) << "padding has no links";
      }
    }
  }
}

TEST(PieceLinksMatrix, UnlinkedRowsGoToTheNullWordOfPairsWithLinks) {
  data::PieceLinks links;
  links.add_pair({{1, 0}, {2, 0}, {0, 2}});  // target piece 1 left unlinked by the aligner
  links.add_pair({});                        // a pair without links teaches nothing
  const auto matrix = links.matrix({0, 1}, {{3, 3}, {2, 2}}, 5, 4);  // [2,5,4]
  const auto expected = torch::tensor({0.0f, 0.5f, 0.5f, 0.0f,       // piece 0: two source pieces
                                       0.0f, 0.0f, 0.0f, 1.0f,       // piece 1: the null word (source eos, 3)
                                       1.0f, 0.0f, 0.0f, 0.0f,       // piece 2
                                       0.0f, 0.0f, 0.0f, 1.0f,       // eos
                                       0.0f, 0.0f, 0.0f, 0.0f})      // padding
                            .view({5, 4});
  EXPECT_TRUE(torch::equal(matrix[0], expected)) << matrix[0];
  EXPECT_EQ(matrix[1].abs().sum().item<float>(), 0.0f);
}

TEST_F(PieceLinksTest, TheTableRoundTripsAndACorruptOneIsRefused) {
  const auto corpus = data::Corpus::load(*dir_ / "train.en", *dir_ / "train.de", *tokenizer_, {});
  const auto links = data::map_word_links(corpus, *tokenizer_, *dir_ / "train.align", 200, -1);
  const auto bytes = links.to_bytes();
  const auto back = data::PieceLinks::from_bytes(bytes, 200);
  EXPECT_EQ(back.to_bytes(), bytes);
  EXPECT_THROW(data::PieceLinks::from_bytes(bytes, 199), InputError);
  auto corrupt = bytes;
  corrupt[corrupt.size() - 3] ^= 0x10;
  EXPECT_THROW(data::PieceLinks::from_bytes(corrupt, 200), InputError);
  EXPECT_THROW(data::PieceLinks::from_bytes(bytes.substr(0, bytes.size() - 4), 200), InputError);
}

TEST_F(PieceLinksTest, AFileOfAnotherLengthOrManyLinksPastTheWordsIsAnInputErrorNamingIt) {
  const auto corpus = data::Corpus::load(*dir_ / "train.en", *dir_ / "train.de", *tokenizer_, {});
  const auto dir = make_temp_dir("piece-links-bad");
  auto lines = testing::lines_of(gold_links(*dir_ / "train.en"));
  std::string short_file;
  for (size_t i = 0; i + 1 < lines.size(); ++i) short_file += lines[i] + "\n";
  write_text(dir / "short.align", short_file);
  try {
    data::map_word_links(corpus, *tokenizer_, dir / "short.align", 200, -1);
    ADD_FAILURE() << "a file one line short was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("has 199 lines"), std::string::npos) << e.what();
  }
  // One pair in 200 with a link past its words (a normalisation that counts words otherwise): that
  // pair alone loses its links.
  lines[4] += " 65536-0";
  const auto join = [](const std::vector<std::string>& all) {
    std::string text;
    for (const auto& line : all) text += line + "\n";
    return text;
  };
  write_text(dir / "one-far.align", join(lines));
  const auto kept = data::map_word_links(corpus, *tokenizer_, dir / "one-far.align", 200, -1);
  EXPECT_EQ(kept.begin(4), kept.end(4));
  EXPECT_NE(kept.begin(5), kept.end(5));
  // More than 1% of the pairs so: the wrong file, named with its first such line.
  lines[9] += " 0-40";
  lines[11] += " 40-40";
  write_text(dir / "far.align", join(lines));
  try {
    data::map_word_links(corpus, *tokenizer_, dir / "far.align", 200, -1);
    ADD_FAILURE() << "links past the words in 3 of 200 pairs were read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("far.align:5: link 65536-0"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("3 of 200 pairs"), std::string::npos) << e.what();
  }
}

// The loss teaches the head: a few updates on one batch with the guided-alignment loss alone (no
// translation loss to speak of: weight 10) move the head's attention onto the linked pieces.
TEST_F(PieceLinksTest, TheLossMovesTheGuidedHeadOntoTheLinks) {
  torch::manual_seed(1);
  at::set_num_threads(1);
  auto corpus = data::Corpus::load(*dir_ / "train.en", *dir_ / "train.de", *tokenizer_, {});
  corpus.set_links(std::make_shared<const data::PieceLinks>(
      data::map_word_links(corpus, *tokenizer_, *dir_ / "train.align", 200, -1)));
  std::vector<int64_t> pairs;
  for (int64_t i = 0; i < 16; ++i) pairs.push_back(i);
  const auto batch = data::make_batch(corpus, pairs);
  auto config = testing::tiny_model_config(tokenizer_->vocab_size());
  config.alignment_layer = 1;
  model::Transformer model(config);
  const auto mass_on_links = [&] {
    model->train();
    model->set_guided_layer(1);
    torch::NoGradGuard no_grad;
    model->forward(batch.source, batch.target_input);
    const auto weights = model->take_guided_weights();  // [B,T,S]
    const auto linked = batch.alignment.sum(-1).gt(0);  // target rows with links
    return ((weights * batch.alignment.gt(0)).sum(-1).masked_select(linked)).mean().item<double>();
  };
  const double before = mass_on_links();
  const double lr = 3e-3;
  auto optimizer = train::make_optimizer("adam", model->parameters(), lr, 0.9, 0.98, 1e-9, 0.0);
  train::StepOptions options;
  options.guided_alignment_weight = 10.0;
  train::TrainStep step(model, *optimizer, torch::kCPU, options);
  for (int i = 0; i < 60; ++i) step.run({batch}, lr).loss();
  const double after = mass_on_links();
  EXPECT_LT(before, 0.4) << "an untrained head spreads its attention";
  EXPECT_GT(after, 0.5) << "before " << before;

  // Without the alignment loss the same updates leave the head where translation takes it.
  torch::manual_seed(1);
  model::Transformer plain(config);
  auto plain_optimizer = train::make_optimizer("adam", plain->parameters(), lr, 0.9, 0.98, 1e-9, 0.0);
  train::TrainStep plain_step(plain, *plain_optimizer, torch::kCPU, train::StepOptions{});
  for (int i = 0; i < 60; ++i) plain_step.run({batch}, lr).loss();
  model = plain;
  const double unguided = mass_on_links();
  EXPECT_LT(unguided, after - 0.2) << "guided " << after;
}

run_config::TrainConfig guided_training(const std::filesystem::path& data, const std::filesystem::path& run,
                                        bool guided) {
  run_config::TrainConfig c;
  c.data.data_dir = data.string();
  c.data.cache_dir = (run.parent_path() / "cache").string();
  if (guided) c.data.guided_alignment = (data / "train.align").string();
  c.vocab.vocab_size = 300;
  c.model = testing::tiny_model_config(300);
  c.optim.batch_tokens = 200;
  c.optim.warmup_steps = 4;
  c.optim.guided_alignment_weight = 1.0;
  c.run.valid_every = 5;
  c.run.valid_max_sentences = 5;
  c.run.log_every = 1;
  c.machine.threads = 1;
  c.run.run_dir = run.string();
  return c;
}

// A run with guidance: the links are mapped once and kept, the checkpoint names the guided head, a
// resume reaches the uninterrupted run's weights, guidance changes the weights, and `trafo align`
// reads the guided head.
TEST(GuidedAlignment, ARunResumesExactlyAndAlignReadsItsHead) {
  const auto data = make_temp_dir("guided-data");
  testing::write_synthetic_corpus(data, "train", 40, 1);
  testing::write_synthetic_corpus(data, "dev", 10, 2);
  write_text(data / "train.align", gold_links(data / "train.en"));
  const auto root = make_temp_dir("guided-runs");
  auto whole = guided_training(data, root / "whole", true);
  whole.stop.max_steps = 12;
  EXPECT_GE(train::Trainer(whole).run().step, 12);
  int tables = 0;
  for (const auto& entry : std::filesystem::directory_iterator(root / "cache")) {
    tables += entry.path().filename().string().rfind("links-", 0) == 0;
  }
  EXPECT_EQ(tables, 1);
  const auto saved = checkpoint::load(root / "whole" / "checkpoint-last.pt");
  EXPECT_EQ(saved.model_config.alignment_layer, 1) << "the last of 2 decoder layers";

  auto part = guided_training(data, root / "part", true);
  part.stop.max_steps = 7;
  train::Trainer(part).run();
  part.stop.max_steps = 12;
  train::Trainer(part).run();
  auto plain = guided_training(data, root / "plain", false);
  plain.stop.max_steps = 12;
  train::Trainer(plain).run();
  EXPECT_EQ(checkpoint::load(root / "plain" / "checkpoint-last.pt").model_config.alignment_layer, -1);
  testing::expect_resumed_equals_whole_unlike_plain(root / "whole", root / "part", root / "plain", "guided alignment");
  // The alignment file and the guided layer are the run's: a resume that changes them is refused.
  auto moved = guided_training(data, root / "part", true);
  moved.data.guided_alignment_layer = 1;
  moved.stop.max_steps = 14;
  EXPECT_THROW(train::Trainer(moved).run(), InputError);
  auto dropped = guided_training(data, root / "part", false);
  dropped.stop.max_steps = 14;
  EXPECT_THROW(train::Trainer(dropped).run(), InputError);

  const auto aligned = run_trafo("align -c " + quoted(root / "whole" / "checkpoint-last.pt") + " --threads 1 --src " +
                                 quoted(data / "dev.en") + " --tgt " + quoted(data / "dev.de"));
  ASSERT_EQ(aligned.exit_code, 0) << aligned.errors;
  EXPECT_NE(aligned.errors.find("the guided head (decoder layer 2, head 1)"), std::string::npos) << aligned.errors;
  const auto lines = testing::lines_of(aligned.output);
  ASSERT_EQ(lines.size(), 10u);
  // Pharaoh, or empty where every target word attends to the null word
  for (const auto& line : lines) EXPECT_TRUE(std::regex_match(line, std::regex(R"((\d+-\d+( \d+-\d+)*)?)"))) << line;
  const auto unguided = run_trafo("align -c " + quoted(root / "plain" / "checkpoint-last.pt") + " --threads 1 --src " +
                                  quoted(data / "dev.en") + " --tgt " + quoted(data / "dev.de"));
  ASSERT_EQ(unguided.exit_code, 0) << unguided.errors;
  EXPECT_NE(unguided.errors.find("heads averaged"), std::string::npos) << unguided.errors;
}

TEST(GuidedAlignment, BadAlignmentFilesAndOptionsAreOneLineAndExitTwo) {
  const auto data = make_temp_dir("guided-bad");
  testing::write_synthetic_corpus(data, "train", 20, 1);
  testing::write_synthetic_corpus(data, "dev", 5, 2);
  auto lines = testing::lines_of(gold_links(data / "train.en"));
  std::string short_file, far;
  for (size_t i = 0; i + 1 < lines.size(); ++i) short_file += lines[i] + "\n";
  for (size_t i = 0; i < lines.size(); ++i) far += lines[i] + (i == 2 ? " 0-30" : "") + "\n";
  write_text(data / "short.align", short_file);
  write_text(data / "far.align", far);
  write_text(data / "junk.align", "0-0 zero-one\n");
  const std::string base = "train --data-dir " + quoted(data) + " --src-lang en --tgt-lang de --vocab-size 300 "
                           "--d-model 16 --heads 2 --encoder-layers 1 --decoder-layers 1 --d-ff 32 --max-steps 2 "
                           "--threads 1 --cache-dir " + quoted(data / "cache") + " --no-resume --overwrite --run-dir " +
                           quoted(data / "run");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--guided-alignment " + quoted(data / "missing.align"), "missing.align"},
      {"--guided-alignment " + quoted(data / "short.align"), "has 19 lines, its corpus 20"},
      {"--guided-alignment " + quoted(data / "far.align"), "far.align:3: link 0-30"},
      {"--guided-alignment " + quoted(data / "junk.align"), "junk.align:1: 'zero-one'"},
      {"--guided-alignment " + quoted(data / "far.align") + " --guided-alignment-layer 2", "guided-alignment-layer"},
      {"--guided-alignment " + quoted(data / "far.align") + " --guided-alignment-weight -1", "guided-alignment-weight"},
  };
  for (const auto& [option, expected] : cases) {
    const auto result = run_trafo(base + " " + option);
    EXPECT_EQ(result.exit_code, 2) << option << ": " << result.errors;
    const auto error_lines = testing::lines_of(result.errors);
    ASSERT_FALSE(error_lines.empty()) << option;
    EXPECT_NE(error_lines.back().find(expected), std::string::npos) << option << ": " << result.errors;
    EXPECT_EQ(result.errors.find("terminate"), std::string::npos) << result.errors;
  }
}

// eflomal (PyPI, in .venv) aligns the corpus; its links train a model with guidance: the recipe of
// docs/guide-own-data.md "Guided alignment".
TEST(GuidedAlignment, EflomalLinksTrainAModel) {
  const auto eflomal = std::filesystem::path(TRAFO_PYTHON).parent_path() / "eflomal-align";
  TRAFO_REQUIRE_TOOL(std::filesystem::exists(eflomal), "eflomal-align of " << TRAFO_PYTHON);
  const auto data = make_temp_dir("guided-eflomal");
  testing::write_synthetic_corpus(data, "train", 300, 1);
  testing::write_synthetic_corpus(data, "dev", 5, 2);
  const auto aligned = testing::run_command(quoted(eflomal) + " -s " + quoted(data / "train.en") + " -t " +
                                            quoted(data / "train.de") + " -f " + quoted(data / "train.align") +
                                            " --overwrite");
  ASSERT_EQ(aligned.exit_code, 0) << aligned.errors;
  const auto links = testing::lines_of(testing::read_text(data / "train.align"));
  ASSERT_EQ(links.size(), 300u);
  // eflomal finds the reversal on most lines.
  const auto gold = testing::lines_of(gold_links(data / "train.en"));
  int agree = 0, total = 0;
  for (size_t i = 0; i < links.size(); ++i) {
    const auto found = data::read_word_links(links[i], "eflomal", 1), wanted = data::read_word_links(gold[i], "gold", 1);
    const std::set<std::pair<int, int>> wanted_set(wanted.begin(), wanted.end());
    for (const auto& link : found) agree += wanted_set.count(link);
    total += static_cast<int>(wanted.size());
  }
  EXPECT_GT(agree, total / 2) << agree << " of " << total << " gold links";
  const auto result = run_trafo("train --data-dir " + quoted(data) + " --src-lang en --tgt-lang de --vocab-size 300 "
                                "--d-model 16 --heads 2 --encoder-layers 1 --decoder-layers 1 --d-ff 32 --max-steps 3 "
                                "--threads 1 --cache-dir " + quoted(data / "cache") + " --run-dir " + quoted(data / "run") +
                                " --guided-alignment " + quoted(data / "train.align"));
  ASSERT_EQ(result.exit_code, 0) << result.errors;
  EXPECT_EQ(checkpoint::load(data / "run" / "checkpoint-last.pt").model_config.alignment_layer, 0);
  EXPECT_NE(result.errors.find("word-link lines of"), std::string::npos) << result.errors;
}

}  // namespace
}  // namespace trafo
