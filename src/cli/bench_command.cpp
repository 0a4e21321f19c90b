// `trafo bench`: training and decoding speed on synthetic batches, the machine's matmul peak,
// model FLOPs utilisation and memory, as a table or one JSON object per line. bench/
// pytorch_reference.py prints the same records for PyTorch Python; bench/compare.sh sets the
// two side by side.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "commands.h"
#include "config_options.h"
#include "trafo/bench/measure.h"
#include "trafo/errors.h"
#include "trafo/ops/eligibility.h"
#include "trafo/run_config/config_file.h"
#include "trafo/run_config/config_keys.h"
#include "trafo/runtime/precision.h"
#include "trafo/test_hooks.h"
#include "trafo/train/batch_fit.h"
#include "trafo/util/numbers.h"
#include "trafo/util/device.h"

namespace trafo::cli {
namespace {

struct BenchOptions {
  run_config::TrainConfig shape;       // the model's keys, vocab-size and threads, bound and read as trafo train does
  std::string config;             // TOML file: the model keys and `threads` apply, other train keys are ignored
  bool json = false;              // one JSON object per line instead of a table
  std::string device = "cpu";     // cpu | cuda | auto (cuda when one is available)
  std::string precision = "auto"; // fp32 | bf16 | both | auto (both where the device has native bf16); decoding is fp32
  std::string batch_tokens = "4096";  // token budget of the synthetic training batches, or auto (fitted)
  int64_t train_steps = 0;        // timed steps per round (0: 30, or 8 for d-model ≥ 512)
  int64_t warmup_steps = -1;      // untimed steps first (−1: 5, or 2 for d-model ≥ 512)
  int64_t rounds = 1;             // timed rounds; medians reported
  int64_t decode_sentences = 32;  // sentences decoded per round (0: no decoding)
  int64_t leak_steps = 0;         // training steps of the memory trend, per precision (0: none)
  uint64_t seed = 1;              // weights and synthetic batches
  std::string profile;            // not empty: a profiled trace of training per precision, PROFILE.<precision>.json
};

// `trafo train`'s keys that bench takes: the model's shape, vocab-size and threads.
bool takes(const run_config::ConfigKey& key) {
  return std::string(key.group) == "Model" || std::string(key.name) == "vocab-size" || std::string(key.name) == "threads" ||
         std::string(key.name) == "cuda-graphs";
}

// The model `shape` describes.
model::ModelConfig bench_model(const BenchOptions& o) {
  auto model = o.shape.model;
  model.vocab_size = o.shape.vocab.vocab_size;
  return model;
}

// --batch-tokens as a number; nullopt for auto. InputError for anything else.
std::optional<int64_t> given_batch_tokens(const BenchOptions& o) {
  if (o.batch_tokens == "auto") return std::nullopt;
  int64_t tokens = 0;
  try {
    util::parse_decimal(o.batch_tokens, tokens);
  } catch (const InputError& e) {
    throw InputError(std::string("--batch-tokens must be a whole number or auto: ") + e.what());
  }
  return tokens;
}

// Bounds far beyond any real measurement; larger values only fail later, allocating.
void validate(const BenchOptions& o) {
  auto require_between = [](int64_t value, int64_t low, int64_t high, const std::string& name) {
    if (value < low || value > high) {
      throw InputError("--" + name + " must be between " + std::to_string(low) + " and " + std::to_string(high) +
                       ", not " + std::to_string(value));
    }
  };
  model::validate(bench_model(o));
  util::resolve_threads(o.shape.machine.threads);
  if (const auto tokens = given_batch_tokens(o)) require_between(*tokens, 1, int64_t{1} << 24, "batch-tokens");
  require_between(o.train_steps, 0, 1000000, "train-steps");
  require_between(o.warmup_steps, -1, 1000000, "warmup-steps");
  require_between(o.rounds, 1, 1000, "rounds");
  const std::string& graphs = o.shape.machine.cuda_graphs;
  if (graphs != "auto" && graphs != "on" && graphs != "off") {
    throw InputError("--cuda-graphs must be auto, on or off, not '" + graphs + "'");
  }
  require_between(o.decode_sentences, 0, 100000, "decode-sentences");
  require_between(o.leak_steps, 0, 1000000, "leak-steps");
  // The traces are written after all the timed work: a folder that cannot take them is found now.
  if (!o.profile.empty()) {
    auto folder = std::filesystem::path(o.profile).parent_path();
    if (folder.empty()) folder = ".";
    if (::access(folder.c_str(), W_OK) != 0) {
      throw InputError("--profile " + o.profile + ": cannot write into " + folder.string());
    }
  }
}

void add_options(CLI::App& cmd, BenchOptions& o) {
  cmd.add_option("--config", o.config,
                 "TOML config of trafo train (configs/toy.toml): its model keys and threads apply, the command line "
                 "wins; its other keys (batch-tokens, lr, warmup-steps, ...) are checked, then ignored");
  cmd.add_flag("--json", o.json, "one JSON object per line instead of a table");
  cmd.add_option("--device", o.device, "cpu, cuda, or auto (cuda when one is available)")
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}))->capture_default_str();
  cmd.add_option("--precision", o.precision,
                 "training precision: fp32, bf16, both, or auto: both where the device has native bf16 (a CPU with "
                 "avx512_bf16 or amx_bf16, CUDA compute capability >= 8.0), else fp32 (emulated bf16 matmuls are "
                 "tens of times slower); decoding runs in fp32")
      ->check(CLI::IsMember({"fp32", "bf16", "both", "auto"}))->capture_default_str();
  cmd.add_option("--batch-tokens", o.batch_tokens,
                 "token budget of the synthetic batches, padding included; auto: as trafo train fits it, the "
                 "largest whose training step (on the longest synthetic sentences, in the first precision "
                 "measured) fits the GPU's memory 2.5x over, and 4096 on a CPU")
      ->type_name("INT|auto")
      ->capture_default_str();
  cmd.add_option("--train-steps", o.train_steps, "timed training steps per round (default 30, or 8 for d-model ≥ 512)");
  cmd.add_option("--warmup-steps", o.warmup_steps, "untimed training steps first (default 5, or 2 for d-model ≥ 512)");
  cmd.add_option("--rounds", o.rounds, "timed rounds; figures are medians")->capture_default_str();
  cmd.add_option("--decode-sentences", o.decode_sentences, "sentences per decoding round (0: no decoding)")
      ->capture_default_str();
  cmd.add_option("--leak-steps", o.leak_steps, "training steps of the memory trend (RSS at 1/5 vs at the end; 0: off)")
      ->capture_default_str();
  cmd.add_option("--profile", o.profile,
                 "after the timed training, profile 3 more steps and write their Chrome trace to "
                 "PROFILE.fp32.json / PROFILE.bf16.json (bench/profile_summary.py sums it per op)");
  cmd.add_option("--seed", o.seed, "seed of the weights and the synthetic batches")->capture_default_str();
  bind_config_keys(cmd, o.shape, takes);
}

