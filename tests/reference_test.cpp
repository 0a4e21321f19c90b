// The C++ model against PyTorch Python (torch.nn) fed the same weights (llm.c's style of
// reference test): logits within 1e-4 on a fixed batch with padding.
#include <cstdlib>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "test_support.h"
#include "trafo/model/transformer.h"

namespace trafo::model {
namespace {

using trafo::testing::make_temp_dir;
using trafo::testing::run_command;

bool python_has_torch() {
  return run_command(std::string("'") + TRAFO_PYTHON + "' -c 'import torch'").exit_code == 0;
}

struct Case {
  std::string norm;
  std::string activation;
  bool tie;
};

class ReferenceTest : public ::testing::TestWithParam<Case> {};

TEST_P(ReferenceTest, LogitsMatchPyTorchWithTheSameWeights) {
  if (!python_has_torch()) {
    const char* ci = std::getenv("CI");
    if (ci != nullptr && std::string(ci) == "true") FAIL() << TRAFO_PYTHON << " cannot import torch (CI=true)";
    GTEST_SKIP() << "skipped: " << TRAFO_PYTHON << " cannot import torch; run scripts/setup.sh";
  }
  ModelConfig config;
  config.vocab_size = 40;
  config.d_model = 32;
  config.heads = 4;
  config.encoder_layers = 2;
  config.decoder_layers = 2;
  config.d_ff = 64;
  config.dropout = 0.0;
  config.norm = GetParam().norm;
  config.activation = GetParam().activation;
  config.tie_embeddings = GetParam().tie;
  config.max_positions = 32;
  torch::manual_seed(11);
  Transformer model(config);
  model->eval();
  const auto src = torch::tensor({{5, 6, 7, 8, 9, 3}, {10, 11, 3, 0, 0, 0}, {12, 13, 14, 15, 3, 0}}, torch::kLong);
  const auto tgt_in = torch::tensor({{2, 20, 21, 22}, {2, 23, 24, 0}, {2, 25, 0, 0}}, torch::kLong);
  torch::NoGradGuard no_grad;
  const auto logits = model(src, tgt_in);

  c10::Dict<std::string, at::Tensor> saved;
  for (const auto& p : model->named_parameters()) saved.insert(p.key(), p.value().clone());
  for (const auto& b : model->named_buffers()) saved.insert(b.key(), b.value().clone());
  saved.insert("src", src);
  saved.insert("tgt_in", tgt_in);
  saved.insert("logits", logits);
  const auto dir = make_temp_dir("reference");
  const auto bytes = torch::pickle_save(c10::IValue(saved));
  trafo::testing::write_text(dir / "case.pt", std::string(bytes.begin(), bytes.end()));
  trafo::testing::write_text(dir / "config.json", to_json(config).dump());
  const auto result = run_command(std::string("'") + TRAFO_PYTHON + "' '" + TRAFO_SOURCE_DIR +
                                  "/tests/reference/transformer_reference.py' '" + (dir / "case.pt").string() +
                                  "' '" + (dir / "config.json").string() + "'");
  EXPECT_EQ(result.exit_code, 0) << result.output << result.errors;
  EXPECT_NE(result.output.find("max |logits difference|"), std::string::npos) << result.errors;
}

INSTANTIATE_TEST_SUITE_P(Variants, ReferenceTest,
                         ::testing::Values(Case{"pre", "relu", true}, Case{"post", "relu", true},
                                           Case{"pre", "gelu", false}),
                         [](const auto& info) {
                           return info.param.norm + "_" + info.param.activation + (info.param.tie ? "_tied" : "_untied");
                         });

}  // namespace
}  // namespace trafo::model
