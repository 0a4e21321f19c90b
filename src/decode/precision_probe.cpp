#include "trafo/decode/precision_probe.h"

#include <algorithm>
#include <chrono>

#include <torch/torch.h>

#include "step_decoder.h"
#include "trafo/data/tokenizer.h"
#include "trafo/util/autocast.h"

namespace trafo::decode {
namespace {

// Seconds of the best of 3 rounds of encoding `src` and `steps` decoder steps, after one warm-up.
double decoding_seconds(model::Transformer& model, const torch::Tensor& src, int64_t steps, bool bf16) {
  const util::AutocastGuard autocast(bf16, src.device().type());
  const model::PackedInference packed(*model);
  const std::vector<int64_t> limits(static_cast<size_t>(src.size(0)), steps + 1);
  const auto first = torch::full({src.size(0)}, data::Tokenizer::kBos, src.options());
  const auto next = torch::full({src.size(0)}, data::Tokenizer::kEos + 1, src.options());
  auto round = [&] {
    detail::StepDecoder decoder(model, src, limits, /*use_cache=*/true, /*repeat=*/1);
    torch::Tensor log_probs;
    for (int64_t step = 0; step < steps; ++step) log_probs = decoder.next_log_probs(step == 0 ? first : next, step);
    detail::to_host({log_probs.select(1, 0)});  // waits for the device
  };
  round();
  double best = 1e30;
  for (int i = 0; i < 3; ++i) {
    const auto started = std::chrono::steady_clock::now();
    round();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  }
  return best;
}

}  // namespace

double bf16_decoding_speedup(model::Transformer& model) {
  c10::InferenceMode inference;
  const model::EvalMode eval_mode(model);  // no dropout: it would draw from the run's generator
  const auto& config = model->config();
  const auto device = model->parameters().front().device();
  // Fixed pieces past the specials, then eos: no generator is drawn from.
  const auto pieces = torch::arange(kProbeSentences * kProbeSourceLength, torch::kLong)
                          .remainder(config.vocab_size - data::Tokenizer::kEos - 1)
                          .add(data::Tokenizer::kEos + 1)
                          .view({kProbeSentences, kProbeSourceLength});
  const auto eos = torch::full({kProbeSentences, 1}, data::Tokenizer::kEos, torch::kLong);
  const auto src = torch::cat({pieces, eos}, 1).narrow(1, 0, std::min(kProbeSourceLength + 1, config.max_positions))
                       .to(device);
  const int64_t steps = std::min(kProbeSteps, config.max_positions - 1);
  const double fp32 = decoding_seconds(model, src, steps, false);
  const double bf16 = decoding_seconds(model, src, steps, true);
  return fp32 / std::max(bf16, 1e-9);
}

}  // namespace trafo::decode