// Prints each record as it is measured: a JSON line, or a table row.
class Report {
 public:
  explicit Report(bool json) : json_(json) {}
  void add(const nlohmann::json& record, const std::string& row) {
    if (json_) {
      std::cout << record.dump() << std::endl;
    } else {
      std::cout << row << std::endl;
    }
  }

 private:
  bool json_;
};

std::string row(const std::string& what, const std::string& precision, const std::string& value) {
  return fmt::format("{:<40} {:<6} {}", what, precision, value);
}

model::Transformer make_model(const model::ModelConfig& config, uint64_t seed) {
  torch::manual_seed(seed);
  return model::Transformer(config);
}

// --batch-tokens: as given, or auto: fitted as trafo train fits it (train/batch_fit.h) against the
// longest synthetic pair, on CUDA (or where the fit_tokens test hook poses a GPU); 4096 on a CPU.
train::FittedBudget batch_budget(const BenchOptions& o, const model::ModelConfig& m, const c10::Device& device,
                                 bool bf16) {
  if (const auto tokens = given_batch_tokens(o)) return {*tokens, ""};
  if (!device.is_cuda() && test_hooks().fit_tokens < 0) {
    return {train::kDefaultBatchTokens,
            fmt::format("--batch-tokens auto: {} on a CPU", train::kDefaultBatchTokens)};
  }
  const train::CorpusExtent extent{std::min(bench::synthetic_longest_side(o.seed), m.max_positions),
                                   std::numeric_limits<int64_t>::max() / 2};
  return train::fit_batch_tokens(o.shape.optim, m, device, bf16, extent);
}

