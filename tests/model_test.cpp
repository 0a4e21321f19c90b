// Transformer invariants: causality, padding, the KV cache, gradients, save/load, overfitting.
#include <atomic>
#include <cmath>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "model_support.h"
#include "test_support.h"
#include "trafo/errors.h"
#include "trafo/model/dropout.h"
#include "trafo/model/loss.h"
#include "trafo/model/positions.h"
#include "trafo/model/transformer.h"
#include "trafo/ops/eligibility.h"
#include "trafo/train/optimizer.h"
#include "trafo/util/autocast.h"

namespace trafo::model {
namespace {

ModelConfig tiny_config(const std::string& norm = "pre") {
  ModelConfig c = testing::tiny_model_config(20);
  c.norm = norm;
  return c;
}

class ModelTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ModelTest, DecoderNeverLooksAtFuturePositions) {
  torch::manual_seed(1);
  Transformer model(tiny_config(GetParam()));
  model->eval();
  auto src = torch::tensor({{4, 5, 6, 7, 3}}, torch::kLong);
  auto tgt = torch::tensor({{2, 8, 9, 10, 11, 12}}, torch::kLong);
  auto changed = tgt.clone();
  changed.narrow(1, 3, 3).fill_(15);  // positions 3.. differ
  const auto a = model(src, tgt), b = model(src, changed);
  EXPECT_TRUE(torch::allclose(a.narrow(1, 0, 3), b.narrow(1, 0, 3), 1e-6, 1e-6));
  EXPECT_FALSE(torch::allclose(a.narrow(1, 3, 3), b.narrow(1, 3, 3), 1e-3, 1e-3));
}

TEST_P(ModelTest, SourcePaddingChangesNothingElse) {
  torch::manual_seed(2);
  Transformer model(tiny_config(GetParam()));
  model->eval();
  auto src = torch::tensor({{4, 5, 6, 3}}, torch::kLong);
  auto padded = torch::tensor({{4, 5, 6, 3, 0, 0, 0}}, torch::kLong);
  auto tgt = torch::tensor({{2, 8, 9}}, torch::kLong);
  EXPECT_TRUE(torch::allclose(model(src, tgt), model(padded, tgt), 1e-5, 1e-5));
  // And inside a batch beside a longer sentence.
  auto batch = torch::tensor({{4, 5, 6, 3, 0, 0, 0}, {7, 8, 9, 10, 11, 12, 3}}, torch::kLong);
  auto tgt_batch = torch::tensor({{2, 8, 9}, {2, 4, 4}}, torch::kLong);
  EXPECT_TRUE(torch::allclose(model(src, tgt), model(batch, tgt_batch).narrow(0, 0, 1), 1e-5, 1e-5));
}

TEST_P(ModelTest, StepwiseDecodingWithCacheEqualsFullPass) {
  torch::manual_seed(3);
  Transformer model(tiny_config(GetParam()));
  model->eval();
  torch::NoGradGuard no_grad;
  auto src = torch::tensor({{4, 5, 6, 7, 3}, {8, 9, 3, 0, 0}}, torch::kLong);
  auto tgt = torch::tensor({{2, 8, 9, 10, 11}, {2, 12, 13, 14, 15}}, torch::kLong);
  const auto full = model(src, tgt);  // [2,5,V]
  const auto memory = model->encode(src);
  const auto src_mask = model->source_mask(src);
  auto cache = model->make_cache();
  for (int64_t t = 0; t < tgt.size(1); ++t) {
    auto logits = model->output_logits(model->decode(tgt.narrow(1, t, 1), memory, src_mask, &cache));
    EXPECT_TRUE(torch::allclose(logits, full.narrow(1, t, 1), 1e-5, 1e-5)) << "step " << t;
  }
  EXPECT_EQ(cache.length, 5);
  EXPECT_EQ(cache.self_attention[0].keys.size(2), 5);
  EXPECT_EQ(cache.cross_attention[0].keys.size(2), 5);  // source length, computed once
}

TEST_P(ModelTest, FusedAndPlainAttentionAgree) {
  torch::manual_seed(4);
  Transformer model(tiny_config(GetParam()));
  model->eval();
  auto src = torch::tensor({{4, 5, 6, 7, 3}, {8, 9, 3, 0, 0}}, torch::kLong);
  auto tgt = torch::tensor({{2, 8, 9, 10}, {2, 12, 13, 14}}, torch::kLong);
  const auto fused = model(src, tgt);
  model->set_fused_attention(false);
  EXPECT_TRUE(torch::allclose(fused, model(src, tgt), 1e-5, 1e-5));
}

// Continuous batching encodes joining sentences end to end (decode/continuous.h): each one's memory
// must be what the padded encoding gives it, and its padding zeros.
TEST_P(ModelTest, PackedEncodingIsThePaddedOneWithoutThePadding) {
  torch::manual_seed(6);
  Transformer model(tiny_config(GetParam()));
  model->eval();
  auto src = torch::tensor({{4, 5, 6, 7, 3}, {8, 9, 3, 0, 0}, {10, 3, 0, 0, 0}}, torch::kLong);
  const auto padded = model->encode(src);
  const auto packed = model->encode_packed(src);
  ASSERT_EQ(packed.sizes(), padded.sizes());
  const auto real = src.ne(0).unsqueeze(2).expand_as(padded);
  EXPECT_TRUE(torch::allclose(packed.masked_select(real), padded.masked_select(real), 1e-5, 1e-5));
  EXPECT_EQ(packed.masked_select(real.logical_not()).abs().sum().item<float>(), 0.0f);
  // A sentence alone is its own packed run.
  EXPECT_TRUE(torch::allclose(model->encode_packed(src.narrow(0, 0, 1)), padded.narrow(0, 0, 1), 1e-5, 1e-5));

  // Joining a decoding cache, the sentences' cross-attention keys and values are those of the padded
  // memory at their pieces, computed for the pieces only: zeros at the pads.
  c10::InferenceMode inference;
  auto cache = model->make_cache();
  model->join(cache, src, {});
  const auto real_heads = src.ne(0).view({3, 1, 5, 1});  // [B,1,S,1]
  for (size_t i = 0; i < cache.cross_attention.size(); ++i) {
    const auto [keys, values] = model->decoder_layers[i]->as<DecoderLayer>()->cross_attention->memory_keys_values(padded);
    const auto& cached = cache.cross_attention[i];
    ASSERT_EQ(cached.keys.sizes(), keys.sizes());
    for (const auto& [got, want] : {std::pair{cached.keys, keys}, std::pair{cached.values, values}}) {
      const auto real_places = real_heads.expand_as(want);
      EXPECT_TRUE(torch::allclose(got.masked_select(real_places), want.masked_select(real_places), 1e-5, 1e-5)) << i;
      EXPECT_EQ(got.masked_select(real_places.logical_not()).abs().sum().item<float>(), 0.0f) << i;
    }
  }
}

TEST_P(ModelTest, EveryParameterGetsAGradient) {
  torch::manual_seed(5);
  auto config = tiny_config(GetParam());
  for (const auto& [tie, bias] : std::vector<std::pair<bool, bool>>{{true, false}, {false, false}, {true, true}}) {
    config.tie_embeddings = tie;
    config.output_bias = bias;
    Transformer model(config);
    auto src = torch::tensor({{4, 5, 6, 7, 3}}, torch::kLong);
    auto tgt = torch::tensor({{2, 8, 9, 10}}, torch::kLong);
    auto [nll, count] = token_nll(model(src, tgt), torch::tensor({{8, 9, 10, 3}}, torch::kLong), 0);
    (nll / count).backward();
    for (const auto& p : model->named_parameters()) {
      ASSERT_TRUE(p.value().grad().defined()) << p.key();
      EXPECT_GT(p.value().grad().abs().sum().item<double>(), 0.0) << p.key();
    }
  }
}

TEST_P(ModelTest, TinyModelOverfitsSixteenPairs) {
  torch::manual_seed(6);
  auto config = tiny_config(GetParam());
  config.d_model = 32;
  config.d_ff = 64;
  Transformer model(config);
  // 16 pairs of a reversal task: the target is the source backwards, so attention is required.
  auto src = torch::randint(4, 20, {16, 6}, torch::kLong);
  auto reversed = src.flip(1);
  auto eos = torch::full({16, 1}, 3, torch::kLong), bos = torch::full({16, 1}, 2, torch::kLong);
  auto tgt_in = torch::cat({bos, reversed}, 1), tgt_out = torch::cat({reversed, eos}, 1);
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(3e-3));
  double loss_value = 1e9;
  for (int step = 0; step < 400 && loss_value >= 0.05; ++step) {
    optimizer.zero_grad();
    auto [nll, count] = token_nll(model(src, tgt_in), tgt_out, 0);
    auto loss = nll / count;
    loss.backward();
    optimizer.step();
    loss_value = loss.item<double>();
  }
  EXPECT_LT(loss_value, 0.05);
}

