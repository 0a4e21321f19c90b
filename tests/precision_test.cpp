// --precision fp32 | bf16 | auto: auto takes bf16 only where the hardware runs it natively and faster
// (the CPU flags and the timed speeds are injected: resolve_precision's arguments, or the test hooks
// cpu_flags, bf16_speedup and bf16_decoding_speedup, through TRAFO_TEST_HOOKS for the binary), per
// workload: training times
// matmuls, decoding times the model's own steps; the choice and its reason reach the `start` event;
// bf16 where it is emulated runs with one warning.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <set>
#include <string>

#include "data_support.h"
#include "model_support.h"
#include "run_support.h"
#include "test_support.h"
#include <torch/torch.h>

#include "trafo/decode/precision_probe.h"
#include "trafo/errors.h"
#include "trafo/model/transformer.h"
#include "trafo/runtime/precision.h"
#include "trafo/test_hooks.h"
#include "trafo/util/device.h"

namespace trafo::testing {
namespace {

using runtime::resolve_precision;

// A stand-in for the timed matmuls: returns `speedup` and counts its calls.
struct Speedup {
  double speedup;
  int* calls;
  double operator()() const {
    ++*calls;
    return speedup;
  }
};

TEST(Precision, AutoTakesBf16OnlyWhereItIsNativeAndFaster) {
  int calls = 0;
  const Speedup fast{2.5, &calls}, slow{0.6, &calls};
  EXPECT_FALSE(resolve_precision("auto", false, false, {}, fast).bf16);
  EXPECT_FALSE(resolve_precision("auto", false, false, {"avx2", "avx512f", "fma"}, fast).bf16);
  EXPECT_EQ(calls, 0);  // no flags: nothing timed
  EXPECT_TRUE(resolve_precision("auto", false, false, {"avx512_bf16"}, fast).bf16);
  EXPECT_TRUE(resolve_precision("auto", false, false, {"amx_bf16", "avx512_bf16"}, fast).bf16);
  EXPECT_NE(resolve_precision("auto", false, false, {"amx_bf16"}, fast).reason.find("amx_bf16"), std::string::npos);
  // avx512_bf16 without AMX on an Intel Xeon: native, and slower than fp32
  const auto slower = resolve_precision("auto", false, false, {"avx512_bf16"}, slow);
  EXPECT_FALSE(slower.bf16);
  EXPECT_NE(slower.reason.find("0.60x"), std::string::npos) << slower.reason;
  EXPECT_FALSE(resolve_precision("auto", false, false, {"avx512_bf16"}, Speedup{1.1, &calls}).bf16);
  EXPECT_EQ(calls, 5);
  EXPECT_TRUE(resolve_precision("auto", true, true, {}, slow).bf16);    // CUDA, compute capability >= 8.0
  EXPECT_FALSE(resolve_precision("auto", true, false, {"avx512_bf16"}, fast).bf16);  // an older GPU: the CPU's flags do not count
  EXPECT_EQ(calls, 5);  // a CUDA run times no CPU matmuls
}

// On CUDA, given a probe of the model's training steps (what `trafo train` gives), auto takes bf16
// only where those steps run faster in it: small models are launch-bound and lose in bf16.
TEST(Precision, AutoOnCudaTimesTheModelsTrainingSteps) {
  int cpu_calls = 0, cuda_calls = 0;
  const Speedup cpu{3.0, &cpu_calls};
  const auto slower = resolve_precision("auto", true, true, {}, cpu, Speedup{0.88, &cuda_calls});
  EXPECT_FALSE(slower.bf16);
  EXPECT_NE(slower.reason.find("training steps"), std::string::npos) << slower.reason;
  EXPECT_NE(slower.reason.find("0.88x"), std::string::npos) << slower.reason;
  EXPECT_TRUE(resolve_precision("auto", true, true, {}, cpu, Speedup{1.45, &cuda_calls}).bf16);
  EXPECT_FALSE(resolve_precision("auto", true, true, {}, cpu, Speedup{1.02, &cuda_calls}).bf16);  // within noise
  EXPECT_EQ(cuda_calls, 3);
  EXPECT_FALSE(resolve_precision("auto", true, false, {}, cpu, Speedup{9.0, &cuda_calls}).bf16);  // no native bf16
  EXPECT_TRUE(resolve_precision("bf16", true, true, {}, cpu, Speedup{0.5, &cuda_calls}).bf16);    // asked for
  EXPECT_EQ(cuda_calls, 3);  // neither is timed
  EXPECT_EQ(cpu_calls, 0);
}

// Choosing CUDA turns cuDNN's attention off (bf16 training built a plan for every batch shape);
// without a GPU, "cuda" is refused, "auto" is the CPU, and the switch stays as it was.
TEST(Precision, ChoosingCudaTurnsCudnnAttentionOff) {
  if (!torch::cuda::is_available()) {
    EXPECT_THROW(util::resolve_device("cuda"), InputError);
    EXPECT_TRUE(util::resolve_device("auto").is_cpu());
    EXPECT_TRUE(at::globalContext().userEnabledCuDNNSDP());
    return;
  }
  EXPECT_TRUE(util::resolve_device("cuda").is_cuda());
  EXPECT_FALSE(at::globalContext().userEnabledCuDNNSDP());
}

TEST(Precision, ExplicitChoicesAreKeptAndEmulationIsNamed) {
  int calls = 0;
  const Speedup slow{0.6, &calls};
  const auto fp32 = resolve_precision("fp32", false, false, {"avx512_bf16"}, slow);
  EXPECT_FALSE(fp32.bf16);
  const auto emulated = resolve_precision("bf16", false, false, {"avx2"}, slow);
  EXPECT_TRUE(emulated.bf16);
  EXPECT_TRUE(emulated.emulated);
  const auto native = resolve_precision("bf16", false, false, {"avx512_bf16"}, slow);
  EXPECT_TRUE(native.bf16);
  EXPECT_FALSE(native.emulated);
  EXPECT_THROW(resolve_precision("fp16", false, false, {}, slow), InputError);
  EXPECT_EQ(calls, 0);  // an explicit choice times nothing
}

// Decoding on a CPU keeps fp32 under auto, untimed, whatever the CPU: there a sentence's text never
// depends on its batch. On CUDA, auto times decoding; an explicit bf16 is taken anywhere.
TEST(Precision, DecodingAutoIsFp32OnTheCpuAndTimedOnCuda) {
  int calls = 0;
  using runtime::resolve_decoding_precision;
  for (const std::set<std::string>& flags : {std::set<std::string>{"avx512_bf16"}, {"amx_bf16"}, {"avx2"}}) {
    const auto picked = resolve_decoding_precision("auto", false, false, flags, Speedup{4.0, &calls});
    EXPECT_FALSE(picked.bf16);
    EXPECT_NE(picked.reason.find("never depends on what shares its batch"), std::string::npos) << picked.reason;
  }
  EXPECT_EQ(calls, 0);
  EXPECT_TRUE(resolve_decoding_precision("auto", true, true, {}, Speedup{1.3, &calls}).bf16);
  EXPECT_FALSE(resolve_decoding_precision("auto", true, true, {}, Speedup{0.9, &calls}).bf16);
  EXPECT_EQ(calls, 2);
  EXPECT_TRUE(resolve_decoding_precision("bf16", false, false, {"avx512_bf16"}, Speedup{0.5, &calls}).bf16);
  EXPECT_EQ(calls, 2);
  const auto reason = resolve_decoding_precision("auto", true, true, {}, Speedup{0.85, &calls}).reason;
  EXPECT_NE(reason.find("decoding steps of this model ran 0.85x"), std::string::npos) << reason;
}

// The hooks pose the CPU in this process; off, the machine's own flags are read.
TEST(Precision, TestHooksPoseTheCpuInProcess) {
  const auto own = runtime::cpu_bf16_flags();
  {
    TestHooks hooks;
    hooks.cpu_flags = std::set<std::string>{"avx2", "amx_bf16"};
    hooks.bf16_speedup = 3.5;
    const TestHooksScope posed(hooks);
    EXPECT_EQ(runtime::cpu_bf16_flags(), (std::set<std::string>{"avx2", "amx_bf16"}));
    EXPECT_EQ(runtime::cpu_bf16_speedup(), 3.5);
  }
  EXPECT_FALSE(test_hooks().cpu_flags.has_value());
  EXPECT_EQ(runtime::cpu_bf16_flags(), own);
}

// The switch the binary reads: KEY=VALUE entries separated by commas; a bad one names the switch.
TEST(Precision, TheTestHooksSwitchParsesEveryKeyAndRefusesBadOnes) {
  const auto hooks = test_hooks_from_switch(
      "cpu_flags=avx2 avx512_bf16, bf16_speedup=2.5,bf16_decoding_speedup=0.6,other_load=1,slow_writes_ms=25,"
      "cache_chunk_delay_ms=100,batch_fails_at=3,fit_tokens=7000,train_tokens_per_s=1500.5");
  EXPECT_EQ(hooks.cpu_flags, (std::set<std::string>{"avx2", "avx512_bf16"}));
  EXPECT_EQ(hooks.bf16_speedup, 2.5);
  EXPECT_EQ(hooks.bf16_decoding_speedup, 0.6);
  EXPECT_EQ(hooks.other_load, 1.0);
  EXPECT_EQ(hooks.slow_writes_ms, 25);
  EXPECT_EQ(hooks.cache_chunk_delay_ms, 100);
  EXPECT_EQ(hooks.batch_fails_at, 3);
  EXPECT_EQ(hooks.fit_tokens, 7000);
  EXPECT_EQ(hooks.train_tokens_per_s, 1500.5);
  EXPECT_EQ(test_hooks_from_switch("cpu_flags=avx2+amx_bf16").cpu_flags, (std::set<std::string>{"avx2", "amx_bf16"}));
  EXPECT_EQ(test_hooks_from_switch("cpu_flags=").cpu_flags, std::set<std::string>{});
  const auto off = test_hooks_from_switch("");
  EXPECT_FALSE(off.cpu_flags || off.bf16_speedup || off.bf16_decoding_speedup || off.other_load ||
               off.train_tokens_per_s);
  EXPECT_EQ(off.slow_writes_ms, 0);
  EXPECT_EQ(off.cache_chunk_delay_ms, 0);
  EXPECT_EQ(off.batch_fails_at, -1);
  EXPECT_EQ(off.fit_tokens, -1);
  for (const char* bad : {"speedup=2", "bf16_speedup", "bf16_speedup=0", "bf16_speedup=fast", "other_load=-1",
                          "batch_fails_at=-1", "slow_writes_ms=1.5", "cpu_flags=avx2,avx512_bf16",
                          "train_tokens_per_s=0"}) {
    EXPECT_THROW(test_hooks_from_switch(bad), InputError) << bad;
  }
  const auto result = run_command("TRAFO_TEST_HOOKS=bf16_speed=2 '" + std::string(TRAFO_BINARY) +
                                  "' toy-corpus --out " + quoted(make_temp_dir("hooks") / "toy"));
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.errors.rfind("trafo: error: TRAFO_TEST_HOOKS: unknown hook 'bf16_speed'", 0), 0u) << result.errors;
  EXPECT_EQ(std::count(result.errors.begin(), result.errors.end(), '\n'), 1) << result.errors;
}

class PrecisionRun : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::filesystem::path(make_temp_dir("precision"));
    write_synthetic_corpus(*dir_, "train", 60, 1);
    write_synthetic_corpus(*dir_, "dev", 4, 2);
  }
  static void TearDownTestSuite() { delete dir_; }

  // One step on the CPU posing as a CPU with `flags` whose bf16 matmuls run `speedup` times as fast
  // as fp32 ("": timed for real); `precision` "": the default. The `start` event of the run.
  static nlohmann::json start_event(const std::string& name, const std::string& flags, const std::string& speedup,
                                    const std::string& precision, std::string* errors) {
    const auto run = *dir_ / name;
    const auto result = run_command(
        "TRAFO_TEST_HOOKS='cpu_flags=" + flags + (speedup.empty() ? "" : ",bf16_speedup=" + speedup) + "' '" +
        std::string(TRAFO_BINARY) + "' train --data-dir " + quoted(*dir_) + " --src-lang en --tgt-lang de --run-dir " +
        quoted(run) + (precision.empty() ? "" : " --precision " + precision) +
        " --d-model 16 --heads 2 --encoder-layers 1 --decoder-layers 1 --d-ff 32 --vocab-size 300 --threads 1"
        " --max-steps 1 --valid-every 1 --valid-max-sentences 2 --early-stopping 0");
    EXPECT_EQ(result.exit_code, 0) << result.errors;
    *errors = result.errors;
    for (const auto& event : read_jsonl(run / "metrics.jsonl")) {
      if (event.at("event") == "start") return event;
    }
    ADD_FAILURE() << "no start event in " << run;
    return {};
  }

  static std::filesystem::path* dir_;
};
std::filesystem::path* PrecisionRun::dir_ = nullptr;