// What one `trafo bench` measures with: the options settled, the model, where it runs, the synthetic
// batches, and the report its records go to.
struct BenchRun {
  BenchOptions o;
  model::ModelConfig m;
  int threads = 1;
  c10::Device device = torch::kCPU;
  bool native_bf16 = false;
  std::vector<std::string> precisions;
  train::FittedBudget budget;
  std::vector<bench::SyntheticBatch> batches;
  std::map<std::string, double> peak;  // the matmul peak per precision
};

// Settles the defaults that depend on the model and the machine: steps, threads, device, the
// precisions measured and the batches.
BenchRun settle(BenchOptions o) {
  validate(o);
  BenchRun run;
  run.m = bench_model(o);
  const bool large = run.m.d_model >= 512;
  if (o.train_steps == 0) o.train_steps = large ? 8 : 30;
  if (o.warmup_steps < 0) o.warmup_steps = large ? 2 : 5;
  run.threads = util::threads_following_load(o.shape.machine.threads);
  at::set_num_threads(run.threads);
  run.device = util::resolve_device(o.device);
  run.native_bf16 = run.device.is_cuda() ? runtime::cuda_native_bf16() : !runtime::cpu_bf16_flags().empty();
  if (o.precision == "auto") {
    o.precision = run.native_bf16 ? "both" : "fp32";
    if (!run.native_bf16) {
      spdlog::warn("bench: this {} has no native bf16: bf16 skipped; --precision both measures it anyway",
                   run.device.is_cuda() ? "CUDA device (compute capability < 8.0)" : "CPU (neither avx512_bf16 nor amx_bf16)");
    }
  }
  if (o.precision != "bf16") run.precisions.push_back("fp32");
  if (o.precision != "fp32") run.precisions.push_back("bf16");
  run.budget = batch_budget(o, run.m, run.device, run.precisions.front() == "bf16");
  run.batches = bench::synthetic_batches(std::min<int64_t>(o.train_steps, 10), run.budget.tokens, run.m.vocab_size, o.seed);
  run.o = std::move(o);
  return run;
}