TEST_P(ModelTest, SaveThenLoadRoundTripsWeightsExactly) {
  torch::manual_seed(7);
  Transformer model(tiny_config(GetParam()));
  const auto path = trafo::testing::make_temp_dir("model") / "weights.pt";
  torch::save(model, path.string());
  torch::manual_seed(8);
  Transformer loaded(tiny_config(GetParam()));
  torch::load(loaded, path.string());
  auto a = model->named_parameters(), b = loaded->named_parameters();
  ASSERT_EQ(a.size(), b.size());
  for (const auto& p : a) EXPECT_TRUE(torch::equal(p.value(), b[p.key()])) << p.key();
}

INSTANTIATE_TEST_SUITE_P(Norms, ModelTest, ::testing::Values("pre", "post"));

TEST(Dropout, KeepsOneMinusPOfTheElementsScaledByItsInverse) {
  const double p = 0.3;
  const auto x = torch::rand({1000, 1000}) + 0.5;  // no zeros of its own
  torch::manual_seed(11);
  const auto y = model::dropout(x, p, true);
  const auto kept = y.ne(0);
  // 10^6 draws: the kept fraction's standard deviation is 0.00046.
  EXPECT_NEAR(kept.to(torch::kDouble).mean().item<double>(), 1 - p, 0.003);
  EXPECT_TRUE(torch::allclose(y.masked_select(kept), x.masked_select(kept) / (1 - p)));
  // Neighbours are independent: both kept with probability (1 − p)².
  const auto pairs = kept.narrow(1, 0, 999).logical_and(kept.narrow(1, 1, 999));
  EXPECT_NEAR(pairs.to(torch::kDouble).mean().item<double>(), (1 - p) * (1 - p), 0.003);
  // Rows are not copies of each other.
  EXPECT_FALSE(torch::equal(kept[0], kept[1]));
}

