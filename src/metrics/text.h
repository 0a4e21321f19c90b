// Unicode text helpers shared by BLEU and chrF (private to src/metrics/). sacreBLEU works on
// Python str, that is on code points, so these do too: `split` is Python's str.split() (its
// whitespace set, not only ASCII), `lowercase` is close to str.lower().
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace trafo::metrics::text {

// Python's str.isspace(): ASCII whitespace, U+001C..U+001F, U+0085, and the Unicode spaces.
bool is_space(char32_t c);

// UTF-8 → code points; throws trafo::InputError on invalid UTF-8.
std::u32string decode(std::string_view utf8);
std::string encode(std::u32string_view code_points);

// Python's str.split() with no argument: runs of whitespace separate, no empty words.
std::vector<std::u32string> split(std::u32string_view line);

// Python's str.rstrip() with no argument.
std::u32string_view rstrip(std::u32string_view line);

// Every whitespace character removed: Python's ''.join(line.split()).
std::u32string remove_spaces(std::u32string_view line);

// Python's str.lower(): the C.UTF-8 locale's case tables, which agree with Python's for every
// code point but İ (lowered to i + U+0307, as Python does), and Greek final sigma (ς at the end
// of a word, with an approximate notion of "word"). Without that locale installed, only ASCII
// letters are lowered.
std::u32string lowercase(std::u32string_view line);

// Throws trafo::InputError naming `what` and the 1-based line number of the first line that
// is not valid UTF-8.
void check_utf8(const std::vector<std::string>& lines, const std::string& what);

// Hypotheses and every reference stream: valid UTF-8, and one reference line per hypothesis.
// `metric` names the caller in the error ("BLEU needs at least one reference stream").
void check_streams(const std::vector<std::string>& hypotheses,
                   const std::vector<std::vector<std::string>>& references, const std::string& metric);

}  // namespace trafo::metrics::text
