// The engines `trafo translate` translates with: one (a checkpoint, or an ensemble of several), or
// with --src-lang one per checkpoint, each a direction from its source language, a line going to
// the one its language names (--src-lang auto: the language found in it, as serve's source "auto").
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "trafo/inference/language_detection.h"
#include "trafo/inference/translation.h"

namespace trafo::cli {

class TranslateEngines {
 public:
  // Loads the checkpoints of `runtime`. `src_lang` "": one engine (an ensemble where several
  // checkpoints are given); a code: the checkpoint that translates from it; "auto": each
  // checkpoint, its source language read from it. InputError for a checkpoint that does not say
  // its source language, two of one source, or a code none translates from.
  TranslateEngines(const inference::RuntimeOptions& runtime, const std::string& src_lang,
                   const inference::SearchOptions& options, const inference::Glossary::File& glossary);

  size_t size() const { return engines_.size(); }
  const inference::Translation& operator[](size_t i) const { return *engines_[i]; }
  // The engine for `text` (`where` names it in errors): the one, or the one of its language. A
  // blank text goes to the first. InputError for text in a language none translates from.
  size_t of(const std::string& text, const std::string& where) const;

 private:
  std::vector<std::unique_ptr<const inference::Translation>> engines_;
  std::vector<std::string> sources_;                    // each engine's source language
  std::optional<inference::LanguageDetector> detector_;  // --src-lang auto
};

}  // namespace trafo::cli
