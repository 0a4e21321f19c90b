// Translations in the language asked, for a model of several target languages: a translation that
// the checkpoint's language identifier (metrics/language_id.h) labels as another language (the
// source copied, or another target) is decoded again by beam search, and the best of its hypotheses
// labelled as the language asked takes its place; where none is, the first translation stays. This
// is the idea of language-informed beam search (Yang et al. 2024), applied only to the translations
// found off target, so that the others keep their pieces and cost nothing more. DecodeOptions's
// retry_off_target turns it on and gives the beam (translator.h).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "trafo/metrics/language_id.h"

namespace trafo::decode {

class LanguageCheck {
 public:
  // `targets`: each target-language tag's piece and its language code (>>fr<< and "fr").
  LanguageCheck(metrics::LanguageId identifier, std::map<int, std::string> targets);

  // The language `source` (ids, its tag first) asks for: its tag's; "" for a source without one.
  std::string asked(const std::vector<int>& source) const;
  // `text` labelled as another language than `language` (a line the identifier cannot place is not).
  bool off_target(const std::string& text, const std::string& language) const;
  // `text` labelled as `language`.
  bool on_target(const std::string& text, const std::string& language) const;

 private:
  metrics::LanguageId identifier_;
  std::map<int, std::string> targets_;
};

}  // namespace trafo::decode