// The setup record: the model, the machine and the batches' mean sizes and FLOPs.
void report_setup(const BenchRun& r, Report& report) {
  const auto& o = r.o;
  const auto& m = r.m;
  double flops = 0.0, target_tokens = 0.0, source_tokens = 0.0, rows = 0.0;
  for (const auto& batch : r.batches) {
    flops += bench::training_flops(m, batch.pairs);
    target_tokens += static_cast<double>(batch.target_tokens);
    source_tokens += static_cast<double>(batch.source_tokens);
    rows += static_cast<double>(batch.pairs.size());
  }
  const auto n = static_cast<double>(r.batches.size());
  const int64_t parameters = make_model(m, o.seed)->parameter_count();
  report.add({{"record", "setup"}, {"impl", "trafo"}, {"version", TRAFO_VERSION}, {"torch", TORCH_VERSION},
              {"threads", r.threads}, {"device", r.device.str()},
              {"cuda_graphs", r.device.is_cuda() && o.shape.machine.cuda_graphs != "off"}, {"native_bf16", r.native_bf16},
              {"cpu_kernels", ops::isa_name(ops::cpu_isa())}, {"vocab_size", m.vocab_size}, {"d_model", m.d_model}, {"heads", m.heads},
              {"encoder_layers", m.encoder_layers}, {"decoder_layers", m.decoder_layers}, {"d_ff", m.d_ff},
              {"norm", m.norm}, {"parameters", parameters}, {"batch_tokens", r.budget.tokens},
              {"batch_tokens_reason", r.budget.reason},
              {"batches", r.batches.size()}, {"mean_sentences", rows / n}, {"mean_source_tokens", source_tokens / n},
              {"mean_target_tokens", target_tokens / n}, {"model_flops_per_target_token", flops / target_tokens},
              {"warmup_steps", o.warmup_steps}, {"train_steps", o.train_steps}, {"rounds", o.rounds},
              {"decode_sentences", o.decode_sentences}, {"seed", o.seed}},
             fmt::format("trafo bench: d_model {}, heads {}, layers {}+{}, d_ff {}, vocab {}, {} norm, {:.1f} M "
                         "parameters, {} thread{}, {}, CPU kernels {}\n{} batches under {} tokens: {:.0f} sentences, {:.0f} source and "
                         "{:.0f} target tokens on average; {:.1f} MFLOP per target token (training)\n"
                         "steps: {} warm-up + {} timed, {} round{}\n\n{:<40} {:<6} {}",
                         m.d_model, m.heads, m.encoder_layers, m.decoder_layers, m.d_ff, m.vocab_size, m.norm,
                         static_cast<double>(parameters) / 1e6, r.threads, r.threads == 1 ? "" : "s", r.device.str(),
                         ops::isa_name(ops::cpu_isa()), r.batches.size(), r.budget.tokens, rows / n, source_tokens / n,
                         target_tokens / n, flops / target_tokens / 1e6, o.warmup_steps, o.train_steps, o.rounds,
                         o.rounds == 1 ? "" : "s", "measurement", "dtype", "value"));
}

// The matmul peak and the training steps in each precision, then the memory they took.
void measure_training(BenchRun& r, Report& report) {
  for (const auto& precision : r.precisions) {
    r.peak[precision] = bench::matmul_peak_flops(precision == "bf16" ? torch::kBFloat16 : torch::kFloat, r.device);
    report.add({{"record", "matmul_peak"}, {"precision", precision}, {"size", 2048}, {"gflops", r.peak[precision] / 1e9}},
               row("matmul peak 2048x2048", precision, fmt::format("{:.1f} GFLOP/s", r.peak[precision] / 1e9)));
  }
  for (const auto& precision : r.precisions) {
    bench::TrainOptions options;
    options.device = r.device;
    options.bf16 = precision == "bf16";
    options.cuda_graphs = r.o.shape.machine.cuda_graphs != "off";  // auto: on, the benchmark times what it is given
    options.warmup_steps = r.o.warmup_steps;
    options.timed_steps = r.o.train_steps;
    options.rounds = r.o.rounds;
    if (!r.o.profile.empty()) options.profile_path = r.o.profile + "." + precision + ".json";
    auto model = make_model(r.m, r.o.seed);
    const auto result = bench::measure_training(model, r.batches, options);
    const double mfu = result.model_flops_per_s() / r.peak[precision];
    report.add({{"record", "train"}, {"precision", precision}, {"tgt_tokens_per_s", result.tokens_per_s()},
                {"step_ms", result.step_ms()}, {"model_gflops_per_s", result.model_flops_per_s() / 1e9},
                {"mfu", mfu}, {"steps", r.o.train_steps}, {"rounds_seconds", result.tokens.seconds}},
               row("training", precision,
                   fmt::format("{:>8.0f} tgt tok/s  step {:.0f} ms  {:.1f} GFLOP/s  MFU {:.1f}%",
                               result.tokens_per_s(), result.step_ms(), result.model_flops_per_s() / 1e9, 100 * mfu)));
  }
  const auto memory = bench::memory_usage();
  report.add({{"record", "memory"}, {"rss_mb", memory.rss_mb}, {"peak_rss_mb", memory.peak_rss_mb}},
             row("peak RSS after training", "", fmt::format("{:.0f} MB (now {:.0f} MB)", memory.peak_rss_mb, memory.rss_mb)));
}