TEST(Dropout, SeededRepeatableWhateverTheThreadsAndFreshEachCall) {
  const auto x = torch::ones({300, 700});
  const int64_t runs_before = ops::runs(ops::Kernel::hashed_dropout);
  torch::manual_seed(12);
  const auto first = model::dropout(x, 0.1, true);
  const auto second = model::dropout(x, 0.1, true);
  EXPECT_FALSE(torch::equal(first, second));
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  torch::manual_seed(12);
  const auto again = model::dropout(x, 0.1, true);
  at::set_num_threads(threads);
  EXPECT_TRUE(torch::equal(first, again));
  EXPECT_EQ(ops::runs(ops::Kernel::hashed_dropout) - runs_before, 3);  // the hashed mask, not at::dropout
}

TEST(Dropout, GradientIsTheMaskScaledAndNonContiguousInputsWork) {
  const double p = 0.25;
  auto x = torch::randn({40, 30}, torch::requires_grad());
  const auto y = model::dropout(x.t(), p, true);  // [30,40], not contiguous
  const auto kept = y.ne(0);
  EXPECT_TRUE(torch::allclose(y.masked_select(kept), x.t().masked_select(kept) / (1 - p)));
  (y * 2.0).sum().backward();
  EXPECT_TRUE(torch::allclose(x.grad(), (kept.to(torch::kFloat) * (2.0 / (1 - p))).t()));
}

