#include "trafo/inference/loaded_model.h"

#include <algorithm>

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "trafo/decode/language_check.h"
#include "trafo/decode/precision_probe.h"
#include "trafo/errors.h"
#include "trafo/metrics/language_id.h"
#include "trafo/ops/eligibility.h"
#include "trafo/runtime/precision.h"
#include "trafo/util/device.h"
#include "trafo/util/language_tag.h"

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

// "a, b, c", at most 40 of them.
std::string listed(const std::vector<std::string>& items) {
  constexpr size_t kShown = 40;
  std::string text;
  for (size_t i = 0; i < items.size() && i < kShown; ++i) text += (i > 0 ? ", " : "") + items[i];
  if (items.size() > kShown) text += ", ... (" + std::to_string(items.size()) + " in all)";
  return text;
}

// Whether a checkpoint's target language ("fr", or an imported "fr+es+it") names `code`.
bool names_language(const std::string& languages, const std::string& code) {
  size_t at = 0;
  while (at <= languages.size()) {
    const size_t end = std::min(languages.find('+', at), languages.size());
    if (languages.compare(at, end - at, code) == 0) return true;
    at = end + 1;
  }
  return false;
}

// The tag that --tgt-lang and --tag choose for every source ("": none).
std::string chosen_tag(const RuntimeOptions& options, const checkpoint::InferenceInfo& info, const std::string& path) {
  if (options.tgt_lang.empty()) return options.tag;
  const auto codes = info.target_languages();
  const bool named = std::find(codes.begin(), codes.end(), options.tgt_lang) != codes.end();
  if (!named && codes.size() < 2 && (info.tgt_lang.empty() || names_language(info.tgt_lang, options.tgt_lang))) {
    return options.tag;  // a model of one target, that one (or one the checkpoint does not name)
  }
  if (!named) {
    throw InputError("--tgt-lang " + options.tgt_lang + ": " + path + " translates into " +
                     (codes.empty() ? info.tgt_lang : listed(codes) + " (its >>xx<< codes)"));
  }
  const auto tag = util::language_tag(options.tgt_lang);
  if (!options.tag.empty() && options.tag != tag) {
    throw InputError("--tag " + options.tag + " and --tgt-lang " + options.tgt_lang + " choose different tags: give one");
  }
  return tag;
}

}  // namespace

void require_target(const LoadedModel& loaded, const std::string& text, const std::string& where) {
  if (loaded.required_codes.empty() || text.find_first_not_of(" \t\r") == std::string::npos) return;
  // A code ends at a space or a tab, as the tokenizer reads it; MarianMT's table reads it up to "<<".
  const bool glued = loaded.tokenizer.has_table();
  for (const auto& code : loaded.required_codes) {
    const auto tag = util::language_tag(code);
    if (text.compare(0, tag.size(), tag) == 0 &&
        (glued || text.size() == tag.size() || text[tag.size()] == ' ' || text[tag.size()] == '\t')) {
      return;
    }
  }
  const auto asked = util::leading_tag(text);
  const bool other = !asked.empty() && asked.size() < 42;
  throw InputError(where + (other ? " asks for " + std::string(asked) + ", which the model does not translate into ("
                                  : " names no target language, and the model translates into ") +
                   listed(loaded.required_codes) + (other ? ")" : "") +
                   ": choose one with --tgt-lang, or begin each line with its >>xx<< code");
}

void require_targets(const LoadedModel& loaded, const std::vector<std::string>& lines, const std::string& file) {
  for (size_t i = 0; i < lines.size(); ++i) require_target(loaded, lines[i], file + " line " + std::to_string(i + 1));
}

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
  const auto tag_text = chosen_tag(options, checkpoint.inference, options.checkpoint);
  const int tag = tag_piece(tag_text, checkpoint, tokenizer, options.checkpoint);  // input first, then timing
  auto model = checkpoint::make_model(checkpoint, device);
  const auto precision = runtime::pick_decoding_precision(options.precision, device,
                                                        [&] { return decode::bf16_decoding_speedup(model); });
  spdlog::info("loaded {} on {}, {} threads, {}: {}{}", options.checkpoint, device.str(), threads, precision.name(),
               precision.reason, device.is_cpu() ? std::string("; CPU kernels ") + ops::isa_name(ops::cpu_isa()) : "");
  LoadedModel loaded{std::move(model), {}, std::move(tokenizer), precision.bf16, tag, {}, checkpoint.inference};
  if (const auto codes = checkpoint.inference.target_languages(); codes.size() >= 2 && tag < 0) {
    const auto ids = corpus_tag_ids(checkpoint.inference, loaded.tokenizer);
    for (const auto& code : codes) {
      if (ids.count(util::language_tag(code)) != 0) loaded.required_codes.push_back(code);  // one piece, as it must be
    }
  }
  for (const auto& path : options.ensemble) {
    const auto member = checkpoint::load(path, /*with_training_state=*/false);
    if (member.tokenizer != checkpoint.tokenizer) {
      throw InputError("--checkpoint " + options.checkpoint + " and " + path +
                       " have different tokenizers: the models of an ensemble must share one");
    }
    const auto direction = [](const checkpoint::InferenceInfo& info) { return info.src_lang + "-" + info.tgt_lang; };
    const bool known = !member.inference.src_lang.empty() && !checkpoint.inference.src_lang.empty();
    if (known && direction(member.inference) != direction(checkpoint.inference)) {
      throw InputError("--checkpoint " + options.checkpoint + " translates " + direction(checkpoint.inference) + " and " +
                       path + " " + direction(member.inference) + ": the models of an ensemble must translate alike");
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

bool identifier_knows(const std::string& language_id, const std::vector<std::string>& languages) {
  if (language_id.empty()) return false;
  const auto known = metrics::LanguageId::from_json(language_id).languages();
  return std::all_of(languages.begin(), languages.end(), [&](const std::string& language) {
    return std::find(known.begin(), known.end(), language) != known.end();
  });
}

decode::DecodeOptions decoding_for(decode::DecodeOptions options, const LoadedModel& loaded) {
  options.bf16 = loaded.bf16;
  options.source_tag = loaded.tag;
  if (options.retry_off_target == 0) return options;
  std::map<int, std::string> targets;
  for (const auto& [tag, id] : corpus_tag_ids(loaded.inference, loaded.tokenizer)) {
    if (const auto code = util::tag_language(tag); !code.empty()) targets[id] = std::string(code);
  }
  // An option that would do nothing is refused, as the decoding options are (docs/contracts.md); so
  // is an identifier that does not know every target (a run with its tags given by hand learns one
  // of its two --src-lang and --tgt-lang only).
  std::vector<std::string> codes;
  for (const auto& [id, code] : targets) codes.push_back(code);
  if (targets.size() < 2 || !identifier_knows(loaded.inference.language_id, codes)) {
    throw InputError("--retry-off-target has nothing to check here: the model translates into one language, or "
                     "its checkpoint has no language identifier of its targets (one of several target languages "
                     "trained by trafo has one)");
  }
  options.language_check = std::make_shared<const decode::LanguageCheck>(
      metrics::LanguageId::from_json(loaded.inference.language_id), std::move(targets));
  return options;
}

}  // namespace trafo::inference
