#include "trafo/inference/language_detection.h"

#include <algorithm>

#include "trafo/text/languages.h"

namespace trafo::inference {

LanguageDetector::LanguageDetector(std::vector<std::string> candidates, std::vector<metrics::LanguageId> identifiers)
    : candidates_(std::move(candidates)), identifiers_(std::move(identifiers)) {}

std::vector<DetectedLanguage> LanguageDetector::detect(const std::string& text, const std::vector<std::string>* among,
                                                       std::string* other) const {
  const auto& candidates = among != nullptr ? *among : candidates_;
  const auto offered = [&](const std::string& language) {
    return std::find(candidates.begin(), candidates.end(), language) != candidates.end();
  };
  const auto cld2 = text::guess_languages(text);
  std::vector<DetectedLanguage> found;
  for (const auto& guess : cld2.guesses) {
    if (offered(guess.language)) found.push_back({guess.language, guess.percent});
  }
  if (other != nullptr) *other = cld2.guesses.empty() ? "" : cld2.guesses.front().language;
  if (!found.empty()) return found;
  // A language CLD2 is sure of and no candidate is: another language, not one to guess among ours.
  if (cld2.reliable) return found;
  for (const auto& identifier : identifiers_) {
    const auto language = identifier.identify(text);
    if (!language.empty() && offered(language)) return {{language, 50.0}};
  }
  if (cld2.guesses.empty() && candidates.size() == 1) return {{candidates.front(), 0.0}};
  return found;
}

}  // namespace trafo::inference