TEST_F(PrecisionRun, AutoIsTheDefaultAndFollowsTheInjectedCpu) {
  std::string errors;
  const auto plain = start_event("plain", "avx2 fma", "2.5", "", &errors);
  EXPECT_EQ(plain.at("precision"), "fp32");
  EXPECT_NE(plain.at("precision_reason").get<std::string>().find("neither"), std::string::npos) << plain;
  const auto native = start_event("native", "avx2 avx512_bf16", "2.5", "", &errors);
  EXPECT_EQ(native.at("precision"), "bf16");
  EXPECT_NE(native.at("precision_reason").get<std::string>().find("avx512_bf16"), std::string::npos) << native;
  const auto slower = start_event("slower", "avx2 avx512_bf16", "0.6", "auto", &errors);
  EXPECT_EQ(slower.at("precision"), "fp32");
  EXPECT_NE(slower.at("precision_reason").get<std::string>().find("0.60x"), std::string::npos) << slower;
  EXPECT_EQ(errors.find("emulated"), std::string::npos) << errors;
}

// The matmuls timed for real: a positive speed ratio in the reason, whichever way it went here.
TEST_F(PrecisionRun, AutoTimesTheCpusMatmulsWhereTheFlagsAreThere) {
  std::string errors;
  const auto timed = start_event("timed", "avx512_bf16", "", "auto", &errors);
  const auto reason = timed.at("precision_reason").get<std::string>();
  const auto at = reason.find("ran ");
  ASSERT_NE(at, std::string::npos) << reason;
  const double speedup = std::stod(reason.substr(at + 4));
  EXPECT_GT(speedup, 0.0) << reason;
  EXPECT_EQ(timed.at("precision"), speedup >= runtime::kMinBf16Speedup ? "bf16" : "fp32") << reason;
}

