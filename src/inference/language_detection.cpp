#include "trafo/inference/language_detection.h"

#include <algorithm>

#include "trafo/text/languages.h"

namespace trafo::inference {

namespace {

int words(const std::string& text) {
  int count = 0;
  bool in_word = false;
  for (const char c : text) {
    const bool space = c == ' ' || c == '\t' || c == '\n' || c == '\r';
    count += !space && !in_word ? 1 : 0;
    in_word = !space;
  }
  return count;
}

double percent_of(const std::vector<DetectedLanguage>& found, const std::string& language) {
  for (const auto& guess : found) {
    if (guess.language == language) return guess.confidence;
  }
  return 0.0;
}

}  // namespace

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
  // CLD2 sure of a language none of ours: another language, not one to guess among ours; but on
  // fewer than five words its certainty is often misplaced (a French UI string "arabe baharna"),
  // and an identifier that labels the text as one of ours is taken instead.
  if (cld2.reliable && found.empty() && words(text) >= 5) return found;
  // Which of ours: the identifiers learned from the models' own corpora know them better than CLD2
  // on short strings (it was sure that "désactivation de la correspondance de motif" is English);
  // then CLD2's guesses; then, with one candidate, that one.
  for (const auto& identifier : identifiers_) {
    const auto language = identifier.identify(text);
    if (language.empty() || !offered(language)) continue;
    std::vector<DetectedLanguage> ranked = {{language, std::max(50.0, percent_of(found, language))}};
    for (const auto& guess : found) {
      if (guess.language != language) ranked.push_back(guess);
    }
    return ranked;
  }
  if (!found.empty() || cld2.reliable) return found;
  if (candidates.size() == 1) return {{candidates.front(), 0.0}};
  return found;
}

}  // namespace trafo::inference
