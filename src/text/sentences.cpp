#include "trafo/text/sentences.h"

#include <mutex>
#include <stdexcept>
#include <unordered_set>

#include <unicode/brkiter.h>
#include <unicode/udata.h>
#include <unicode/unistr.h>
#include <unicode/ures.h>

namespace trafo::text {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t'; }

// The abbreviations after which ICU's data for `language` says a sentence goes on ("Mr.", "z.B."),
// from its break iterator data (brkitr: exceptions/SentenceBreak); none where it lists none.
std::unordered_set<std::string> abbreviations(const std::string& language) {
  std::unordered_set<std::string> listed;
  UErrorCode status = U_ZERO_ERROR;
  UResourceBundle* bundle = ures_open(U_ICUDATA_NAME U_TREE_SEPARATOR_STRING "brkitr", language.c_str(), &status);
  UResourceBundle* exceptions = ures_getByKey(bundle, "exceptions", nullptr, &status);
  UResourceBundle* sentences = ures_getByKey(exceptions, "SentenceBreak", nullptr, &status);
  while (U_SUCCESS(status) && ures_hasNext(sentences)) {
    int32_t length = 0;
    const UChar* text = ures_getNextString(sentences, &length, nullptr, &status);
    if (U_FAILURE(status)) break;
    std::string word;
    icu::UnicodeString(text, length).toUTF8String(word);
    listed.insert(word);
  }
  ures_close(sentences);
  ures_close(exceptions);
  ures_close(bundle);
  return listed;
}

// The word a sentence candidate ends with: after its last space, without an opening bracket or quote.
std::string last_word(const std::string& text) {
  const auto space = text.find_last_of(" \t");
  size_t start = space == std::string::npos ? 0 : space + 1;
  while (start < text.size() && std::string("([{\"'").find(text[start]) != std::string::npos) ++start;
  return text.substr(start);
}

}  // namespace

struct SentenceSplitter::Impl {
  std::unique_ptr<icu::BreakIterator> prototype;  // cloned for each line: an iterator holds its text
  std::mutex mutex;                               // clone() reads the prototype's state
  // A candidate break after one of these whole words is none. ICU's own filter
  // (FilteredBreakIteratorBuilder) matches them as suffixes: German's "am." kept "Er kam. Dann" whole.
  std::unordered_set<std::string> abbreviations;
};

SentenceSplitter::SentenceSplitter(const std::string& language) : impl_(std::make_unique<Impl>()) {
  UErrorCode status = U_ZERO_ERROR;
  impl_->prototype.reset(icu::BreakIterator::createSentenceInstance(icu::Locale(language.c_str()), status));
  if (U_FAILURE(status) || !impl_->prototype) {
    throw std::runtime_error(std::string("ICU has no sentence breaks: ") + u_errorName(status));
  }
  impl_->abbreviations = abbreviations(language);
}

SentenceSplitter::~SentenceSplitter() = default;
SentenceSplitter::SentenceSplitter(SentenceSplitter&&) noexcept = default;
SentenceSplitter& SentenceSplitter::operator=(SentenceSplitter&&) noexcept = default;

LineSentences SentenceSplitter::split(std::string_view line) const {
  std::unique_ptr<icu::BreakIterator> breaks;
  {
    std::lock_guard lock(impl_->mutex);
    breaks.reset(impl_->prototype->clone());
  }
  const auto text = icu::UnicodeString::fromUTF8(icu::StringPiece(line.data(), static_cast<int32_t>(line.size())));
  breaks->setText(text);
  LineSentences out;
  std::string sentence;  // the sentence so far: pieces joined across breaks an abbreviation cancels
  std::string gap;       // the spaces before it
  const auto close = [&] {
    size_t first = 0, last = sentence.size();
    while (first < last && is_space(sentence[first])) ++first;
    while (last > first && is_space(sentence[last - 1])) --last;
    if (first == last) {  // spaces alone: they join the gap
      gap += sentence;
    } else {
      if (!out.sentences.empty()) out.gaps.push_back(gap + sentence.substr(0, first));
      out.sentences.push_back(sentence.substr(first, last - first));
      gap = sentence.substr(last);
    }
    sentence.clear();
  };
  int32_t start = breaks->first();
  for (int32_t end = breaks->next(); end != icu::BreakIterator::DONE; start = end, end = breaks->next()) {
    std::string piece;
    text.tempSubStringBetween(start, end).toUTF8String(piece);
    sentence += piece;
    size_t last = sentence.size();
    while (last > 0 && is_space(sentence[last - 1])) --last;
    const bool more = end < text.length();
    if (more && impl_->abbreviations.count(last_word(sentence.substr(0, last)))) continue;
    close();
  }
  if (!sentence.empty()) close();
  return out;
}

}  // namespace trafo::text
