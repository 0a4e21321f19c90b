#include "trafo/text/languages.h"

#include <unicode/locid.h>
#include <unicode/unistr.h>

#include <climits>
#include <cstdio>  // CLD2's header uses FILE without including it

#include <cld2/public/compact_lang_det.h>

namespace CLD2 {
const char* LanguageCode(Language lang);  // cld2/internal/lang_script.h, in the library
}

namespace trafo::text {
namespace {

// CLD2 writes some languages with their withdrawn ISO 639 codes.
std::string iso_code(const char* code) {
  const std::string given = code;
  if (given == "iw") return "he";
  if (given == "jw") return "jv";
  return given;
}

}  // namespace

LanguageGuesses guess_languages(std::string_view text) {
  CLD2::Language languages[3];
  int percents[3];
  double scores[3];
  int bytes = 0;
  bool reliable = false;
  const int length = static_cast<int>(std::min<size_t>(text.size(), INT_MAX));
  CLD2::ExtDetectLanguageSummary(text.data(), length, /*is_plain_text=*/true, "", 0, CLD2::UNKNOWN_LANGUAGE, languages,
                                 percents, scores, &bytes, &reliable);
  LanguageGuesses out;
  for (int i = 0; i < 3; ++i) {
    if (languages[i] == CLD2::UNKNOWN_LANGUAGE || percents[i] <= 0) continue;
    out.guesses.push_back({iso_code(CLD2::LanguageCode(languages[i])), static_cast<double>(percents[i])});
  }
  out.reliable = reliable && !out.guesses.empty();
  return out;
}

std::string language_name(const std::string& code) {
  const icu::Locale locale(code.c_str());
  icu::UnicodeString name;
  locale.getDisplayLanguage(icu::Locale::getEnglish(), name);
  std::string utf8;
  name.toUTF8String(utf8);
  // ICU gives the code back where it has no name for it.
  return utf8.empty() ? code : utf8;
}

}  // namespace trafo::text
