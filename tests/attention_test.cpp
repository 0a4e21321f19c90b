// Attention against the formula worked out by hand, the seed tutorial's numbers, and the fused path.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "trafo/model/attention.h"
#include "trafo/ops/eligibility.h"

namespace trafo::model {
namespace {

// softmax(q·k_j/√d_k) over j, then Σ_j w_j v_j, one query row at a time, with plain loops.
std::vector<std::vector<float>> attention_by_loops(const std::vector<std::vector<float>>& q,
                                                   const std::vector<std::vector<float>>& k,
                                                   const std::vector<std::vector<float>>& v,
                                                   const std::vector<std::vector<bool>>& may_attend) {
  std::vector<std::vector<float>> out(q.size(), std::vector<float>(v[0].size(), 0.0f));
  for (size_t i = 0; i < q.size(); ++i) {
    std::vector<double> scores(k.size());
    double max_score = -1e30;
    for (size_t j = 0; j < k.size(); ++j) {
      double dot = 0.0;
      for (size_t c = 0; c < q[i].size(); ++c) dot += q[i][c] * k[j][c];
      scores[j] = dot / std::sqrt(static_cast<double>(q[i].size()));
      if (may_attend[i][j]) max_score = std::max(max_score, scores[j]);
    }
    double total = 0.0;
    for (size_t j = 0; j < k.size(); ++j) {
      scores[j] = may_attend[i][j] ? std::exp(scores[j] - max_score) : 0.0;
      total += scores[j];
    }
    for (size_t j = 0; j < k.size(); ++j) {
      for (size_t c = 0; c < v[j].size(); ++c) out[i][c] += static_cast<float>(scores[j] / total * v[j][c]);
    }
  }
  return out;
}

torch::Tensor to_tensor(const std::vector<std::vector<float>>& rows) {
  auto t = torch::empty({static_cast<int64_t>(rows.size()), static_cast<int64_t>(rows[0].size())});
  for (size_t i = 0; i < rows.size(); ++i) {
    for (size_t j = 0; j < rows[i].size(); ++j) t[i][j] = rows[i][j];
  }
  return t;
}

TEST(Attention, EqualsExplicitLoopsOnThreeTokens) {
  const std::vector<std::vector<float>> q = {{1.0f, 0.0f, 1.0f, 0.5f}, {0.0f, 2.0f, 0.0f, -1.0f}, {1.0f, 1.0f, 1.0f, 1.0f}};
  const std::vector<std::vector<float>> k = {{0.5f, 1.0f, -1.0f, 0.0f}, {1.0f, 0.0f, 1.0f, 2.0f}, {-1.0f, 0.5f, 0.0f, 1.0f}};
  const std::vector<std::vector<float>> v = {{1.0f, 2.0f, 3.0f, 4.0f}, {0.0f, -1.0f, 1.0f, 0.0f}, {2.0f, 0.0f, 0.0f, 1.0f}};
  for (const bool causal : {false, true}) {
    std::vector<std::vector<bool>> may(3, std::vector<bool>(3, true));
    if (causal) {
      for (int i = 0; i < 3; ++i) for (int j = i + 1; j < 3; ++j) may[i][j] = false;
    }
    const auto expected = to_tensor(attention_by_loops(q, k, v, may));
    auto shape = [](const torch::Tensor& t) { return t.view({1, 1, 3, 4}); };
    const torch::Tensor mask = causal ? causal_mask(3, torch::kCPU) : torch::Tensor();
    torch::Tensor weights;
    const auto plain = plain_attention(shape(to_tensor(q)), shape(to_tensor(k)), shape(to_tensor(v)), mask, 0.0, false,
                                       &weights);
    EXPECT_TRUE(torch::allclose(plain.view({3, 4}), expected, 1e-6, 1e-6)) << plain << expected;
    EXPECT_TRUE(torch::allclose(weights.sum(-1), torch::ones({1, 1, 3}), 1e-6, 1e-6));
    if (causal) {
      EXPECT_EQ(weights.triu(1).abs().sum().item<float>(), 0.0f);
    }
  }
}

// Seed 002: "Life is short, eat dessert first", torch.manual_seed(123), d=16, d_q=d_k=24, d_v=28.
TEST(Attention, ReproducesTheSeedTutorialNumbers) {
  torch::manual_seed(123);
  auto embedding = torch::nn::Embedding(6, 16);
  const auto sentence = torch::tensor({0, 4, 5, 2, 1, 3}, torch::kLong);
  const auto embedded = embedding(sentence).detach();  // [6,16]
  torch::manual_seed(123);
  const auto w_query = torch::randn({24, 16});
  const auto w_key = torch::randn({24, 16});
  torch::randn({28, 16});  // W_value: drawn to keep the generator in step with the tutorial
  const auto x_2 = embedded[1];
  const auto query_2 = torch::matmul(w_query, x_2);                 // [24]
  const auto keys = torch::matmul(w_key, embedded.t()).t();         // [6,24]
  const auto omega_2 = torch::matmul(query_2, keys.t());            // [6]
  const std::vector<double> expected_omega = {83.1533, 95.5014, -100.8584, 63.5880, -98.1709, 9.3997};
  const std::vector<double> expected_weights = {7.4328e-02, 9.2430e-01, 3.6184e-18, 1.3699e-03, 6.2628e-18, 2.1523e-08};
  // Our attention on the same scores: a single query attending to the six keys.
  torch::Tensor weights;
  plain_attention(query_2.view({1, 1, 1, 24}), keys.view({1, 1, 6, 24}), keys.view({1, 1, 6, 24}), {}, 0.0, false,
                  &weights);
  for (int j = 0; j < 6; ++j) {
    EXPECT_NEAR(omega_2[j].item<double>(), expected_omega[j], 1e-4 * std::abs(expected_omega[j])) << j;
    EXPECT_NEAR(weights[0][0][0][j].item<double>(), expected_weights[j], 1e-4 * expected_weights[j]) << j;
  }
}

TEST(Attention, FusedPathAgreesWithPlainPath) {
  torch::manual_seed(7);
  auto q = torch::randn({2, 4, 5, 8}), k = torch::randn({2, 4, 7, 8}), v = torch::randn({2, 4, 7, 8});
  auto tokens = torch::tensor({{5, 6, 7, 8, 9, 10, 11}, {5, 6, 7, 0, 0, 0, 0}}, torch::kLong);
  const auto mask = padding_mask(tokens, 0);
  const auto plain = plain_attention(q, k, v, mask, 0.0, false);
  const auto fused = at::scaled_dot_product_attention(q, k, v, mask);
  EXPECT_TRUE(torch::allclose(plain, fused, 1e-5, 1e-5));
}

TEST(MultiHeadAttention, EqualsPerHeadAttentionsConcatenatedAndProjected) {
  torch::manual_seed(3);
  const int64_t d = 12, heads = 3, d_k = d / heads;
  MultiHeadAttention attention(d, heads, 0.0, /*self_attention=*/false);
  attention->eval();
  auto query = torch::randn({2, 4, d}), memory = torch::randn({2, 6, d});
  const auto output = attention(query, memory, torch::Tensor());
  auto wq = attention->q_proj->weight, bq = attention->q_proj->bias;
  auto wk = attention->kv_proj->weight.narrow(0, 0, d), bk = attention->kv_proj->bias.narrow(0, 0, d);
  auto wv = attention->kv_proj->weight.narrow(0, d, d), bv = attention->kv_proj->bias.narrow(0, d, d);
  std::vector<torch::Tensor> per_head;
  for (int64_t h = 0; h < heads; ++h) {
    auto rows = [&](const torch::Tensor& w) { return w.narrow(0, h * d_k, d_k); };
    auto qh = torch::matmul(query, rows(wq).t()) + rows(bq);   // [B,4,d_k]
    auto kh = torch::matmul(memory, rows(wk).t()) + rows(bk);  // [B,6,d_k]
    auto vh = torch::matmul(memory, rows(wv).t()) + rows(bv);
    auto w = torch::softmax(torch::matmul(qh, kh.transpose(1, 2)) / std::sqrt(double(d_k)), -1);
    per_head.push_back(torch::matmul(w, vh));
  }
  const auto expected = attention->out_proj(torch::cat(per_head, -1));
  EXPECT_TRUE(torch::allclose(output, expected, 1e-5, 1e-5));
}

TEST(MultiHeadAttention, SelfAttentionCacheGrowsAndMatchesFullPass) {
  torch::manual_seed(4);
  MultiHeadAttention attention(8, 2, 0.0, /*self_attention=*/true);
  attention->eval();
  auto x = torch::randn({1, 5, 8});
  const auto full = attention(x, x, causal_mask(5, torch::kCPU));
  AttentionCache cache;
  for (int64_t t = 0; t < 5; ++t) {
    auto step = x.narrow(1, t, 1);
    auto out = attention(step, step, torch::Tensor(), &cache);
    EXPECT_EQ(cache.keys.size(2), t + 1);
    EXPECT_TRUE(torch::allclose(out, full.narrow(1, t, 1), 1e-5, 1e-5)) << t;
  }
}

// The one-query kernel (d_k a multiple of 8, no gradient) against the plain path: a growing self-
// attention cache past its first two reallocations, rows dropped on the way, and a cross-attention
// over padded sources.
TEST(StepAttention, GrowingCacheWithDroppedRowsMatchesFullPass) {
  torch::manual_seed(11);
  MultiHeadAttention attention(32, 2, 0.0, /*self_attention=*/true);  // d_k 16
  attention->eval();
  torch::NoGradGuard no_grad;
  const int64_t steps = 40;
  auto x = torch::randn({3, steps, 32});
  const auto full = attention(x, x, causal_mask(steps, torch::kCPU));  // [3,T,32]
  AttentionCache cache;
  auto rows = torch::arange(3);
  const int64_t runs_before = ops::runs(ops::Kernel::step_attention);
  for (int64_t t = 0; t < steps; ++t) {
    if (t == 25) {  // the middle sentence finishes
      rows = torch::tensor({0, 2});
      cache.select(torch::tensor({0, 2}));
    }
    auto step = x.index_select(0, rows).narrow(1, t, 1);
    auto out = attention(step, step, torch::Tensor(), &cache);
    ASSERT_EQ(cache.keys.size(2), t + 1);
    EXPECT_TRUE(torch::allclose(out, full.index_select(0, rows).narrow(1, t, 1), 1e-5, 1e-5)) << t;
  }
  // every step through the kernel wherever the CPU has AVX2 and FMA, not silently through SDPA
  EXPECT_EQ(ops::runs(ops::Kernel::step_attention) - runs_before, ops::cpu_isa() != ops::Isa::none ? steps : 0);
}

TEST(StepAttention, CrossAttentionOverPaddedSourcesMatchesPlainPath) {
  torch::manual_seed(12);
  MultiHeadAttention attention(64, 4, 0.0, /*self_attention=*/false);  // d_k 16
  attention->eval();
  torch::NoGradGuard no_grad;
  auto memory = torch::randn({3, 13, 64});
  auto tokens = torch::ones({3, 13}, torch::kLong);
  tokens.narrow(1, 9, 4)[1].fill_(0);   // row 1: 9 real positions
  tokens.narrow(1, 1, 12)[2].fill_(0);  // row 2: 1 real position
  const auto mask = padding_mask(tokens, 0);
  auto query = torch::randn({3, 2, 64}).narrow(1, 1, 1);  // not contiguous
  AttentionCache step_cache, plain_cache;
  const int64_t runs_before = ops::runs(ops::Kernel::step_attention);
  const auto stepped = attention(query, memory, mask, &step_cache);
  attention->set_keep_weights(true);  // the plain path
  const auto plain = attention(query, memory, mask, &plain_cache);
  EXPECT_TRUE(torch::allclose(stepped, plain, 1e-5, 1e-5));
  // again from the filled cache, after dropping row 0
  attention->set_keep_weights(false);
  step_cache.select(torch::tensor({1, 2}));
  const auto again = attention(query.index_select(0, torch::tensor({1, 2})), memory, mask.index_select(0, torch::tensor({1, 2})),
                               &step_cache);
  EXPECT_TRUE(torch::allclose(again, plain.index_select(0, torch::tensor({1, 2})), 1e-5, 1e-5));
  // the two steps through the kernel, the plain one not
  EXPECT_EQ(ops::runs(ops::Kernel::step_attention) - runs_before, ops::cpu_isa() != ops::Isa::none ? 2 : 0);
}

}  // namespace
}  // namespace trafo::model