// Greedy decoding of synthetic sentences: the KV-cached decoder and, for comparison, one that
// recomputes the whole prefix every step; one sentence at a time and batched.
void measure_decoding(const BenchRun& r, Report& report) {
  const auto sentences = bench::synthetic_sentences(r.o.decode_sentences, r.m.vocab_size, r.o.seed);
  for (const bool cached : {true, false}) {
    for (const bool batched : {false, true}) {
      auto model = make_model(r.m, r.o.seed);
      bench::DecodeBenchOptions options;
      options.batch_tokens = batched ? 4096 : 1;
      options.rounds = r.o.rounds;
      options.use_cache = cached;
      options.device = r.device;
      const auto rounds = bench::measure_greedy_decoding(model, sentences, options);
      const std::string batching = batched ? "batched" : "batch1";
      report.add({{"record", "decode"}, {"decoder", cached ? "cached" : "recomputed"}, {"batching", batching}, {"precision", "fp32"},
                  {"sentences", sentences.size()}, {"tgt_tokens", rounds.work}, {"tgt_tokens_per_s", rounds.per_s()},
                  {"rounds_seconds", rounds.seconds}},
                 row(std::string(batched ? "greedy decoding, batched (4096)" : "greedy decoding, batch 1") +
                         (cached ? "" : ", recomputed prefix"),
                     "fp32", fmt::format("{:>8.0f} tgt tok/s  ({:.0f} tokens)", rounds.per_s(), rounds.work)));
    }
  }
}

// --leak-steps: the resident memory of a long training run, early and at its end.
void measure_memory_trends(const BenchRun& r, Report& report) {
  for (const auto& precision : r.precisions) {
    bench::TrainOptions options;
    options.device = r.device;
    options.bf16 = precision == "bf16";
    auto model = make_model(r.m, r.o.seed);
    const auto trend = bench::measure_memory_trend(model, r.batches, r.o.leak_steps, options);
    report.add({{"record", "memory_trend"}, {"precision", precision}, {"early_step", trend.early_step},
                {"early_rss_mb", trend.early_rss_mb}, {"steps", trend.steps}, {"end_rss_mb", trend.end_rss_mb},
                {"growth_percent", trend.growth_percent()}, {"peak_rss_mb", bench::memory_usage().peak_rss_mb}},
               row("RSS trend of training", precision,
                   fmt::format("{:.0f} MB at step {} -> {:.0f} MB at step {} ({:+.1f}%)", trend.early_rss_mb,
                               trend.early_step, trend.end_rss_mb, trend.steps, trend.growth_percent())));
  }
}

int run_bench(BenchOptions options) {
  auto run = settle(std::move(options));
  Report report(run.o.json);
  report_setup(run, report);
  measure_training(run, report);
  if (run.o.decode_sentences > 0) measure_decoding(run, report);
  if (run.o.leak_steps > 0) measure_memory_trends(run, report);
  return 0;
}

}  // namespace

CommandRunner add_bench_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "bench", "measure training and decoding speed, matmul peak, MFU and memory on synthetic batches");
  auto options = std::make_shared<BenchOptions>();
  add_options(*cmd, *options);
  return [cmd, options]() -> int {
    // A `trafo train` config file, every key and value checked as trafo train reads it; bench
    // takes its own keys from it (the command line wins) and ignores the rest (lr, warmup-steps, ...).
    if (cmd->count("--config") > 0) run_config::read_config_file(options->config, options->shape, given_config_keys(*cmd));
    return run_bench(*options);
  };
}

}  // namespace trafo::cli