TEST(Dropout, IdentityInEvaluationOrWithoutP) {
  const auto x = torch::randn({8, 8});
  EXPECT_TRUE(model::dropout(x, 0.5, false).is_same(x));
  EXPECT_TRUE(model::dropout(x, 0.0, true).is_same(x));
  model::Dropout module(0.5);
  module->eval();
  EXPECT_TRUE(module(x).is_same(x));
  module->train();
  EXPECT_GT(module(x).eq(0).sum().item<int64_t>(), 0);
}

// A bare PackedWeight for a scope to open (tests of the product without bias).
class PackedOnly : public torch::nn::Module, public PackedWeightOwner {
 public:
  std::vector<PackedWeight*> packed_weights() override { return {&packed}; }
  PackedWeight packed;
};

bool packed_kernel_available() {
#if defined(__x86_64__)
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

// The ops layer's ISA check, which the step-attention tests rely on, against the CPU's own answer.
TEST(Linear, KernelsSeeTheCpusAvx2AndFma) { EXPECT_EQ(ops::cpu_isa() != ops::Isa::none, packed_kernel_available()); }

// The packed product (no gradient; at most 128 rows unless AVX-512) against at::linear: every
// remainder of the 6-row tiles, a width that is no multiple of 16, no bias, a 3-D non-contiguous
// input, 65 and 128 rows (two of AVX2's 64-row blocks), 129 rows.
TEST(Linear, PackedProductMatchesAtLinear) {
  torch::manual_seed(21);
  torch::NoGradGuard no_grad;
  for (const auto& [in, out] : std::vector<std::pair<int64_t, int64_t>>{{8, 16}, {24, 40}, {64, 8}}) {
    Linear linear(in, out);
    {
      const PackedInference scope(*linear);
      const int64_t runs_before = ops::runs(ops::Kernel::packed_gemm);
      for (const int64_t rows : {1, 2, 3, 4, 5, 6, 7, 12, 13, 64, 65, 128, 129}) {
        const auto x = torch::randn({rows, in});
        const auto expected = torch::nn::functional::linear(x, linear->weight, linear->bias);
        EXPECT_TRUE(torch::allclose(linear(x), expected, 1e-5, 1e-5)) << in << "x" << out << ", " << rows << " rows";
      }
      // the packed path itself ran wherever the CPU has AVX2 and FMA (else at::linear did), for
      // every product of at most 128 rows, and of 129 under AVX-512
      EXPECT_EQ(linear->packed_weight().holds_copy(), packed_kernel_available());
      const int64_t packed = ops::cpu_isa() == ops::Isa::avx512 ? 13 : packed_kernel_available() ? 12 : 0;
      EXPECT_EQ(ops::runs(ops::Kernel::packed_gemm) - runs_before, packed);
    }
    EXPECT_FALSE(linear->packed_weight().holds_copy());  // gone with its scope
    auto owner = std::make_shared<PackedOnly>();
    const PackedInference scope(*owner);
    const auto x = torch::randn({5, 2, in}).transpose(0, 1);  // [2,5,in], not contiguous
    EXPECT_TRUE(torch::allclose(owner->packed.linear(x, linear->weight, torch::Tensor()),
                                torch::matmul(x, linear->weight.t()), 1e-5, 1e-5));
    EXPECT_EQ(owner->packed.holds_copy(), packed_kernel_available());
  }
}

// trafo serve's decoders share one model: threads that open and close scopes over the same weight,
// and pack it at once, each get the product of the weight as it is, and the copy goes with the
// last scope. (The race this guards is narrow: the unlocked code passed this too on 2 vCPUs, as the
// freed panels still held their numbers; a sanitizer build is what would see it.)
TEST(Linear, ThreadsSharingAWeightEachGetItsProduct) {
  torch::manual_seed(23);
  Linear linear(256, 1024);  // packing takes a while: long enough for the threads to meet
  const auto x = torch::randn({7, 256});
  torch::Tensor expected;
  {
    torch::NoGradGuard no_grad;
    expected = torch::nn::functional::linear(x, linear->weight, linear->bias);
  }
  std::atomic<int> wrong{0};
  const auto decode = [&] {
    torch::NoGradGuard no_grad;
    at::set_num_threads(1);
    for (int i = 0; i < 400; ++i) {
      const PackedInference scope(*linear);  // the last to close drops the copy; the next packs again
      if (!torch::allclose(linear(x), expected, 1e-5, 1e-5)) wrong += 1;
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) threads.emplace_back(decode);
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_FALSE(linear->packed_weight().holds_copy());  // every scope closed
}

// The fused Adam updates weights in place without bumping their version counters: a copy packed
// before such a step must never be used after it. Scopes nest; the copy lives as long as the outermost.
TEST(Linear, NoPackedCopyOutlivesItsScopeWhateverUpdatesTheWeights) {
  torch::manual_seed(22);
  Linear linear(16, 32);
  const auto x = torch::randn({3, 16});
  auto expected = [&] { return torch::nn::functional::linear(x, linear->weight, linear->bias); };
  {
    torch::NoGradGuard no_grad;
    const PackedInference outer(*linear);
    {
      const PackedInference inner(*linear);
      EXPECT_TRUE(torch::allclose(linear(x), expected(), 1e-5, 1e-5));
    }
    EXPECT_EQ(linear->packed_weight().holds_copy(), packed_kernel_available());
  }
  EXPECT_FALSE(linear->packed_weight().holds_copy());
  // A real fused Adam step, as the trainer takes it.
  linear(x).sum().backward();  // with gradients: at::linear
  ASSERT_TRUE(linear->weight.grad().defined());
  EXPECT_TRUE(torch::allclose(linear->weight.grad(), x.sum(0).expand({32, 16}), 1e-5, 1e-5));
  const auto version = linear->weight._version();
  auto optimizer = train::make_optimizer("adam", linear->parameters(), 0.1, 0.9, 0.98, 1e-9, 0.0);
  optimizer->step();
  EXPECT_EQ(linear->weight._version(), version) << "the fused step bumps versions now: this test lost its point";
  torch::NoGradGuard no_grad;
  const PackedInference again(*linear);
  EXPECT_TRUE(torch::allclose(linear(x), expected(), 1e-5, 1e-5));
}

TEST_P(ModelTest, PackedAndUnpackedInferenceAgree) {
  for (const bool tied : {true, false}) {
    torch::manual_seed(23);
    auto config = tiny_config(GetParam());
    config.tie_embeddings = tied;
    Transformer model(config);
    model->eval();
    torch::NoGradGuard no_grad;
    auto src = torch::tensor({{4, 5, 6, 7, 3}, {8, 9, 3, 0, 0}}, torch::kLong);
    auto tgt = torch::tensor({{2, 8, 9}, {2, 12, 13}}, torch::kLong);
    torch::Tensor packed;
    {
      const PackedInference scope(*model);
      packed = model(src, tgt);
      EXPECT_EQ(model->output_projection ? model->output_projection->packed_weight().holds_copy()
                                         : model->packed_weights().front()->holds_copy(),
                packed_kernel_available());
    }
    model->set_packed_inference(false);
    EXPECT_TRUE(torch::allclose(packed, model(src, tgt), 1e-5, 1e-5)) << (tied ? "tied" : "untied");
  }
}

// A tied model's output bias (config.output_bias: an imported MarianMT model's final_logits_bias),
// zeros at start, against hidden · Eᵀ + b on every path the tied projection takes: the packed fp32
// kernel inside a PackedInference scope, at::linear outside one and with packed inference off, bf16
// autocast (the packed bf16 kernel where the CPU has AVX512_BF16), and CUDA where there is one. The
// training loss (the fused projection and loss) sees it, and its gradient reaches it.
TEST(OutputBias, TiedLogitsAreHiddenTimesTheEmbeddingPlusTheBiasOnEveryPath) {
  torch::manual_seed(29);
  auto config = tiny_config("post");
  config.output_bias = true;
  Transformer model(config);
  ASSERT_TRUE(model->output_bias().defined());
  EXPECT_EQ(model->output_bias().abs().sum().item<float>(), 0.0f);
  // Version 5; an older config has no bias, and an untied model has its projection's own.
  auto older = to_json(config);
  older["version"] = 4;
  older.erase("output_bias");
  EXPECT_FALSE(model_config_from_json(older).output_bias);
  auto untied = config;
  untied.tie_embeddings = false;
  EXPECT_THROW(validate(untied), InputError);

  auto src = torch::tensor({{4, 5, 6, 7, 3}, {8, 9, 3, 0, 0}}, torch::kLong);
  auto tgt_in = torch::tensor({{2, 8, 9}, {2, 12, 0}}, torch::kLong);
  auto tgt_out = torch::tensor({{8, 9, 3}, {12, 3, 0}}, torch::kLong);
  {
    torch::NoGradGuard no_grad;
    model->tied_output_bias.normal_(0.0, 1.0);
  }
  const auto fused = batch_loss(model, src, tgt_in, tgt_out, 0.1);
  const auto plain = label_smoothed_loss(model(src, tgt_in), tgt_out, 0.1, config.pad_id);
  EXPECT_NEAR(fused.smoothed.item<double>(), plain.smoothed.item<double>(), 1e-4);
  fused.smoothed.backward();
  ASSERT_TRUE(model->output_bias().grad().defined());
  EXPECT_GT(model->output_bias().grad().abs().sum().item<double>(), 0.0);

  model->eval();
  torch::NoGradGuard no_grad;
  const auto hidden = torch::randn({2, 3, config.d_model});
  const auto expected = torch::matmul(hidden, model->output_weight().t()) + model->output_bias();  // [2,3,V]
  const auto near = [&](const torch::Tensor& logits, double tolerance) {
    return torch::allclose(logits.to(torch::kCPU, torch::kFloat), expected, tolerance, tolerance);
  };
  EXPECT_TRUE(near(model->output_logits(hidden), 1e-5));
  {
    const PackedInference scope(*model);
    EXPECT_TRUE(near(model->output_logits(hidden), 1e-5));
    EXPECT_EQ(model->packed_weights().front()->holds_copy(), packed_kernel_available());
    const util::AutocastGuard bf16(true, torch::kCPU);
    const int64_t before = ops::runs(ops::Kernel::packed_bf16_gemm);
    EXPECT_TRUE(near(model->output_logits(hidden), 5e-2));
    EXPECT_EQ(ops::runs(ops::Kernel::packed_bf16_gemm) - before, ops::cpu_has_avx512_bf16() ? 1 : 0);
  }
  model->set_packed_inference(false);
  EXPECT_TRUE(near(model->output_logits(hidden), 1e-5));
  if (!torch::cuda::is_available()) return;
  model->to(torch::kCUDA);
  EXPECT_TRUE(near(model->output_logits(hidden.cuda()), 1e-4));
  const util::AutocastGuard bf16(true, torch::kCUDA);
  EXPECT_TRUE(near(model->output_logits(hidden.cuda()), 5e-2));
}

TEST(TokenNll, IgnoresPaddingAndMatchesHandComputation) {
  auto logits = torch::log(torch::tensor({{{0.5f, 0.25f, 0.25f}, {0.1f, 0.8f, 0.1f}}}));  // [1,2,3]
  auto target = torch::tensor({{1, 0}}, torch::kLong);                                    // second is padding
  auto [nll, count] = token_nll(logits, target, 0);
  EXPECT_NEAR(nll.item<double>(), -std::log(0.25), 1e-6);
  EXPECT_EQ(count.item<int64_t>(), 1);
}

// MarianMT's layout (transformers' MarianSinusoidalPositionalEmbedding): sin(p / 10000^(2j/d)) in
// column j < d/2, cos(p / 10000^(2(j - d/2)/d)) in column j >= d/2; trafo's interleaved table holds
// the same columns, sines at the even ones.
TEST(Positions, HalvesAreTheInterleavedColumnsWithTheSinesFirstAsMarianMT) {
  const int64_t positions = 40, d = 8;
  SinusoidalPositionsImpl interleaved(positions, d, false), halves(positions, d, true);
  const auto a = interleaved.named_buffers()["table"], b = halves.named_buffers()["table"];
  using torch::indexing::None;
  using torch::indexing::Slice;
  EXPECT_TRUE(
      torch::equal(b, torch::cat({a.index({Slice(), Slice(0, None, 2)}), a.index({Slice(), Slice(1, None, 2)})}, 1)));
  for (int64_t p = 0; p < positions; ++p) {
    for (int64_t j = 0; j < d; ++j) {
      const int64_t i = j < d / 2 ? j : j - d / 2;
      const double angle = static_cast<double>(p) / std::pow(10000.0, 2.0 * static_cast<double>(i) / d);
      EXPECT_NEAR(b[p][j].item<double>(), j < d / 2 ? std::sin(angle) : std::cos(angle), 1e-5) << p << "," << j;
    }
  }
  ModelConfig config;
  config.positions = "sinusoidal-halves";
  EXPECT_NO_THROW(validate(config));
  config.positions = "sinusoidal-thirds";
  EXPECT_THROW(validate(config), InputError);
}

// --attention-dropout and --activation-dropout: each drops where it says, in training only; unset
// (-1), each follows --dropout, as every place did before they were options.
// LayerDrop (Fan et al. 2019): in training, each layer is skipped with its stack's rate, drawn from
// the CPU generator at each call; in eval mode never. A skipped encoder layer leaves the output what
// the other layers alone make of it.
TEST(Dropout, LayerDropSkipsWholeLayersInTrainingOnly) {
  const auto src = torch::tensor({{4, 5, 6, 7, 3}}, torch::kLong);
  const auto tgt = torch::tensor({{2, 8, 9, 10}}, torch::kLong);
  ModelConfig c = tiny_config();
  c.encoder_layerdrop = 0.2;  // each call keeps every layer with probability 0.8^layers
  c.decoder_layerdrop = 0.2;
  torch::manual_seed(4);
  Transformer model(c);
  model->eval();
  const auto evaluated = model(src, tgt);
  ModelConfig plain = c;
  plain.encoder_layerdrop = plain.decoder_layerdrop = 0.0;
  torch::manual_seed(4);
  Transformer same(plain);  // the same weights
  same->eval();
  EXPECT_TRUE(torch::equal(same(src, tgt), evaluated));  // eval mode: no layer is ever skipped

  // Training with the rates of the config, dropout off: whole layers go in some calls and none in
  // others (the seeds fix which), and a call that skips every encoder layer gives the embeddings
  // alone after the norm.
  model->train();
  int differing = 0;
  for (uint64_t seed = 0; seed < 16; ++seed) {
    torch::manual_seed(seed);
    const auto trained = model(src, tgt);
    torch::manual_seed(seed);
    EXPECT_TRUE(torch::equal(model(src, tgt), trained)) << "seeded draws repeat";
    differing += !torch::allclose(trained, evaluated, 1e-6, 1e-6);
  }
  EXPECT_GT(differing, 0);
  EXPECT_LT(differing, 16);

  ModelConfig all = tiny_config();
  all.encoder_layerdrop = 0.999999;
  torch::manual_seed(5);
  Transformer skipping(all);
  skipping->train();
  const auto memory = skipping->encode(src);
  auto embedded = skipping->positions->embed(skipping->source_embedding(src), 0);
  if (skipping->encoder_norm) embedded = skipping->encoder_norm(embedded);
  EXPECT_TRUE(torch::allclose(memory, embedded, 1e-6, 1e-6));

  // A training knob stored with the model (version 4; older configs read 0), no part of its shape.
  const auto read = model_config_from_json(to_json(c));
  EXPECT_EQ(read.encoder_layerdrop, 0.2);
  EXPECT_EQ(read.decoder_layerdrop, 0.2);
  auto older = to_json(tiny_config());
  older["version"] = 3;
  older.erase("encoder_layerdrop");
  older.erase("decoder_layerdrop");
  EXPECT_EQ(model_config_from_json(older).decoder_layerdrop, 0.0);
  EXPECT_EQ(describe_differences(c, tiny_config()), "");
  for (const double refused : {1.0, -0.1, std::nan("")}) {
    c.decoder_layerdrop = refused;
    EXPECT_THROW(validate(c), InputError) << refused;
  }
}

TEST(Dropout, AttentionAndActivationRatesDropWhereTheySay) {
  ModelConfig config = tiny_config();
  EXPECT_EQ(attention_dropout_rate(config), 0.0);
  config.dropout = 0.3;
  EXPECT_EQ(attention_dropout_rate(config), 0.3);
  EXPECT_EQ(activation_dropout_rate(config), 0.3);
  config.attention_dropout = 0.0;
  EXPECT_EQ(attention_dropout_rate(config), 0.0);
  EXPECT_EQ(activation_dropout_rate(config), 0.3);

  const auto src = torch::tensor({{4, 5, 6, 7, 3}}, torch::kLong);
  const auto tgt = torch::tensor({{2, 8, 9, 10}}, torch::kLong);
  // Train-mode output against eval-mode output of the same weights, residual dropout off.
  const auto changes_training = [&](double attention, double activation) {
    ModelConfig c = tiny_config();
    c.attention_dropout = attention;
    c.activation_dropout = activation;
    torch::manual_seed(4);
    Transformer model(c);
    model->eval();
    const auto evaluated = model(src, tgt);
    model->train();
    return !torch::allclose(model(src, tgt), evaluated, 1e-6, 1e-6);
  };
  EXPECT_FALSE(changes_training(0.0, 0.0));
  EXPECT_TRUE(changes_training(0.5, 0.0));
  EXPECT_TRUE(changes_training(0.0, 0.5));

  // Stored with the model, read back; a config from before them follows dropout; they are no part
  // of the model's shape; 1 is refused.
  config.activation_dropout = 0.2;
  const auto read = model_config_from_json(to_json(config));
  EXPECT_EQ(read.attention_dropout, 0.0);
  EXPECT_EQ(read.activation_dropout, 0.2);
  auto older = to_json(tiny_config());
  older["version"] = 2;
  older.erase("attention_dropout");
  older.erase("activation_dropout");
  EXPECT_EQ(model_config_from_json(older).attention_dropout, -1.0);
  EXPECT_EQ(describe_differences(config, tiny_config()), "");
  for (const double refused : {1.0, -0.5, std::nan("")}) {
    config.attention_dropout = refused;
    EXPECT_THROW(validate(config), InputError) << refused;
  }
}

TEST(FeedForward, SwishIsXTimesSigmoidOfX) {
  torch::manual_seed(3);
  FeedForward swish(8, 16, 0.0, Activation::kSwish);
  swish->eval();
  const auto x = torch::randn({2, 3, 8});
  const auto hidden = swish->linear1(x);
  const auto expected = swish->linear2(hidden * torch::sigmoid(hidden));
  EXPECT_TRUE(torch::allclose(swish(x), expected, 1e-6, 1e-6));
  ModelConfig config;
  config.activation = "swish";
  EXPECT_EQ(activation_of(config), Activation::kSwish);
  config.activation = "silu";
  EXPECT_THROW(activation_of(config), InputError);
}

}  // namespace
}  // namespace trafo::model
