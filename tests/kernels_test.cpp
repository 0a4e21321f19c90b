// The CPU kernel variants (ops/eligibility.h): each forced in turn, in one process (ops::ForcedIsa)
// and through the binary (TRAFO_CPU_KERNELS). Each test asserts that the variant it asked for ran,
// as far as the CPU has it (a CPU without AVX-512 runs the AVX2 variant in its place, and the test
// compares AVX2 with AVX2), and that the variants agree: bitwise where they sum in the same order,
// within a stated bound where they do not.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <ATen/autocast_mode.h>

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "run_support.h"
#include "test_support.h"
#include "trafo/model/attention.h"
#include "trafo/model/dropout.h"
#include "trafo/model/linear.h"
#include "trafo/ops/eligibility.h"
#include "trafo/ops/fused_loss.h"
#include "trafo/ops/packed_gemm.h"
#include "trafo/ops/step_attention.h"

namespace trafo::testing {
namespace {

using ops::Isa;

Isa expected_isa(Isa asked) {
  return static_cast<int>(asked) < static_cast<int>(ops::cpu_isa_available()) ? asked : ops::cpu_isa_available();
}

// What the CPU says, asked without the ops layer.
Isa isa_from_cpu() {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("fma")) {
    return Isa::avx512;
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::avx2;
#endif
  return Isa::none;
}

TEST(CpuKernels, TheBestTheCpuHasUnlessAskedForLess) {
  EXPECT_EQ(ops::cpu_isa_available(), isa_from_cpu());
  for (const Isa isa : {Isa::none, Isa::avx2, Isa::avx512}) {
    const ops::ForcedIsa forced(isa);
    EXPECT_EQ(ops::cpu_isa(), expected_isa(isa)) << ops::isa_name(isa);
    if (ops::cpu_isa() != Isa::avx512) {
      EXPECT_FALSE(ops::cpu_has_avx512_bf16());
    }
  }
}

// x [rows, in] · Wᵀ + b through the packed kernel of variant `isa`, and the runs it noted.
std::pair<torch::Tensor, int64_t> packed_product(Isa isa, const torch::Tensor& x, const torch::Tensor& weight,
                                                 const torch::Tensor& bias) {
  const ops::ForcedIsa forced(isa);
  ops::PackedPanels packed;
  const int64_t before = ops::runs(ops::Kernel::packed_gemm, expected_isa(isa));
  auto y = ops::linear(x, weight, bias, &packed);
  return {y, ops::runs(ops::Kernel::packed_gemm, expected_isa(isa)) - before};
}

// Every tile height of both variants (1-12 rows and their blocks), widths that are no multiple of
// 16 or 32, with and without a bias: AVX-512 gives AVX2's bits up to kMaxPackedRows (128) rows,
// across both kernels' row blocks (64 and 96); past them, where AVX2 hands over to at::linear, the
// AVX-512 kernel agrees with at::linear.
TEST(CpuKernels, PackedGemmVariantsGiveTheSameBits) {
  torch::manual_seed(31);
  torch::NoGradGuard no_grad;
  for (const auto& [in, out] : std::vector<std::pair<int64_t, int64_t>>{{8, 16}, {24, 40}, {64, 8}, {32, 100}}) {
    const auto weight = torch::randn({out, in});
    for (const bool with_bias : {true, false}) {
      const auto bias = with_bias ? torch::randn({out}) : torch::Tensor();
      for (const int64_t rows : {1, 2, 3, 5, 6, 7, 11, 12, 13, 25, 64, 65, 96, 97, 128}) {
        const auto x = torch::randn({rows, in});
        const auto [avx2, avx2_runs] = packed_product(Isa::avx2, x, weight, bias);
        const auto [avx512, avx512_runs] = packed_product(Isa::avx512, x, weight, bias);
        EXPECT_EQ(avx2_runs, ops::cpu_isa_available() == Isa::none ? 0 : 1);
        EXPECT_EQ(avx512_runs, ops::cpu_isa_available() == Isa::none ? 0 : 1);
        EXPECT_TRUE(torch::equal(avx512, avx2)) << in << "x" << out << ", " << rows << " rows";
        EXPECT_TRUE(torch::allclose(avx512, torch::nn::functional::linear(x, weight, bias), 1e-5, 1e-5));
      }
      for (const int64_t rows : {129, 200, 301}) {
        const auto x = torch::randn({rows, in});
        const auto [avx512, runs] = packed_product(Isa::avx512, x, weight, bias);
        EXPECT_EQ(runs, ops::cpu_isa_available() == Isa::avx512 ? 1 : 0) << rows << " rows";
        EXPECT_TRUE(torch::allclose(avx512, torch::nn::functional::linear(x, weight, bias), 1e-5, 1e-5))
            << in << "x" << out << ", " << rows << " rows";
      }
    }
  }
}

// The bf16 variant under bf16 autocast (where the CPU has AVX512_BF16): y in bf16, as autocast's
// at::linear gives it, equal to the fp32 product of the bf16-rounded x and W plus the fp32 bias,
// rounded once to bf16 (within an ulp of bf16: the order of the sums differs), for an odd k too.
TEST(CpuKernels, PackedBf16GemmIsTheProductOfTheRoundedOperands) {
  torch::manual_seed(34);
  torch::NoGradGuard no_grad;
  const bool native = ops::cpu_has_avx512_bf16();
  for (const auto& [in, out] : std::vector<std::pair<int64_t, int64_t>>{{24, 40}, {33, 100}, {64, 8}}) {
    const auto weight = torch::randn({out, in});
    const auto bias = torch::randn({out});
    for (const int64_t rows : {1, 5, 12, 13, 64, 97, 301}) {
      const auto x = torch::randn({rows, in});
      const auto exact = torch::nn::functional::linear(x.to(torch::kBFloat16).to(torch::kFloat),
                                                       weight.to(torch::kBFloat16).to(torch::kFloat), bias);
      ops::PackedPanels packed;
      const int64_t before = ops::runs(ops::Kernel::packed_bf16_gemm);
      torch::Tensor y;
      {
        at::autocast::set_autocast_enabled(at::kCPU, true);
        at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
        y = ops::linear(x, weight, bias, &packed);
        at::autocast::set_autocast_enabled(at::kCPU, false);
        at::autocast::clear_cache();
      }
      EXPECT_EQ(ops::runs(ops::Kernel::packed_bf16_gemm) - before, native ? 1 : 0);
      ASSERT_EQ(y.scalar_type(), torch::kBFloat16);
      EXPECT_TRUE(torch::allclose(y.to(torch::kFloat), exact, 8e-3, 1e-2))
          << in << "x" << out << ", " << rows << " rows: " << (y.to(torch::kFloat) - exact).abs().max().item<float>();
    }
  }
}

// A packed copy made for one variant is remade for another: the panels' width follows the variant.
TEST(CpuKernels, PackedPanelsFollowTheVariantInForce) {
  torch::NoGradGuard no_grad;
  const auto weight = torch::randn({40, 16});
  const auto x = torch::randn({3, 16});
  ops::PackedPanels packed;
  for (const Isa isa : {Isa::avx512, Isa::avx2, Isa::avx512}) {
    const ops::ForcedIsa forced(isa);
    const auto y = ops::linear(x, weight, torch::Tensor(), &packed);
    EXPECT_TRUE(torch::allclose(y, torch::matmul(x, weight.t()), 1e-5, 1e-5));
    if (ops::cpu_isa() != Isa::none) {
      EXPECT_EQ(packed.panels.size(2), ops::panel_width(ops::cpu_isa()));
    }
  }
}

// One decoding step's attention (queries over a KV cache with padding) in each variant: the
// variants sum the dot products in lanes of 8 and 16, so they agree within float rounding; a d_k
// that fills no zmm register (24) runs the AVX2 variant under AVX-512.
TEST(CpuKernels, StepAttentionVariantsAgree) {
  torch::manual_seed(32);
  torch::NoGradGuard no_grad;
  for (const int64_t d_k : {16, 24, 32, 64}) {
    const auto q = torch::randn({5, 4, 1, d_k});
    const auto k = torch::randn({5, 4, 37, d_k});
    const auto v = torch::randn({5, 4, 37, d_k});
    auto mask = torch::ones({5, 1, 1, 37}, torch::kBool);
    mask.narrow(3, 20, 17)[1].fill_(false);
    mask[3].fill_(false);  // every position masked: zeros
    const auto reference = ops::plain_attention(q, k, v, mask, 0.0, false).transpose(1, 2).reshape({5, 1, 4 * d_k});
    std::vector<torch::Tensor> results;
    for (const Isa isa : {Isa::avx2, Isa::avx512}) {
      const ops::ForcedIsa forced(isa);
      ASSERT_EQ(ops::step_attention_applies(q, k, v, mask), ops::cpu_isa() != Isa::none);
      if (ops::cpu_isa() == Isa::none) continue;
      const Isa runs_as = ops::cpu_isa() == Isa::avx512 && d_k % 16 == 0 ? Isa::avx512 : Isa::avx2;
      const int64_t before = ops::runs(ops::Kernel::step_attention, runs_as);
      results.push_back(ops::step_attention(q, k, v, mask));
      EXPECT_EQ(ops::runs(ops::Kernel::step_attention, runs_as) - before, 1) << d_k << " " << ops::isa_name(isa);
      EXPECT_TRUE(torch::allclose(results.back().select(0, 3), torch::zeros({1, 4 * d_k})));
      EXPECT_TRUE(torch::allclose(results.back().index({torch::tensor({0, 1, 2, 4})}),
                                  reference.index({torch::tensor({0, 1, 2, 4})}), 1e-5, 1e-5))
          << d_k;
    }
    if (results.size() == 2) {
      EXPECT_LT((results[0] - results[1]).abs().max().item<float>(), 2e-6f) << d_k;
    }
  }
}

// Rows that joined a running batch late (continuous batching) read their keys from their start:
// each row gets the bits it gets alone with only those keys, on either variant; ops::attention's
// other paths mask the positions before the start instead.
TEST(CpuKernels, StepAttentionRowsStartWhereTheirKeysBegin) {
  torch::manual_seed(33);
  torch::NoGradGuard no_grad;
  const std::vector<int64_t> starts = {0, 5, 36, 17, 20};
  for (const int64_t d_k : {24, 64}) {
    const auto q = torch::randn({5, 4, 1, d_k});
    const auto k = torch::randn({5, 4, 37, d_k});
    const auto v = torch::randn({5, 4, 37, d_k});
    for (const Isa isa : {Isa::avx2, Isa::avx512}) {
      const ops::ForcedIsa forced(isa);
      if (ops::cpu_isa() == Isa::none) continue;
      const auto together = ops::step_attention(q, k, v, torch::Tensor(), &starts);  // [5,1,4·d_k]
      for (int64_t b = 0; b < 5; ++b) {
        const int64_t start = starts[static_cast<size_t>(b)];
        const auto alone = ops::step_attention(q.narrow(0, b, 1), k.narrow(0, b, 1).narrow(2, start, 37 - start),
                                               v.narrow(0, b, 1).narrow(2, start, 37 - start), torch::Tensor());
        EXPECT_TRUE(torch::equal(together.narrow(0, b, 1), alone)) << d_k << " row " << b << " " << ops::isa_name(isa);
      }
      ops::AttentionCall call;
      call.cached_step = true;
      call.fused = false;
      call.starts = &starts;
      torch::Tensor weights;
      call.weights = &weights;  // the explicit maths, with the starts as a mask
      const auto masked = ops::attention(q, k, v, torch::Tensor(), call);
      EXPECT_TRUE(torch::allclose(masked, together, 1e-5, 1e-5)) << d_k;
      EXPECT_EQ(weights.narrow(3, 0, 17).select(0, 3).abs().sum().item<float>(), 0.0f);  // row 3 starts at 17
    }
  }
}

// One sequence at inference through ops::attention (a server's joining sentences, packed end to
// end, each attending only to itself): each query a row of the one-query kernel, equal to the
// explicit maths and to SDPA, with a block-diagonal mask, a key-padding mask and none; past
// kMaxQueryRowsKeys keys, or in a batch of two, SDPA as before.
TEST(CpuKernels, QueryRowsAttentionIsTheAttentionOfEachQuery) {
  torch::manual_seed(35);
  c10::InferenceMode inference;
  const auto sentence = torch::tensor({0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2});  // 17 positions
  const auto block_diagonal = sentence.unsqueeze(1).eq(sentence.unsqueeze(0)).view({1, 1, 17, 17});
  auto padding = torch::ones({1, 1, 1, 17}, torch::kBool);
  padding.narrow(3, 12, 5).fill_(false);
  for (const int64_t d_k : {24, 64}) {
    const auto q = torch::randn({1, 4, 17, d_k});
    const auto k = torch::randn({1, 4, 17, d_k});
    const auto v = torch::randn({1, 4, 17, d_k});
    for (const auto& mask : {block_diagonal, padding, torch::Tensor()}) {
      const auto explicit_maths = ops::plain_attention(q, k, v, mask, 0.0, false).transpose(1, 2).reshape({1, 17, 4 * d_k});
      const auto sdpa = at::scaled_dot_product_attention(q, k, v, mask.defined() ? std::optional<at::Tensor>(mask) : std::nullopt)
                            .transpose(1, 2).reshape({1, 17, 4 * d_k});
      ASSERT_EQ(ops::query_rows_attention_applies(q, k, v, mask), ops::cpu_isa() != Isa::none);
      const int64_t before = ops::runs(ops::Kernel::step_attention);
      const auto rows = ops::attention(q, k, v, mask, ops::AttentionCall{});
      EXPECT_EQ(ops::runs(ops::Kernel::step_attention) - before, ops::cpu_isa() != Isa::none ? 1 : 0);
      EXPECT_TRUE(torch::allclose(rows, explicit_maths, 1e-5, 1e-5)) << d_k;
      EXPECT_TRUE(torch::allclose(rows, sdpa, 1e-5, 1e-5)) << d_k;
    }
  }
  const auto long_q = torch::randn({1, 4, 2, 32});
  const auto long_k = torch::randn({1, 4, ops::kMaxQueryRowsKeys + 1, 32});
  EXPECT_FALSE(ops::query_rows_attention_applies(long_q, long_k, long_k, torch::Tensor()));
  const auto batch_q = torch::randn({2, 4, 3, 32});
  const auto batch_k = torch::randn({2, 4, 3, 32});
  EXPECT_FALSE(ops::query_rows_attention_applies(batch_q, batch_k, batch_k, torch::Tensor()));
}

// Under bf16 autocast the kernel takes bf16 q, k and v (a decoding step's projections and cache)
// and gives the bf16 context: the fp32 attention of the same bf16 values, rounded once.
TEST(CpuKernels, StepAttentionTakesBf16UnderAutocast) {
  torch::manual_seed(36);
  torch::NoGradGuard no_grad;
  const auto q = torch::randn({3, 2, 1, 32}).to(torch::kBFloat16);
  const auto k = torch::randn({3, 2, 21, 32}).to(torch::kBFloat16);
  const auto v = torch::randn({3, 2, 21, 32}).to(torch::kBFloat16);
  const auto exact = ops::plain_attention(q.to(torch::kFloat), k.to(torch::kFloat), v.to(torch::kFloat),
                                          torch::Tensor(), 0.0, false)
                         .transpose(1, 2)
                         .reshape({3, 1, 64});
  EXPECT_FALSE(ops::step_attention_applies(q, k, v, torch::Tensor()));  // bf16 outside autocast: SDPA's
  for (const Isa isa : {Isa::avx2, Isa::avx512}) {
    const ops::ForcedIsa forced(isa);
    at::autocast::set_autocast_enabled(at::kCPU, true);
    at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
    const bool applies = ops::step_attention_applies(q, k, v, torch::Tensor());
    const bool fp32_applies = ops::step_attention_applies(q.to(torch::kFloat), k.to(torch::kFloat),
                                                          v.to(torch::kFloat), torch::Tensor());
    torch::Tensor context;
    const int64_t before = ops::runs(ops::Kernel::step_attention, ops::cpu_isa());
    if (applies) context = ops::step_attention(q, k, v, torch::Tensor());
    at::autocast::set_autocast_enabled(at::kCPU, false);
    EXPECT_FALSE(fp32_applies);  // under autocast, fp32 inputs go to SDPA (which runs them in bf16)
    ASSERT_EQ(applies, ops::cpu_isa() != Isa::none);
    if (!applies) continue;
    EXPECT_EQ(ops::runs(ops::Kernel::step_attention, ops::cpu_isa()) - before, 1);
    ASSERT_EQ(context.scalar_type(), torch::kBFloat16);
    EXPECT_TRUE(torch::allclose(context.to(torch::kFloat), exact.to(torch::kBFloat16).to(torch::kFloat), 1e-2, 1e-2))
        << (context.to(torch::kFloat) - exact).abs().max().item<float>();
  }
}

// The hashed mask is integer arithmetic and one product an element: every variant gives the same
// bits, forward and backward, in fp32 and bf16, at a length with a ragged vector tail.
TEST(CpuKernels, HashedDropoutVariantsGiveTheSameBits) {
  const auto x = torch::rand({300, 257}) + 0.5;
  for (const auto dtype : {torch::kFloat, torch::kBFloat16}) {
    std::vector<std::pair<torch::Tensor, torch::Tensor>> results;
    for (const Isa isa : {Isa::none, Isa::avx2, Isa::avx512}) {
      const ops::ForcedIsa forced(isa);
      const int64_t before = ops::runs(ops::Kernel::hashed_dropout, ops::cpu_isa());
      const auto input = x.to(dtype).clone().requires_grad_();
      torch::manual_seed(33);
      const auto y = model::dropout(input, 0.3, true);
      y.backward(torch::full_like(y, 2.0));
      EXPECT_EQ(ops::runs(ops::Kernel::hashed_dropout, ops::cpu_isa()) - before, 1) << ops::isa_name(isa);
      results.emplace_back(y.detach(), input.grad());
    }
    for (size_t i = 1; i < results.size(); ++i) {
      EXPECT_TRUE(torch::equal(results[i].first, results[0].first)) << i;
      EXPECT_TRUE(torch::equal(results[i].second, results[0].second)) << i;
    }
  }
}

// The fused loss's rows (softmax, sums and gradient in one kernel) in each variant against
// LibTorch's ops (none): a vocabulary with a ragged vector tail, padding rows, fp32 and bf16 autocast.
TEST(CpuKernels, FusedLossVariantsAgreeWithLibTorchsOps) {
  torch::manual_seed(35);
  const int64_t rows = 37, d = 24, vocab = 1003, pad = 0;
  const auto hidden = torch::randn({rows, d});
  const auto weight = torch::randn({vocab, d}) * 0.3;
  const auto bias = torch::randn({vocab});
  auto target = torch::randint(1, vocab, {rows}, torch::kLong);
  target.narrow(0, 30, 7).fill_(pad);
  for (const bool bf16 : {false, true}) {
    struct Result {
      torch::Tensor smoothed, nll, grad_hidden, grad_weight, grad_bias;
    };
    std::vector<Result> results;
    for (const Isa isa : {Isa::none, Isa::avx2, Isa::avx512}) {
      const ops::ForcedIsa forced(isa);
      const auto h = hidden.clone().requires_grad_();
      const auto w = weight.clone().requires_grad_();
      const auto b = bias.clone().requires_grad_();
      at::autocast::set_autocast_enabled(at::kCPU, bf16);
      at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
      const int64_t before = ops::runs(ops::Kernel::fused_loss, ops::cpu_isa());
      const auto sums = ops::fused_loss(h, w, b, target, 0.1, pad, /*chunk_rows=*/16);
      at::autocast::set_autocast_enabled(at::kCPU, false);
      at::autocast::clear_cache();
      EXPECT_EQ(ops::runs(ops::Kernel::fused_loss, ops::cpu_isa()) - before, 1);
      sums.smoothed.backward();
      results.push_back({sums.smoothed.detach(), sums.nll, h.grad(), w.grad(), b.grad()});
    }
    for (size_t i = 1; i < results.size(); ++i) {
      const auto& a = results[0];
      const auto& r = results[i];
      EXPECT_NEAR(r.smoothed.item<double>(), a.smoothed.item<double>(), 1e-5 * a.smoothed.item<double>()) << i;
      EXPECT_NEAR(r.nll.item<double>(), a.nll.item<double>(), 1e-5 * a.nll.item<double>()) << i;
      EXPECT_TRUE(torch::allclose(r.grad_hidden, a.grad_hidden, 1e-4, 1e-5)) << i << " bf16 " << bf16;
      EXPECT_TRUE(torch::allclose(r.grad_weight, a.grad_weight, 1e-4, 1e-5)) << i << " bf16 " << bf16;
      EXPECT_TRUE(torch::allclose(r.grad_bias, a.grad_bias, 1e-4, 1e-6)) << i << " bf16 " << bf16;
    }
  }
}

// Through the binary: TRAFO_CPU_KERNELS picks the variant, eval's JSON and the log name it, and a
// trained model translates the same text in every variant (the fixture's reference output, written
// by an earlier trafo in fp32); a value it cannot take is one line and exit 2.
TEST(CpuKernels, EnvironmentForcesEachVariantThroughTheBinary) {
  const std::filesystem::path fixtures = std::filesystem::path(TRAFO_SOURCE_DIR) / "tests/fixtures/checkpoints";
  const auto dir = make_temp_dir("kernels");
  const std::string expected = read_text(fixtures / "toy-beam1.txt");
  for (const Isa isa : {Isa::none, Isa::avx2, Isa::avx512}) {
    const std::string name = ops::isa_name(isa);
    const auto hypotheses = dir / (name + ".txt");
    const auto result =
        run_command("TRAFO_CPU_KERNELS=" + name + " '" + TRAFO_BINARY + "' eval --checkpoint " +
                    quoted(fixtures / "toy-format2.pt") + " --src " + quoted(fixtures / "src.txt") + " --ref " +
                    quoted(fixtures / "src.txt") + " --precision fp32 --threads 1 --json --output " + quoted(hypotheses));
    ASSERT_EQ(result.exit_code, 0) << result.errors;
    const auto json = nlohmann::json::parse(result.output);
    EXPECT_EQ(json["cpu_kernels"], ops::isa_name(expected_isa(isa)));
    EXPECT_EQ(json["precision"], "fp32");
    EXPECT_NE(result.errors.find(std::string("CPU kernels ") + ops::isa_name(expected_isa(isa))), std::string::npos)
        << result.errors;
    EXPECT_EQ(read_text(hypotheses), expected) << name;
  }
  const auto bad = run_command("TRAFO_CPU_KERNELS=avx1024 '" + std::string(TRAFO_BINARY) + "' eval --checkpoint " +
                               quoted(fixtures / "toy-format2.pt") + " --src " + quoted(fixtures / "src.txt") +
                               " --ref " + quoted(fixtures / "src.txt"));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.errors, "trafo: error: TRAFO_CPU_KERNELS=avx1024: expected none, avx2 or avx512\n");
}

}  // namespace
}  // namespace trafo::testing
