// The language of a text, as CLD2 (Google's Compact Language Detector 2, Debian's libcld2) finds it:
// what serve's /detect and `source: "auto"` start from (inference/language_detection.h weighs it
// against the languages served).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace trafo::text {

struct LanguageGuess {
  std::string language;  // an ISO 639-1 code ("en", "de"; "zh-Hant" for traditional Chinese)
  double percent = 0.0;  // of the text's letters in that language
};

struct LanguageGuesses {
  std::vector<LanguageGuess> guesses;  // most likely first, at most three; none where CLD2 cannot tell
  bool reliable = false;               // CLD2's own verdict: enough text, one language clearly first
};

// `text`: valid UTF-8, plain text.
LanguageGuesses guess_languages(std::string_view text);

// The English name of a language code ("de": "German"), as ICU's locale data has it; the code
// itself where ICU knows no name for it.
std::string language_name(const std::string& code);

}  // namespace trafo::text
