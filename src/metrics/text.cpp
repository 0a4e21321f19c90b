#include "text.h"

#include <utf8.h>

#include <locale>
#include <optional>

#include "trafo/errors.h"

namespace trafo::metrics::text {

static_assert(sizeof(wchar_t) == sizeof(char32_t), "lowercase() passes code points as wchar_t");

bool is_space(char32_t c) {
  if (c <= 0x20) return c == 0x20 || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F);
  if (c < 0x85) return false;
  return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
         c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

std::u32string decode(std::string_view utf8) {
  if (utf8::find_invalid(utf8.begin(), utf8.end()) != utf8.end()) {
    throw InputError("invalid UTF-8 in text given to a metric");
  }
  std::u32string out;
  out.reserve(utf8.size());
  utf8::unchecked::utf8to32(utf8.begin(), utf8.end(), std::back_inserter(out));
  return out;
}

std::string encode(std::u32string_view code_points) {
  std::string out;
  out.reserve(code_points.size());
  utf8::unchecked::utf32to8(code_points.begin(), code_points.end(), std::back_inserter(out));
  return out;
}

std::vector<std::u32string> split(std::u32string_view line) {
  std::vector<std::u32string> words;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && is_space(line[i])) ++i;
    const std::size_t start = i;
    while (i < line.size() && !is_space(line[i])) ++i;
    if (i > start) words.emplace_back(line.substr(start, i - start));
  }
  return words;
}

std::u32string_view rstrip(std::u32string_view line) {
  std::size_t end = line.size();
  while (end > 0 && is_space(line[end - 1])) --end;
  return line.substr(0, end);
}

std::u32string remove_spaces(std::u32string_view line) {
  std::u32string out;
  out.reserve(line.size());
  for (const char32_t c : line) {
    if (!is_space(c)) out.push_back(c);
  }
  return out;
}

namespace {

// The C.UTF-8 locale, if the system has it; made once, read-only afterwards.
const std::optional<std::locale>& utf8_locale() {
  static const std::optional<std::locale> locale = []() -> std::optional<std::locale> {
    for (const char* name : {"C.UTF-8", "C.utf8"}) {
      try {
        return std::locale(name);
      } catch (const std::runtime_error&) {
      }
    }
    return std::nullopt;
  }();
  return locale;
}

// Unicode's Final_Sigma context, as Python's str.lower() applies it: Σ becomes ς when a cased
// letter comes before it and none after it, case-ignorable characters skipped on both sides.
// Approximated here: "cased" is an upper- or lowercase letter or one with a case mapping,
// "case-ignorable" covers Latin, Greek and Cyrillic diacritics, modifier letters, apostrophes
// and dots, but not the marks of other scripts (Hebrew, Arabic, Indic, ...).
bool is_cased(char32_t c, const std::locale& locale) {
  const auto w = static_cast<wchar_t>(c);
  return std::isupper(w, locale) || std::islower(w, locale) || std::tolower(w, locale) != w ||
         std::toupper(w, locale) != w;
}

bool is_case_ignorable(char32_t c) {
  if (c < 0x80) return c == U'\'' || c == U'.' || c == U':' || c == U'^' || c == U'`';
  return c == 0xA8 || c == 0xAD || c == 0xAF || c == 0xB4 || c == 0xB7 || c == 0xB8 ||
         (c >= 0x02B0 && c <= 0x036F) ||  // modifier letters, combining diacritics
         c == 0x0387 || (c >= 0x0483 && c <= 0x0489) || (c >= 0x1DC0 && c <= 0x1DFF) ||
         (c >= 0x200B && c <= 0x200F) || c == 0x2018 || c == 0x2019 || c == 0x2024 || c == 0x2027 ||
         (c >= 0x20D0 && c <= 0x20FF) || (c >= 0xFE20 && c <= 0xFE2F) || c == 0xFF07 ||
         c == 0xFF0E || c == 0xFF1A;
}

bool is_final_sigma(std::u32string_view line, std::size_t at, const std::locale& locale) {
  std::size_t before = at;
  while (before > 0 && is_case_ignorable(line[before - 1])) --before;
  if (before == 0 || !is_cased(line[before - 1], locale)) return false;
  std::size_t after = at + 1;
  while (after < line.size() && is_case_ignorable(line[after])) ++after;
  return after == line.size() || !is_cased(line[after], locale);
}

}  // namespace

std::u32string lowercase(std::u32string_view line) {
  std::u32string out;
  out.reserve(line.size());
  const auto& locale = utf8_locale();
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char32_t c = line[i];
    if (c < 0x80) {
      out.push_back(c >= U'A' && c <= U'Z' ? c + (U'a' - U'A') : c);
    } else if (!locale) {
      out.push_back(c);
    } else if (c == 0x0130) {  // İ: the one code point whose lowercase is two (i + dot above)
      out.append({U'i', 0x0307});
    } else if (c == 0x03A3) {  // Σ
      out.push_back(is_final_sigma(line, i, *locale) ? 0x03C2 : 0x03C3);
    } else {
      // wchar_t holds a code point on the platforms we build for (32 bits, UTF-32).
      out.push_back(static_cast<char32_t>(std::tolower(static_cast<wchar_t>(c), *locale)));
    }
  }
  return out;
}

void check_utf8(const std::vector<std::string>& lines, const std::string& what) {
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (utf8::find_invalid(lines[i].begin(), lines[i].end()) != lines[i].end()) {
      throw InputError(what + ": invalid UTF-8 on line " + std::to_string(i + 1));
    }
  }
}

void check_streams(const std::vector<std::string>& hypotheses,
                   const std::vector<std::vector<std::string>>& references, const std::string& metric) {
  if (references.empty()) throw InputError(metric + " needs at least one reference stream");
  check_utf8(hypotheses, "hypotheses");
  for (std::size_t r = 0; r < references.size(); ++r) {
    const std::string name = "reference stream " + std::to_string(r + 1);
    if (references[r].size() != hypotheses.size()) {
      throw InputError(name + " has " + std::to_string(references[r].size()) + " lines but the hypotheses have " +
                       std::to_string(hypotheses.size()));
    }
    check_utf8(references[r], name);
  }
}

}  // namespace trafo::metrics::text
