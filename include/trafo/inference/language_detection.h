// Which of the languages a server (or a command) translates from a text is in: CLD2's guesses
// (text/languages.h), and, where CLD2 cannot tell (a short UI string), the character n-gram
// identifiers learned from the models' own corpora (metrics::LanguageId, kept in checkpoints of
// several target languages), which know those languages better.
#pragma once

#include <string>
#include <vector>

#include "trafo/metrics/language_id.h"

namespace trafo::inference {

struct DetectedLanguage {
  std::string language;     // one of the candidates
  double confidence = 0.0;  // 0-100, as LibreTranslate gives it
};

class LanguageDetector {
 public:
  // `candidates`: the languages an answer may name; `identifiers`: from the models' checkpoints.
  LanguageDetector(std::vector<std::string> candidates, std::vector<metrics::LanguageId> identifiers);

  const std::vector<std::string>& candidates() const { return candidates_; }
  // The candidates `text` may be in (those of `among` alone, where given), most likely first. None
  // where CLD2 is sure of another language (`other` then names CLD2's guess), unless the text has
  // fewer than five words and an identifier labels it one of them. Else the identifiers' label
  // among them first (confidence: CLD2's share of the text for it, at least 50), then CLD2's
  // guesses among them (confidence: their share); where neither names one, CLD2 is unsure and
  // there is one candidate, that one (confidence 0). None where nothing can tell.
  std::vector<DetectedLanguage> detect(const std::string& text, const std::vector<std::string>* among = nullptr,
                                       std::string* other = nullptr) const;

 private:
  std::vector<std::string> candidates_;
  std::vector<metrics::LanguageId> identifiers_;
};

}  // namespace trafo::inference
