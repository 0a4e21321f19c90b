#include "translate_engines.h"

#include <algorithm>

#include "trafo/errors.h"
#include "trafo/inference/loaded_model.h"
#include "trafo/metrics/language_id.h"

namespace trafo::cli {

namespace {

std::string listed(const std::vector<std::string>& names) {
  std::string text;
  for (const auto& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

}  // namespace

TranslateEngines::TranslateEngines(const inference::RuntimeOptions& runtime, const std::string& src_lang,
                                   const inference::SearchOptions& options, const inference::Glossary::File& glossary) {
  if (src_lang.empty()) {
    engines_.push_back(std::make_unique<const inference::Translation>(
        std::make_shared<const inference::LoadedModel>(inference::load_for_translation(runtime)), options, glossary));
    return;
  }
  std::vector<std::string> paths = {runtime.checkpoint};
  paths.insert(paths.end(), runtime.ensemble.begin(), runtime.ensemble.end());
  std::vector<metrics::LanguageId> identifiers;
  for (const auto& path : paths) {
    auto one = runtime;
    one.checkpoint = path;
    one.ensemble.clear();
    auto loaded = std::make_shared<const inference::LoadedModel>(inference::load_for_translation(one));
    const auto source = loaded->inference.src_lang;
    if (source.empty()) throw InputError("--src-lang: --checkpoint " + path + " does not say which language it translates from");
    if (std::find(sources_.begin(), sources_.end(), source) != sources_.end()) {
      throw InputError("--src-lang: two checkpoints translate from " + source + ": give one per source language");
    }
    if (src_lang != "auto" && source != src_lang) continue;
    if (!loaded->inference.language_id.empty()) {
      identifiers.push_back(metrics::LanguageId::from_json(loaded->inference.language_id));
    }
    sources_.push_back(source);
    engines_.push_back(std::make_unique<const inference::Translation>(std::move(loaded), options, glossary));
  }
  if (engines_.empty()) {
    throw InputError("--src-lang " + src_lang + ": no --checkpoint translates from it");
  }
  if (src_lang == "auto") detector_.emplace(sources_, std::move(identifiers));
}

size_t TranslateEngines::of(const std::string& text, const std::string& where) const {
  if (!detector_ || text.find_first_not_of(" \t") == std::string::npos) return 0;
  std::string other;
  const auto found = detector_->detect(text, nullptr, &other);
  if (found.empty()) {
    throw InputError(where + (other.empty() ? " is in no language the checkpoints can tell"
                                             : " is in " + other + ", which no --checkpoint translates from") +
                     " (they take: " + listed(sources_) + ")");
  }
  return static_cast<size_t>(std::find(sources_.begin(), sources_.end(), found.front().language) - sources_.begin());
}

}  // namespace trafo::cli
