// A line cut into its sentences, as ICU's sentence break iterator finds them for a language, where
// no break follows one of the abbreviations ICU's data lists for that language, as a whole word
// ("Mr. Smith", "z.B."). What `translate` and serve translate when a line holds a paragraph: a model
// trained on sentences drops sentences of a paragraph given whole.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace trafo::text {

struct LineSentences {
  std::vector<std::string> sentences;  // each without the spaces around it; none for a blank line
  std::vector<std::string> gaps;       // the spaces between sentence i and i + 1 (one fewer than sentences)
};

class SentenceSplitter {
 public:
  // `language`: an ISO 639 code ("en", "de"); "" or one ICU has no rules of its own for: the
  // general rules.
  explicit SentenceSplitter(const std::string& language);
  ~SentenceSplitter();
  SentenceSplitter(SentenceSplitter&&) noexcept;
  SentenceSplitter& operator=(SentenceSplitter&&) noexcept;

  // The sentences of `line` (valid UTF-8, one line); any thread.
  LineSentences split(std::string_view line) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace trafo::text