TEST_F(PrecisionRun, Bf16WhereItIsEmulatedRunsWithOneWarning) {
  std::string errors;
  const auto emulated = start_event("asked", "avx2", "", "bf16", &errors);
  EXPECT_EQ(emulated.at("precision"), "bf16");
  size_t warnings = 0;
  for (size_t at = errors.find("emulated"); at != std::string::npos; at = errors.find("emulated", at + 1)) ++warnings;
  EXPECT_EQ(warnings, 1u) << errors;
}

// A CPU that auto finds fast in bf16 (posed: this one may not be): training runs in bf16, its
// validation in fp32 as a fresh `trafo eval` does (the in-training figures equal the fresh eval's),
// and --precision bf16 decodes in bf16 where it is asked for.
TEST(PrecisionDecoding, AutoBf16TrainsAndAskedBf16ReachesEvalAndTranslate) {
  const auto toy = make_temp_dir("precision-toy");
  ASSERT_EQ(run_trafo("toy-corpus --out " + quoted(toy) + " --train 300 --dev 10 --test 10").exit_code, 0);
  const auto run = make_temp_dir("precision-run") / "run";
  std::optional<PosedCpu> posed(std::in_place, "avx2 avx512_bf16", "4", "1.5");
  const auto trained = run_trafo("train --data-dir " + quoted(toy) + " --src-lang en --tgt-lang de --run-dir " +
                                 quoted(run) + " --vocab-size 400 --d-model 32 --heads 2 --encoder-layers 1"
                                 " --decoder-layers 1 --d-ff 64 --threads 1 --max-steps 20 --valid-every 10"
                                 " --valid-samples 10 --lr 1e-3 --warmup-steps 1");
  ASSERT_EQ(trained.exit_code, 0) << trained.errors;
  const auto start = read_jsonl(run / "metrics.jsonl").front();
  EXPECT_EQ(start["precision"], "bf16");
  EXPECT_EQ(start["validation_precision"], "fp32") << start;
  EXPECT_EQ(expect_validations_equal_fresh_evals(run, toy).size(), 2u);

  const auto checkpoint = quoted(run / "checkpoint-last.pt");
  const auto bf16 = run_trafo("eval --checkpoint " + checkpoint + " --src " + quoted(toy / "test.en") + " --ref " +
                              quoted(toy / "test.de") + " --threads 1 --json --precision bf16");
  posed.reset();
  ASSERT_EQ(bf16.exit_code, 0) << bf16.errors;
  EXPECT_NE(bf16.errors.find("bf16: asked for"), std::string::npos) << bf16.errors;
  const auto fp32 = run_trafo("eval --checkpoint " + checkpoint + " --src " + quoted(toy / "test.en") + " --ref " +
                              quoted(toy / "test.de") + " --threads 1 --json --precision fp32");
  ASSERT_EQ(fp32.exit_code, 0) << fp32.errors;
  EXPECT_NE(fp32.errors.find("fp32: asked for"), std::string::npos) << fp32.errors;
  // The same model in two precisions: losses within bf16's rounding, not equal bit for bit.
  const double loss16 = nlohmann::json::parse(bf16.output)["loss"], loss32 = nlohmann::json::parse(fp32.output)["loss"];
  EXPECT_NEAR(loss16, loss32, 0.02 * loss32);
  const auto translated = run_command("echo 'the dog sees the cat' | '" + std::string(TRAFO_BINARY) +
                                      "' translate --checkpoint " + checkpoint + " --precision bf16 --threads 1");
  EXPECT_EQ(translated.exit_code, 0) << translated.errors;
  EXPECT_EQ(lines_of(translated.output).size(), 1u) << translated.output;
}

