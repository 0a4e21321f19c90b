#include "trafo/decode/output_text.h"

#include <cstdint>

namespace trafo::decode {
namespace {

// The length of the UTF-8 sequence at `text[i]`, or 0 when the bytes there are not valid UTF-8
// (overlong forms, surrogates and values past U+10FFFF included).
size_t sequence_length(std::string_view text, size_t i, uint32_t& code_point) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  size_t length = 0;
  uint32_t minimum = 0;
  if (lead < 0x80) {
    code_point = lead;
    return 1;
  } else if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2, code_point = lead & 0x1Fu, minimum = 0x80;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3, code_point = lead & 0x0Fu, minimum = 0x800;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4, code_point = lead & 0x07u, minimum = 0x10000;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0u) != 0x80u) return 0;
    code_point = (code_point << 6) | (byte(i + k) & 0x3Fu);
  }
  if (code_point < minimum || code_point > 0x10FFFF || (code_point >= 0xD800 && code_point <= 0xDFFF)) return 0;
  return length;
}

bool breaks_a_line(uint32_t code_point) {
  return code_point < 0x20 || (code_point >= 0x7F && code_point <= 0x9F) || code_point == 0x2028 ||
         code_point == 0x2029;
}

}  // namespace

std::string one_line(std::string_view text) {
  std::string line;
  line.reserve(text.size());
  bool space_pending = false;
  auto append = [&](std::string_view piece) {
    if (space_pending && !line.empty()) line += ' ';
    space_pending = false;
    line += piece;
  };
  for (size_t i = 0; i < text.size();) {
    uint32_t code_point = 0;
    const size_t length = sequence_length(text, i, code_point);
    if (length == 0) {
      append("\xEF\xBF\xBD");  // U+FFFD for one invalid byte
      ++i;
      continue;
    }
    if (code_point == ' ' || breaks_a_line(code_point)) {
      space_pending = true;
    } else {
      append(text.substr(i, length));
    }
    i += length;
  }
  return line;
}

int count_words(std::string_view line) {
  int words = 0;
  bool in_word = false;
  for (const char c : line) {
    const bool blank = c == ' ' || c == '\t';
    if (!blank && !in_word) ++words;
    in_word = !blank;
  }
  return words;
}

}  // namespace trafo::decode
