#include "trafo/inference/loaded_model.h"

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "trafo/decode/precision_probe.h"
#include "trafo/errors.h"
#include "trafo/ops/eligibility.h"
#include "trafo/runtime/precision.h"
#include "trafo/util/device.h"

namespace trafo::inference {
namespace {

// The piece of `tag` in a checkpoint's tokenizer; InputError naming the tags its training used when
// `tag` is not one of them (a piece of the vocabulary that is no tag would only be read as text).
int tag_piece(const std::string& tag, const checkpoint::Checkpoint& checkpoint, const data::Tokenizer& tokenizer,
              const std::string& path) {
  if (tag.empty()) return -1;
  const auto& tags = checkpoint.inference.tags;
  const auto ids = corpus_tag_ids(checkpoint.inference, tokenizer);
  const auto found = ids.find(tag);
  if (found == ids.end()) {
    std::string listed;
    for (const auto& each : tags) listed += (listed.empty() ? "" : ", ") + each;
    throw InputError("--tag " + tag + " is not a corpus tag of " + path +
                     (tags.empty() ? " (it was trained without tags)" : " (its tags: " + listed + ")"));
  }
  return found->second;
}

}  // namespace

std::map<std::string, int> corpus_tag_ids(const checkpoint::InferenceInfo& info, const data::Tokenizer& tokenizer) {
  std::map<std::string, int> ids;
  for (const auto& tag : info.tags) {
    if (const int id = tokenizer.reserved_id(tag); id >= 0) ids[tag] = id;
  }
  return ids;
}

LoadedModel load_for_translation(const RuntimeOptions& options) {
  const auto device = util::resolve_device(options.device);
  const int threads = util::threads_following_load(options.threads);
  at::set_num_threads(threads);
  const auto checkpoint = checkpoint::load(options.checkpoint, /*with_training_state=*/false);
  auto tokenizer = data::Tokenizer::from_bytes(checkpoint.tokenizer);
  const int tag = tag_piece(options.tag, checkpoint, tokenizer, options.checkpoint);  // input first, then timing
  auto model = checkpoint::make_model(checkpoint, device);
  const auto precision = runtime::pick_decoding_precision(options.precision, device,
                                                        [&] { return decode::bf16_decoding_speedup(model); });
  spdlog::info("loaded {} on {}, {} threads, {}: {}{}", options.checkpoint, device.str(), threads, precision.name(),
               precision.reason, device.is_cpu() ? std::string("; CPU kernels ") + ops::isa_name(ops::cpu_isa()) : "");
  LoadedModel loaded{std::move(model), {}, std::move(tokenizer), precision.bf16, tag, checkpoint.inference};
  for (const auto& path : options.ensemble) {
    const auto member = checkpoint::load(path, /*with_training_state=*/false);
    if (member.tokenizer != checkpoint.tokenizer) {
      throw InputError("--checkpoint " + options.checkpoint + " and " + path +
                       " have different tokenizers: the models of an ensemble must share one");
    }
    loaded.ensemble.push_back(checkpoint::make_model(member, device));
  }
  if (!options.ensemble.empty()) {
    spdlog::info("an ensemble of {} models: each step averages their log-probabilities", options.ensemble.size() + 1);
  }
  return loaded;
}

std::vector<model::Transformer> LoadedModel::models() const {
  std::vector<model::Transformer> all{model};
  all.insert(all.end(), ensemble.begin(), ensemble.end());
  return all;
}

}  // namespace trafo::inference
