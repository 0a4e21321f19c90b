// trafo bench: the FLOP counter against a hand count, the synthetic batches against their recipe
// and against bench/pytorch_reference.py, and `trafo bench` end to end. No timing assertions.
#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/cuda.h>
#include <torch/torch.h>

#include "model_support.h"
#include "test_support.h"
#include "trafo/bench/flops.h"
#include "trafo/bench/measure.h"
#include "trafo/bench/synthetic.h"
#include "trafo/data/tokenizer.h"
#include "trafo/decode/translator.h"
#include "trafo/model/transformer.h"

namespace trafo::testing {
namespace {

// Small enough to count by hand: vocabulary 10, d 4, d_ff 8, 1 encoder and 2 decoder layers.
model::ModelConfig tiny_bench_config() {
  auto c = tiny_model_config(10);
  c.d_model = 4;
  c.d_ff = 8;
  c.encoder_layers = 1;
  return c;
}

TEST(BenchFlops, MatchesAHandCount) {
  // d 4, d_ff 8, vocabulary 10, 1 encoder and 2 decoder layers; a pair of S = 3, T = 2 real tokens.
  // Per source token: encoder QKV 4×12 + out 4×4 + FFN 4×8 + 8×4 = 128, plus cross-attention
  // K/V 4×8 in each decoder layer = 64: 192 weights.
  // Per target token: per decoder layer QKV 48 + out 16 + cross Q 16 + cross out 16 + FFN 64 = 160,
  // two layers 320, output projection 4×10 = 40: 360 weights.
  // 6 × (3 × 192 + 2 × 360) = 7776; attention 12 × 4 × (1 × 3² + 2 × (2² + 2 × 3)) = 1392.
  const auto c = tiny_bench_config();
  const auto weights = bench::token_weights(c);
  EXPECT_DOUBLE_EQ(weights.source, 192.0);
  EXPECT_DOUBLE_EQ(weights.target, 360.0);
  EXPECT_DOUBLE_EQ(bench::training_flops(c, bench::PairLengths{3, 2}), 7776.0 + 1392.0);
  EXPECT_DOUBLE_EQ(bench::training_flops(c, std::vector<bench::PairLengths>{{3, 2}, {3, 2}, {1, 1}}),
                   2 * 9168.0 + bench::training_flops(c, bench::PairLengths{1, 1}));
}

TEST(BenchFlops, CountsEveryMatrixOfTheModelOnce) {
  // Every matrix of a transformer (embeddings aside) is passed once by one source and one target token
  // when the cross-attention K/V are counted with the source: the weights sum to the parameters of
  // all Linear layers, without biases, plus the tied output projection.
  auto c = tiny_bench_config();
  c.d_model = 16;
  c.d_ff = 24;
  c.vocab_size = 30;
  model::Transformer model(c);
  double matrices = 0.0;
  for (const auto& item : model->named_parameters()) {
    const auto& name = item.key();
    if (item.value().dim() == 2 && name.find("embedding") == std::string::npos) matrices += item.value().numel();
  }
  matrices += static_cast<double>(c.d_model * c.vocab_size);  // tied output projection
  const auto weights = bench::token_weights(c);
  EXPECT_DOUBLE_EQ(weights.source + weights.target, matrices);
}

TEST(BenchSynthetic, SplitMix64MatchesItsReferenceOutput) {
  bench::SplitMix64 rng(0);
  EXPECT_EQ(rng.next(), 0xE220A8397B1DCDAFULL);  // Vigna's splitmix64.c seeded with 0
  EXPECT_EQ(rng.next(), 0x6E789E6AA1B965F4ULL);
}

TEST(BenchSynthetic, BatchesFollowTheRecipe) {
  const auto batches = bench::synthetic_batches(6, 600, 50, 7);
  ASSERT_EQ(batches.size(), 6u);
  int64_t previous_width = 0;
  for (const auto& batch : batches) {
    const auto rows = batch.source.size(0);
    ASSERT_EQ(static_cast<size_t>(rows), batch.pairs.size());
    EXPECT_LE(rows * std::max(batch.source.size(1), batch.target_input.size(1)), 600);
    EXPECT_GE(std::max(batch.source.size(1), batch.target_input.size(1)), previous_width) << "spread over lengths";
    previous_width = std::max(batch.source.size(1), batch.target_input.size(1));
    EXPECT_EQ(batch.source.ne(0).sum().item<int64_t>(), batch.source_tokens);
    EXPECT_EQ(batch.target_output.ne(0).sum().item<int64_t>(), batch.target_tokens);
    EXPECT_EQ(batch.target_input.ne(0).sum().item<int64_t>(), batch.target_tokens);
    EXPECT_LT(batch.source.max().item<int64_t>(), 50);
    EXPECT_TRUE(torch::equal(batch.target_input.select(1, 0), torch::full({rows}, data::Tokenizer::kBos, torch::kLong)));
    for (int64_t r = 0; r < rows; ++r) {
      EXPECT_EQ(batch.source[r][batch.pairs[r].source - 1].item<int64_t>(), data::Tokenizer::kEos);
      EXPECT_EQ(batch.target_output[r][batch.pairs[r].target - 1].item<int64_t>(), data::Tokenizer::kEos);
      const int64_t t = batch.pairs[r].target - 1;
      EXPECT_TRUE(torch::equal(batch.target_input[r].narrow(0, 1, t), batch.target_output[r].narrow(0, 0, t)));
    }
  }
  const auto again = bench::synthetic_batches(6, 600, 50, 7);
  EXPECT_TRUE(torch::equal(again.back().target_output, batches.back().target_output));
  // The pool's widest side, as the batches that hold the whole pool have it.
  int64_t widest = 0;
  for (const auto& batch : bench::synthetic_batches(1, 1 << 20, 50, 7)) {
    for (const auto& pair : batch.pairs) widest = std::max({widest, pair.source, pair.target});
  }
  EXPECT_EQ(widest, bench::synthetic_longest_side(7));
}

TEST(BenchSynthetic, PythonReferenceBuildsTheSameBatchesAndSentences) {
  TRAFO_REQUIRE_PYTHON_MODULE("torch");
  const auto result = run_command(std::string("'") + TRAFO_PYTHON + "' '" + TRAFO_SOURCE_DIR +
                                  "/bench/pytorch_reference.py' --fingerprint --vocab-size 50 --batch-tokens 300 "
                                  "--train-steps 4 --decode-sentences 5 --seed 3");
  ASSERT_EQ(result.exit_code, 0) << result.errors;
  const auto python = nlohmann::json::parse(result.output);
  nlohmann::json mine = {{"batches", nlohmann::json::array()}, {"sentences", nlohmann::json::array()}};
  for (const auto& b : bench::synthetic_batches(4, 300, 50, 3)) {
    mine["batches"].push_back({b.source.size(0), b.source.size(1), b.target_input.size(1),
                               b.source.sum().item<int64_t>(), b.target_input.sum().item<int64_t>(),
                               b.target_output.sum().item<int64_t>()});
  }
  for (const auto& s : bench::synthetic_sentences(5, 50, 3)) {
    int64_t sum = 0;
    for (const int id : s) sum += id;
    mine["sentences"].push_back({s.size(), sum});
  }
  EXPECT_EQ(python, mine);
}

const char* kTinyBench =
    " --precision fp32 --threads 1 --vocab-size 60 --d-model 16 --heads 2 --encoder-layers 1"
    " --decoder-layers 1 --d-ff 32 --batch-tokens 200 --train-steps 2 --warmup-steps 1";

std::vector<nlohmann::json> parse_lines(const std::string& text) {
  std::vector<nlohmann::json> records;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) records.push_back(nlohmann::json::parse(line));
  return records;
}

TEST(BenchCli, PrintsEveryFigureAsJsonLines) {
  const auto result = run_trafo(std::string("bench --json") + kTinyBench + " --decode-sentences 3 --leak-steps 5");
  ASSERT_EQ(result.exit_code, 0) << result.errors;
  std::multiset<std::string> kinds;
  std::map<std::string, std::vector<double>> decoded;  // tgt_tokens by batching
  for (const auto& r : parse_lines(result.output)) {
    const std::string kind = r["record"];
    kinds.insert(kind);
    if (kind == "setup") {
      EXPECT_EQ(r["impl"], "trafo");
      EXPECT_EQ(r["threads"], 1);
      EXPECT_GT(r["model_flops_per_target_token"].get<double>(), 0.0);
    } else if (kind == "matmul_peak") {
      EXPECT_EQ(r["precision"], "fp32");
      EXPECT_GT(r["gflops"].get<double>(), 0.0);
    } else if (kind == "train") {
      for (const char* key : {"tgt_tokens_per_s", "step_ms", "model_gflops_per_s", "mfu"}) {
        EXPECT_GT(r[key].get<double>(), 0.0) << key;
      }
    } else if (kind == "memory") {
      EXPECT_GT(r["peak_rss_mb"].get<double>(), 0.0);
      EXPECT_GE(r["peak_rss_mb"].get<double>(), r["rss_mb"].get<double>());
    } else if (kind == "decode") {
      EXPECT_TRUE(r["decoder"] == "cached" || r["decoder"] == "recomputed") << r.dump();
      EXPECT_GT(r["tgt_tokens_per_s"].get<double>(), 0.0);
      EXPECT_GT(r["tgt_tokens"].get<double>(), 3.0);
      decoded[r["batching"].get<std::string>()].push_back(r["tgt_tokens"].get<double>());
    } else if (kind == "memory_trend") {
      EXPECT_EQ(r["steps"], 5);
      EXPECT_GT(r["end_rss_mb"].get<double>(), 0.0);
    }
  }
  const std::multiset<std::string> expected = {"setup",  "matmul_peak", "train",  "memory",
                                               "decode", "decode",      "decode", "decode", "memory_trend"};
  EXPECT_EQ(kinds, expected);
  // The cached and the recomputing decoder produce the same translations, so the same tokens.
  for (const auto& [batching, tokens] : decoded) {
    ASSERT_EQ(tokens.size(), 2u) << batching;
    EXPECT_EQ(tokens[0], tokens[1]) << batching;
  }
}

// --batch-tokens auto fits the budget as trafo train does: 4096 on a CPU, and on a GPU (posed by the
// fit_tokens hook) the largest multiple of 1024 that fits 2.5x over, which the synthetic batches
// then fill; a budget that is neither a number nor auto is a one-line error.
TEST(BenchCli, BatchTokensAutoFitsAsTrainDoes) {
  const auto setup_of = [](const CommandResult& result) {
    for (const auto& r : parse_lines(result.output)) {
      if (r["record"] == "setup") return r;
    }
    return nlohmann::json();
  };
  std::string tiny = kTinyBench;
  tiny.erase(tiny.find(" --batch-tokens 200"), std::string(" --batch-tokens 200").size());
  const std::string bench = "bench --json" + tiny + " --batch-tokens auto";
  const auto cpu = run_trafo(bench);
  ASSERT_EQ(cpu.exit_code, 0) << cpu.errors;
  EXPECT_EQ(setup_of(cpu)["batch_tokens"], 4096) << cpu.output;
  const auto gpu = run_command("TRAFO_TEST_HOOKS=fit_tokens=20000 '" + std::string(TRAFO_BINARY) + "' " + bench);
  ASSERT_EQ(gpu.exit_code, 0) << gpu.errors;
  const auto setup = setup_of(gpu);
  EXPECT_EQ(setup["batch_tokens"], 7168) << setup;  // 7,168 x 2.5 = 17,920 <= 20,000 < 8,192 x 2.5
  EXPECT_NE(setup["batch_tokens_reason"].get<std::string>().find("7168 tokens"), std::string::npos) << setup;
  EXPECT_GT(setup["mean_source_tokens"].get<double>(), 4096.0) << "the batches fill the fitted budget: " << setup;
  const auto bad = run_trafo("bench" + tiny + " --batch-tokens soon");
  EXPECT_EQ(bad.exit_code, 2) << bad.errors;
  EXPECT_NE(bad.errors.find("--batch-tokens must be a whole number or auto"), std::string::npos) << bad.errors;
}

TEST(BenchCli, TakesTheModelFromATrainConfigAndRejectsUnknownKeys) {
  const auto dir = make_temp_dir("bench-config");
  write_text(dir / "model.toml", "d-model=16\nheads=2\nencoder-layers=1\ndecoder-layers=1\nd-ff=32\nvocab-size=60\n"
                                 "lr=0.001\nwarmup-steps=300\nbatch-tokens=2048\nmax-time=\"12m\"\n");
  const auto result = run_trafo("bench --config '" + (dir / "model.toml").string() +
                                "' --json --precision fp32 --threads 1 --batch-tokens 200 --train-steps 1"
                                " --warmup-steps 0 --decode-sentences 0 --d-ff 40");
  ASSERT_EQ(result.exit_code, 0) << result.errors;
  const auto setup = parse_lines(result.output).front();
  EXPECT_EQ(setup["d_model"], 16);
  EXPECT_EQ(setup["d_ff"], 40) << "the command line wins";
  EXPECT_EQ(setup["batch_tokens"], 200) << "a config's batch-tokens is a training knob";
  EXPECT_EQ(setup["warmup_steps"], 0);

  write_text(dir / "typo.toml", "d-modle=16\n");
  const auto typo = run_trafo("bench --config '" + (dir / "typo.toml").string() + "' --train-steps 1");
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_NE(typo.errors.find("d-modle"), std::string::npos) << typo.errors;
}

TEST(BenchCli, PrintsATable) {
  const auto result = run_trafo(std::string("bench") + kTinyBench + " --decode-sentences 0");
  ASSERT_EQ(result.exit_code, 0) << result.errors;
  for (const char* text : {"matmul peak", "training", "MFU", "peak RSS"}) {
    EXPECT_NE(result.output.find(text), std::string::npos) << text << "\n" << result.output;
  }
}

// --profile writes a Chrome trace of the training steps per precision; a folder that cannot take
// it is refused before any timed work.
TEST(BenchCli, ProfilesIntoATraceOrRefusesAtOnce) {
  const auto dir = make_temp_dir("bench-profile");
  const auto result = run_trafo(std::string("bench") + kTinyBench + " --decode-sentences 0 --profile '" +
                                (dir / "p").string() + "'");
  ASSERT_EQ(result.exit_code, 0) << result.errors;
  const auto trace = nlohmann::json::parse(read_text(dir / "p.fp32.json"));
  EXPECT_FALSE(trace["traceEvents"].empty());
  const auto refused = run_trafo(std::string("bench") + kTinyBench + " --profile '" + (dir / "no" / "p").string() + "'");
  EXPECT_EQ(refused.exit_code, 2) << refused.errors;
  EXPECT_EQ(std::count(refused.errors.begin(), refused.errors.end(), '\n'), 1) << refused.errors;
  EXPECT_NE(refused.errors.find("--profile"), std::string::npos) << refused.errors;
  EXPECT_EQ(refused.output, "");
}

// --device names where both programs run: the setup record says which; a CUDA device that is not
// there is one line and exit 2 from each. Where CUDA is there, the tiny bench runs on it.
TEST(BenchCli, RunsOnTheDeviceItNames) {
  TRAFO_REQUIRE_PYTHON_MODULE("torch");
  const std::string reference = std::string("'") + TRAFO_PYTHON + "' '" + TRAFO_SOURCE_DIR + "/bench/pytorch_reference.py'";
  const std::string tiny = std::string(kTinyBench) + " --decode-sentences 2";
  for (const std::string device : {"cpu", "cuda"}) {
    if (device == "cuda" && !torch::cuda::is_available()) {
      for (const auto& result : {run_trafo("bench --device cuda" + tiny),
                                 run_command(reference + " --device cuda" + tiny)}) {
        EXPECT_EQ(result.exit_code, 2) << result.errors;
        EXPECT_EQ(std::count(result.errors.begin(), result.errors.end(), '\n'), 1) << result.errors;
        EXPECT_NE(result.errors.find("no CUDA device"), std::string::npos) << result.errors;
        EXPECT_EQ(result.output, "");
      }
      continue;
    }
    for (const auto& result : {run_trafo("bench --json --device " + device + tiny),
                               run_command(reference + " --json --device " + device + tiny)}) {
      ASSERT_EQ(result.exit_code, 0) << result.errors;
      const auto records = parse_lines(result.output);
      ASSERT_FALSE(records.empty());
      EXPECT_EQ(records.front()["device"].get<std::string>().rfind(device, 0), 0u) << records.front().dump();
      int trained = 0, decoded = 0;
      for (const auto& r : records) {
        if (r["record"] == "train") trained += r["tgt_tokens_per_s"].get<double>() > 0.0;
        if (r["record"] == "decode") decoded += r["tgt_tokens"].get<double>() > 0.0;
      }
      EXPECT_EQ(trained, 1) << result.output;
      EXPECT_EQ(decoded, 4) << result.output;
    }
  }
}

// Decoding after the benchmark's training rounds (the real fused Adam, which bumps no version counter)
// sees the trained weights: the same outputs as a fresh model holding them, through the plain path.
// The model decodes once before training, so a copy packed then would be stale after.
TEST(BenchDecoding, DecodesTheWeightsTheTrainingRoundsLeft) {
  torch::manual_seed(31);
  const auto config = tiny_model_config(40);
  model::Transformer model(config);
  const auto sentences = bench::synthetic_sentences(12, config.vocab_size, 5);
  decode::Translator translator(model, decode::DecodeOptions{});
  const auto before = translator.translate_ids(sentences);
  bench::TrainOptions options;
  options.warmup_steps = 2;
  options.timed_steps = 4;
  options.lr = 3e-2;
  bench::measure_training(model, bench::synthetic_batches(4, 300, config.vocab_size, 7), options);
  const auto after = translator.translate_ids(sentences);

  model::Transformer fresh(config);
  {
    torch::NoGradGuard no_grad;
    for (auto& p : fresh->named_parameters()) p.value().copy_(model->named_parameters()[p.key()]);
  }
  fresh->set_packed_inference(false);
  const auto expected = decode::Translator(fresh, decode::DecodeOptions{}).translate_ids(sentences);
  int changed = 0;
  for (size_t i = 0; i < sentences.size(); ++i) {
    EXPECT_EQ(after[i].front().tokens, expected[i].front().tokens) << "sentence " << i;
    changed += before[i].front().tokens != after[i].front().tokens;
  }
  EXPECT_GT(changed, 0) << "training changed no output: the test cannot tell stale weights from fresh ones";
}

}  // namespace
}  // namespace trafo::testing
