#include "trafo/data/case_variants.h"

#include <utf8.h>

#include <algorithm>
#include <array>
#include <iterator>
#include <locale>
#include <optional>
#include <stdexcept>
#include <utility>

namespace trafo::data {
namespace {

static_assert(sizeof(wchar_t) == sizeof(char32_t), "code points are passed to the locale as wchar_t");

// The C.UTF-8 locale's case table for letters beyond ASCII; none where the system lacks it.
const std::optional<std::locale>& case_table() {
  static const std::optional<std::locale> table = []() -> std::optional<std::locale> {
    for (const char* name : {"C.UTF-8", "C.utf8"}) {
      try {
        return std::locale(name);
      } catch (const std::runtime_error&) {
      }
    }
    return std::nullopt;
  }();
  return table;
}

bool is_letter(char32_t c) {
  if (c < 0x80) return (c >= U'a' && c <= U'z') || (c >= U'A' && c <= U'Z');
  const auto& table = case_table();
  return table && std::isalpha(static_cast<wchar_t>(c), *table);
}

char32_t upper(char32_t c) {
  if (c < 0x80) return c >= U'a' && c <= U'z' ? c - (U'a' - U'A') : c;
  const auto& table = case_table();
  return table ? static_cast<char32_t>(std::toupper(static_cast<wchar_t>(c), *table)) : c;
}

bool is_lower(char32_t c) { return upper(c) != c; }

// What separates words: spaces and tabs, and the no-break spaces French puts before ? ! : ; and »
// (which SentencePiece's NFKC normalisation reads as spaces too).
bool separates(char32_t c) { return c == U' ' || c == U'\t' || c == 0x00A0 || c == 0x202F || c == 0x2009; }

bool opens(char32_t c) { return std::u32string_view(U"([\"'«“‘¿¡").find(c) != std::u32string_view::npos; }
bool closes(char32_t c) { return std::u32string_view(U")]\"'».,:;!?…”’").find(c) != std::u32string_view::npos; }
bool joins(char32_t c) { return c == U'\'' || c == U'’' || c == U'-'; }

// A word's letters between what opens and closes it: [first, last) in `word`, empty unless the
// word is plain (letters, with apostrophes and hyphens between them).
std::pair<size_t, size_t> plain_core(const std::u32string& word) {
  size_t first = 0, last = word.size();
  while (first < last && opens(word[first])) ++first;
  while (last > first && closes(word[last - 1])) --last;
  if (first == last || !is_letter(word[first]) || !is_letter(word[last - 1])) return {0, 0};
  for (size_t i = first; i < last; ++i) {
    if (!is_letter(word[i]) && !joins(word[i])) return {0, 0};
  }
  return {first, last};
}

bool small_word(const std::u32string& core) {
  static constexpr std::array<std::u32string_view, 15> kSmall = {
      U"a", U"an", U"and", U"as", U"at", U"by", U"for", U"from", U"in", U"of", U"on", U"or", U"the", U"to", U"with"};
  return std::find(kSmall.begin(), kSmall.end(), core) != kSmall.end();
}

// Applies `change(word_index, core)` to each plain word's core, leaving the rest of `text` as it is.
template <typename Change>
std::string change_words(std::string_view text, Change change) {
  if (utf8::find_invalid(text.begin(), text.end()) != text.end()) return std::string(text);
  std::u32string line;
  utf8::unchecked::utf8to32(text.begin(), text.end(), std::back_inserter(line));
  int index = 0;
  for (size_t i = 0; i < line.size();) {
    if (separates(line[i])) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < line.size() && !separates(line[end])) ++end;
    std::u32string word = line.substr(i, end - i);
    const auto [first, last] = plain_core(word);
    if (first < last) {
      std::u32string core = word.substr(first, last - first);
      change(index, core);
      std::copy(core.begin(), core.end(), line.begin() + static_cast<std::ptrdiff_t>(i + first));
    }
    ++index;
    i = end;
  }
  std::string out;
  utf8::unchecked::utf32to8(line.begin(), line.end(), std::back_inserter(out));
  return out;
}

bool all_lower(const std::u32string& core) {
  return std::none_of(core.begin(), core.end(), [](char32_t c) { return is_letter(c) && !is_lower(c); });
}

}  // namespace

std::string all_caps(std::string_view text) {
  return change_words(text,
                      [](int, std::u32string& core) { std::transform(core.begin(), core.end(), core.begin(), upper); });
}

std::string english_title_case(std::string_view text) {
  return change_words(text, [](int index, std::u32string& core) {
    if (all_lower(core) && (index == 0 || !small_word(core))) core[0] = upper(core[0]);
  });
}

std::string sentence_case(std::string_view text) {
  return change_words(text, [](int index, std::u32string& core) {
    if (index == 0 && all_lower(core)) core[0] = upper(core[0]);
  });
}

}  // namespace trafo::data
