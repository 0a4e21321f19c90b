// Reading what a `trafo train` run left in its folder, and checking its validations against a fresh
// `trafo eval` of its checkpoints.
#pragma once

#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "test_support.h"
#include "trafo/test_hooks.h"

namespace trafo::testing {

inline std::vector<nlohmann::json> read_jsonl(const std::filesystem::path& path) {
  std::vector<nlohmann::json> events;
  std::istringstream in(read_text(path));
  for (std::string line; std::getline(in, line);) events.push_back(nlohmann::json::parse(line));
  return events;
}

inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

inline std::string quoted(const std::filesystem::path& path) { return "'" + path.string() + "'"; }

// This process and the commands it starts pose as a CPU with `flags` whose bf16 matmuls run
// `speedup` times as fast as fp32 and whose bf16 decoding runs `decoding_speedup` times as fast,
// until the object goes.
struct PosedCpu {
  PosedCpu(const std::string& flags, const std::string& speedup, const std::string& decoding_speedup) {
    const std::string hooks =
        "cpu_flags=" + flags + ",bf16_speedup=" + speedup + ",bf16_decoding_speedup=" + decoding_speedup;
    ::setenv(kTestHooksSwitch, hooks.c_str(), 1);
  }
  ~PosedCpu() { ::unsetenv(kTestHooksSwitch); }
  PosedCpu(const PosedCpu&) = delete;
  PosedCpu& operator=(const PosedCpu&) = delete;
};

// Every `valid` event of RUN/metrics.jsonl must equal what a fresh `trafo eval` of RUN/checkpoint-STEP.pt
// with its default batches computes on DATA/dev.{en,de}: loss, BLEU, chrF and each hypothesis (the run
// logs a sample of every dev sentence: --valid-samples at least the dev size). Returns the logged
// hypotheses of each validation.
inline std::vector<std::vector<std::string>> expect_validations_equal_fresh_evals(const std::filesystem::path& run,
                                                                                  const std::filesystem::path& data) {
  std::vector<std::vector<std::string>> hypotheses;
  const auto events = read_jsonl(run / "metrics.jsonl");
  // `auto` times the model at start, so a busy machine can make two runs pick differently: eval is given
  // the precision the run's validation used.
  const std::string precision = events.front().value("validation_precision", "fp32");
  for (const auto& event : events) {
    if (event["event"] != "valid") continue;
    const int64_t step = event["step"];
    const auto output = run.parent_path() / ("hyp-" + std::to_string(step) + ".txt");
    const auto eval = run_trafo("eval --checkpoint " + quoted(run / ("checkpoint-" + std::to_string(step) + ".pt")) +
                                " --src " + quoted(data / "dev.en") + " --ref " + quoted(data / "dev.de") +
                                " --threads 1 --precision " + precision + " --json --output " + quoted(output));
    if (eval.exit_code != 0) {
      ADD_FAILURE() << "eval of step " << step << ": " << eval.errors;
      continue;
    }
    const auto fresh = nlohmann::json::parse(eval.output);
    EXPECT_NEAR(event["loss"].get<double>(), fresh["loss"].get<double>(), 1e-5) << "step " << step;
    EXPECT_NEAR(event["bleu"].get<double>(), fresh["bleu"].get<double>(), 1e-9) << "step " << step;
    EXPECT_NEAR(event["chrf"].get<double>(), fresh["chrf"].get<double>(), 1e-9) << "step " << step;
    EXPECT_EQ(event["repetition_loops"], fresh["repetition_loops"]) << "step " << step;
    const auto fresh_lines = lines_of(read_text(output));
    if (event["samples"].size() != fresh_lines.size()) {
      ADD_FAILURE() << "step " << step << ": " << event["samples"].size() << " samples, " << fresh_lines.size()
                    << " lines translated";
      continue;
    }
    std::vector<std::string> in_training;
    for (size_t i = 0; i < fresh_lines.size(); ++i) {
      in_training.push_back(event["samples"][i]["hyp"]);
      EXPECT_EQ(in_training.back(), fresh_lines[i]) << "step " << step << ", sentence " << i;
    }
    hypotheses.push_back(in_training);
  }
  return hypotheses;
}

}  // namespace trafo::testing
