// Training pieces: schedule, loss, exact resume, atomic checkpoints.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstring>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "data_support.h"
#include "model_support.h"
#include "weights_support.h"
#include "trafo/checkpoint/checkpoint.h"
#include "trafo/errors.h"
#include "trafo/model/loss.h"
#include "trafo/train/schedule.h"
#include "trafo/train/train_step.h"
#include "trafo/train/trainer.h"

namespace trafo::train {
using run_config::CorpusSpec;
using run_config::parse_duration;
using run_config::TrainConfig;
namespace {

using trafo::testing::make_temp_dir;

TEST(Schedule, WarmsUpLinearlyThenDecaysWithInverseSquareRoot) {
  EXPECT_DOUBLE_EQ(inverse_sqrt_lr(1, 1e-3, 100), 1e-5);
  EXPECT_DOUBLE_EQ(inverse_sqrt_lr(50, 1e-3, 100), 5e-4);
  EXPECT_DOUBLE_EQ(inverse_sqrt_lr(100, 1e-3, 100), 1e-3);
  EXPECT_DOUBLE_EQ(inverse_sqrt_lr(400, 1e-3, 100), 5e-4);  // sqrt(100/400) = 1/2
  EXPECT_DOUBLE_EQ(inverse_sqrt_lr(10000, 1e-3, 100), 1e-4);
  EXPECT_DOUBLE_EQ(inverse_sqrt_lr(4, 1.0, 0), 0.5);        // no warmup: peak / sqrt(step)
}

TEST(Loss, LabelSmoothingMatchesHandComputation) {
  // One real token with p = (0.5, 0.25, 0.25) and gold class 1; one padding position.
  auto probs = torch::tensor({{{0.5f, 0.25f, 0.25f}, {0.2f, 0.3f, 0.5f}}});
  auto target = torch::tensor({{1, 0}}, torch::kLong);
  const double eps = 0.1;
  const auto sums = model::label_smoothed_loss(torch::log(probs), target, eps, /*pad_id=*/0);
  const double nll = -std::log(0.25);
  const double uniform = -(std::log(0.5) + 2 * std::log(0.25)) / 3.0;
  EXPECT_NEAR(sums.smoothed.item<double>(), (1 - eps) * nll + eps * uniform, 1e-6);
  EXPECT_NEAR(sums.nll.item<double>(), nll, 1e-6);
  EXPECT_EQ(sums.tokens.item<int64_t>(), 1);
  // Without smoothing it is the plain NLL.
  EXPECT_NEAR(model::label_smoothed_loss(torch::log(probs), target, 0.0, 0).smoothed.item<double>(), nll, 1e-6);
}

// d smoothed / d each input, by autograd through label_smoothed_loss or through projected_loss.
std::vector<torch::Tensor> loss_gradients(const torch::Tensor& smoothed, const std::vector<torch::Tensor>& inputs) {
  return torch::autograd::grad({smoothed}, inputs);
}

TEST(Loss, ProjectedLossEqualsLogitsThenLabelSmoothing) {
  torch::manual_seed(3);
  const int64_t pad = 0;
  // 11 rows (two of them padding) in chunks of 3, so the last chunk is ragged; vocabulary 13.
  auto target = torch::tensor({5, 0, 7, 12, 1, 3, 0, 9, 4, 11, 2}, torch::kLong);
  for (const bool with_bias : {false, true}) {
    auto hidden = torch::randn({11, 6}, torch::requires_grad());
    auto weight = torch::randn({13, 6}, torch::requires_grad());
    auto bias = with_bias ? torch::randn({13}, torch::requires_grad()) : torch::Tensor();
    std::vector<torch::Tensor> inputs = {hidden, weight};
    if (with_bias) inputs.push_back(bias);
    auto logits = torch::mm(hidden, weight.t());
    if (with_bias) logits = logits + bias;
    const auto expected = model::label_smoothed_loss(logits.unsqueeze(0), target.unsqueeze(0), 0.1, pad);
    const auto fused = model::projected_loss(hidden, weight, bias, target, 0.1, pad, /*chunk_rows=*/3);
    EXPECT_NEAR(fused.smoothed.item<double>(), expected.smoothed.item<double>(), 1e-4);
    EXPECT_NEAR(fused.nll.item<double>(), expected.nll.item<double>(), 1e-4);
    EXPECT_EQ(fused.tokens.item<int64_t>(), 9);
    // The upstream gradient (here 1/9, as training divides by the tokens) scales every gradient.
    const auto want = loss_gradients(expected.smoothed / 9.0, inputs);
    const auto got = loss_gradients(fused.smoothed / 9.0, inputs);
    for (size_t i = 0; i < inputs.size(); ++i) {
      EXPECT_TRUE(torch::allclose(got[i], want[i], 1e-5, 1e-6)) << "input " << i << " with bias " << with_bias;
    }
    EXPECT_EQ(got[0][1].abs().sum().item<double>(), 0.0);  // a padding row gets no gradient
    // Without a gradient wanted, the same sums.
    torch::NoGradGuard no_grad;
    EXPECT_NEAR(model::projected_loss(hidden, weight, bias, target, 0.1, pad).smoothed.item<double>(),
                expected.smoothed.item<double>(), 1e-4);
  }
}

TEST(Loss, BatchLossEqualsTheModelsLogitsThenLabelSmoothing) {
  // With dropout too: both paths draw the same masks in the same order from the same seed.
  for (const auto& [tie, dropout] : {std::pair{true, 0.0}, std::pair{false, 0.0}, std::pair{true, 0.3}}) {
    torch::manual_seed(4);
    auto config = testing::tiny_model_config(20);
    config.tie_embeddings = tie;
    config.dropout = dropout;
    model::Transformer model(config);
    const auto src = torch::tensor({{4, 5, 6, 7, 3}, {8, 9, 3, 0, 0}}, torch::kLong);
    const auto tgt_in = torch::tensor({{2, 8, 9, 10}, {2, 11, 0, 0}}, torch::kLong);
    const auto tgt_out = torch::tensor({{8, 9, 10, 3}, {11, 3, 0, 0}}, torch::kLong);
    const auto parameters = model->parameters();
    torch::manual_seed(5);
    const auto expected = model::label_smoothed_loss(model(src, tgt_in), tgt_out, 0.1, 0);
    const auto want = loss_gradients(expected.smoothed, parameters);
    torch::manual_seed(5);
    const auto fused = model::batch_loss(model, src, tgt_in, tgt_out, 0.1);
    const auto got = loss_gradients(fused.smoothed, parameters);
    EXPECT_NEAR(fused.smoothed.item<double>(), expected.smoothed.item<double>(), 1e-4);
    EXPECT_EQ(fused.tokens.item<int64_t>(), 6);
    for (size_t i = 0; i < parameters.size(); ++i) {
      EXPECT_TRUE(torch::allclose(got[i], want[i], 1e-4, 1e-6)) << "parameter " << i << ", tied " << tie
                                                                 << ", dropout " << dropout;
    }
  }
}

TEST(Options, DurationsParse) {
  EXPECT_DOUBLE_EQ(parse_duration("90s"), 90);
  EXPECT_DOUBLE_EQ(parse_duration("20m"), 1200);
  EXPECT_DOUBLE_EQ(parse_duration("1h30m"), 5400);
  EXPECT_DOUBLE_EQ(parse_duration(""), 0);
  EXPECT_THROW(parse_duration("soon"), InputError);
  EXPECT_THROW(parse_duration("5x"), InputError);
}

TrainConfig tiny_training(const std::filesystem::path& data, const std::filesystem::path& run) {
  TrainConfig c;
  c.data.data_dir = data.string();
  c.data.src_lang = "en";
  c.data.tgt_lang = "de";
  c.vocab.vocab_size = 300;
  c.model.d_model = 32;
  c.model.heads = 2;
  c.model.encoder_layers = 1;
  c.model.decoder_layers = 1;
  c.model.d_ff = 64;
  c.model.dropout = 0.1;  // exercises the random generator across the resume
  c.optim.batch_tokens = 200;
  c.optim.warmup_steps = 4;
  c.run.valid_every = 3;
  c.run.valid_max_sentences = 5;
  c.run.log_every = 1;
  c.machine.threads = 1;
  c.run.run_dir = run.string();
  return c;
}

TEST(Trainer, ResumedRunReachesTheSameWeightsAsAnUninterruptedOne) {
  const auto data = make_temp_dir("resume-data");
  trafo::testing::write_synthetic_corpus(data, "train", 120, 1);
  trafo::testing::write_synthetic_corpus(data, "dev", 10, 2);
  const auto root = make_temp_dir("resume-runs");

  auto whole = tiny_training(data, root / "whole");
  whole.stop.max_steps = 7;
  Trainer(whole).run();

  auto part = tiny_training(data, root / "part");
  part.stop.max_steps = 3;
  EXPECT_EQ(Trainer(part).run().reason, "steps");
  part.stop.max_steps = 7;
  const auto resumed = Trainer(part).run();
  EXPECT_EQ(resumed.step, 7);

  const auto a = checkpoint::load(root / "whole" / "checkpoint-last.pt");
  const auto b = checkpoint::load(root / "part" / "checkpoint-last.pt");
  ASSERT_EQ(a.weights.size(), b.weights.size());
  for (const auto& [name, tensor] : a.weights) {
    EXPECT_TRUE(torch::equal(tensor, b.weights.at(name))) << name;
  }
}

TEST(WordDropout, ReplacesOrdinaryPiecesByUnkAtItsRateAndNothingElse) {
  torch::manual_seed(5);
  const int tag = 9;
  auto ids = torch::randint(4, 40, {64, 50}, torch::kLong);  // ordinary pieces
  ids.select(1, 0).fill_(kBosId);
  ids.select(1, 1).fill_(tag);
  ids.select(1, 48).fill_(kEosId);
  ids.select(1, 49).fill_(kPadId);
  EXPECT_TRUE(drop_words(ids, 0.0).is_same(ids));
  const auto dropped = drop_words(ids, 0.3, {tag});
  const auto changed = dropped.ne(ids);
  EXPECT_TRUE(dropped.masked_select(changed).eq(kUnkId).all().item<bool>()) << "a changed piece is unk";
  for (const int64_t column : {0, 1, 48, 49}) {
    EXPECT_TRUE(torch::equal(dropped.select(1, column), ids.select(1, column))) << "column " << column;
  }
  const double share = changed.sum().item<double>() / (64.0 * 46.0);
  EXPECT_NEAR(share, 0.3, 0.03);
  EXPECT_FALSE(torch::equal(drop_words(ids, 0.3, {tag}), dropped)) << "fresh draws each call";
}

// Word dropout draws from the generator a checkpoint saves: a resumed run still reaches the weights
// of an uninterrupted one.
// Word dropout and layer-drop draw from the generator checkpoints keep.
TEST(Trainer, AResumedRunWithWordDropoutAndLayerDropReachesTheSameWeights) {
  const auto data = make_temp_dir("word-dropout-data");
  trafo::testing::write_synthetic_corpus(data, "train", 120, 1);
  trafo::testing::write_synthetic_corpus(data, "dev", 10, 2);
  const auto root = make_temp_dir("word-dropout-runs");
  const auto with_word_dropout = [&](const std::filesystem::path& run) {
    auto c = tiny_training(data, run);
    c.optim.src_word_dropout = 0.2;
    c.optim.tgt_word_dropout = 0.2;
    c.model.encoder_layerdrop = 0.3;
    c.model.decoder_layerdrop = 0.3;
    return c;
  };
  auto whole = with_word_dropout(root / "whole");
  whole.stop.max_steps = 6;
  Trainer(whole).run();
  auto plain = tiny_training(data, root / "plain");
  plain.stop.max_steps = 6;
  Trainer(plain).run();
  auto part = with_word_dropout(root / "part");
  part.stop.max_steps = 3;
  Trainer(part).run();
  part.stop.max_steps = 6;
  Trainer(part).run();

  trafo::testing::expect_resumed_equals_whole_unlike_plain(root / "whole", root / "part", root / "plain",
                                                           "word dropout and layer-drop");
}

TEST(Trainer, RefusesToResumeARunWithAnotherModel) {
  const auto data = make_temp_dir("mismatch-data");
  trafo::testing::write_synthetic_corpus(data, "train", 60, 1);
  trafo::testing::write_synthetic_corpus(data, "dev", 5, 2);
  const auto run = make_temp_dir("mismatch-run");
  auto config = tiny_training(data, run);
  config.stop.max_steps = 1;
  Trainer(config).run();
  config.model.d_model = 64;
  config.stop.max_steps = 2;
  try {
    Trainer(config).run();
    FAIL() << "expected an error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("d-model 32 vs 64"), std::string::npos) << e.what();
  }
}

checkpoint::Checkpoint small_checkpoint(int64_t d_model) {
  auto config = trafo::testing::tiny_model_config(50);
  config.d_model = d_model;
  config.d_ff = 4 * d_model;
  config.max_positions = 1024;  // files as before: the positions table is most of a small checkpoint
  model::Transformer model(config);
  return {config, checkpoint::model_weights(model), "", "", std::nullopt, {}};
}

TEST(Checkpoint, FailedWriteLeavesTheOldCheckpointLoadable) {
  const auto dir = make_temp_dir("atomic");
  const auto path = dir / "checkpoint-last.pt";
  checkpoint::save(path, small_checkpoint(16));
  // The temporary file cannot be created (a folder has its name): the save fails midway, a path that
  // cannot be written (trafo::throw_write_error's rule).
  std::filesystem::create_directory(path.string() + ".tmp-" + std::to_string(::getpid()));
  EXPECT_THROW(checkpoint::save(path, small_checkpoint(32)), InputError);
  EXPECT_EQ(checkpoint::load(path).model_config.d_model, 16);
}

TEST(Checkpoint, KillDuringWritesNeverLeavesABrokenFile) {
  const auto dir = make_temp_dir("kill");
  const auto path = dir / "checkpoint-last.pt";
  checkpoint::save(path, small_checkpoint(16));
  const auto big = small_checkpoint(256);  // made before the fork: the child only writes
  const pid_t child = ::fork();
  if (child == 0) {
    while (true) checkpoint::save(path, big);
  }
  ::usleep(300 * 1000);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  const auto loaded = checkpoint::load(path);
  EXPECT_TRUE(loaded.model_config.d_model == 16 || loaded.model_config.d_model == 256);
}

TEST(Checkpoint, CorruptOrTruncatedFilesAreClearErrors) {
  const auto dir = make_temp_dir("corrupt");
  const auto path = dir / "c.pt";
  checkpoint::save(path, small_checkpoint(16));
  const auto bytes = trafo::testing::read_text(path);
  trafo::testing::write_text(path, bytes.substr(0, bytes.size() / 2));
  EXPECT_THROW(checkpoint::load(path), InputError);
  trafo::testing::write_text(path, "not a checkpoint at all");
  EXPECT_THROW(checkpoint::load(path), InputError);
  EXPECT_THROW(checkpoint::load(dir / "missing.pt"), InputError);
}

// Format 1 (a bare LibTorch archive without a checksum, from early trafo builds) is refused before
// anything is unpickled: LibTorch's Unpickler allocates whatever a pickle's numbers say, and the
// fuzzer's finding, such a file, asked for 26 GB.
TEST(Checkpoint, Format1IsRefusedBeforeAnythingIsUnpickled) {
  const std::filesystem::path finding = std::string(TRAFO_SOURCE_DIR) + "/fuzz/findings/checkpoint/huge-alloc-unpickler";
  try {
    checkpoint::load(finding);
    ADD_FAILURE() << "loaded";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("format 1"), std::string::npos) << e.what();
  }
}

// A byte changed anywhere in a checkpoint makes the load fail with InputError: the checksum covers
// the whole file, header and data.
TEST(Checkpoint, NoChangedByteLoadsSilently) {
  const auto dir = make_temp_dir("flip");
  const auto path = dir / "c.pt";
  auto original = small_checkpoint(16);
  original.tokenizer = "tokenizer bytes";
  original.config = "d-model=16";
  checkpoint::save(path, original);
  const auto bytes = trafo::testing::read_text(path);
  int refused = 0;
  int tried = 0;
  for (size_t at = 0; at < bytes.size(); at += 211) {
    ++tried;
    auto changed = bytes;
    changed[at] = static_cast<char>(changed[at] ^ 0x5a);
    trafo::testing::write_text(path, changed);
    try {
      const auto loaded = checkpoint::load(path);
      EXPECT_EQ(loaded.tokenizer, original.tokenizer) << "byte " << at;
      EXPECT_EQ(loaded.config, original.config) << "byte " << at;
      for (const auto& [name, tensor] : original.weights) {
        EXPECT_TRUE(torch::equal(tensor, loaded.weights.at(name))) << name << ", byte " << at;
      }
    } catch (const InputError& e) {
      ++refused;
    }
  }
  EXPECT_EQ(refused, tried);
}

}  // namespace
}  // namespace trafo::train
