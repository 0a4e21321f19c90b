// Comparing the weights runs end with: a resumed run reaches the uninterrupted run's weights, and
// the option under test changes them.
#pragma once

#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "trafo/checkpoint/checkpoint.h"

namespace trafo::testing {

// RUN/checkpoint-last.pt of `resumed` holds the weights of `whole`'s bit for bit, and its source
// embedding differs from that of `plain`, a run without `option`.
inline void expect_resumed_equals_whole_unlike_plain(const std::filesystem::path& whole,
                                                     const std::filesystem::path& resumed,
                                                     const std::filesystem::path& plain, const std::string& option) {
  const auto a = checkpoint::load(whole / "checkpoint-last.pt");
  const auto b = checkpoint::load(resumed / "checkpoint-last.pt");
  const auto c = checkpoint::load(plain / "checkpoint-last.pt");
  for (const auto& [name, tensor] : a.weights) EXPECT_TRUE(torch::equal(tensor, b.weights.at(name))) << name;
  const char* embedding = "source_embedding.embedding.weight";
  EXPECT_FALSE(torch::equal(a.weights.at(embedding), c.weights.at(embedding))) << option << " changed nothing";
}

}  // namespace trafo::testing