// Fast bf16 matmuls (posed; a Zen 5 is such a CPU: matmuls 4x): auto trains in bf16 and decodes in
// fp32, in validation, eval and translate alike, untimed, and the in-training figures still equal a
// fresh eval's.
TEST(PrecisionDecoding, AutoDecodesInFp32WhereBf16DecodingIsSlower) {
  const auto toy = make_temp_dir("precision-slow-toy");
  ASSERT_EQ(run_trafo("toy-corpus --out " + quoted(toy) + " --train 300 --dev 10 --test 10").exit_code, 0);
  const auto run = make_temp_dir("precision-slow-run") / "run";
  const PosedCpu posed("avx2 avx512_bf16", "4", "0.6");
  const auto trained = run_trafo("train --data-dir " + quoted(toy) + " --src-lang en --tgt-lang de --run-dir " +
                                 quoted(run) + " --vocab-size 400 --d-model 32 --heads 2 --encoder-layers 1"
                                 " --decoder-layers 1 --d-ff 64 --threads 1 --max-steps 20 --valid-every 10"
                                 " --valid-samples 10 --lr 1e-3 --warmup-steps 1");
  ASSERT_EQ(trained.exit_code, 0) << trained.errors;
  const auto start = read_jsonl(run / "metrics.jsonl").front();
  EXPECT_EQ(start["precision"], "bf16") << start;
  EXPECT_EQ(start["validation_precision"], "fp32") << start;
  EXPECT_NE(start["validation_precision_reason"].get<std::string>().find("never depends on what shares its batch"),
            std::string::npos)
      << start;
  EXPECT_EQ(expect_validations_equal_fresh_evals(run, toy).size(), 2u);
  const auto translated = run_command("echo 'the dog sees the cat' | '" + std::string(TRAFO_BINARY) +
                                      "' translate --checkpoint " + quoted(run / "checkpoint-last.pt") + " --threads 1");
  EXPECT_EQ(translated.exit_code, 0) << translated.errors;
  EXPECT_NE(translated.errors.find("fp32: --precision auto"), std::string::npos) << translated.errors;
}

// The decoding probe on a real model: a positive ratio, and the model's weights, its training mode
// and the random generator as they were (validation times it in the middle of a run).
TEST(PrecisionDecoding, TheProbeTimesTheModelAndLeavesEverythingAsItWas) {
  auto config = tiny_model_config(64);
  config.dropout = 0.1;
  config.max_positions = 12;  // fewer than the probe's steps and source pieces
  torch::manual_seed(3);
  model::Transformer model(config);
  model->train();
  const auto before = model->parameters().front().clone();
  torch::manual_seed(5);
  const auto expected_draw = torch::randn({4});
  torch::manual_seed(5);
  const double speedup = decode::bf16_decoding_speedup(model);
  EXPECT_GT(speedup, 0.0);
  EXPECT_TRUE(model->is_training());
  EXPECT_TRUE(torch::equal(model->parameters().front(), before));
  EXPECT_TRUE(torch::equal(torch::randn({4}), expected_draw));
}

}  // namespace
}  // namespace trafo::testing
