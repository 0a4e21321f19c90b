#include "trafo/util/base64.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "trafo/errors.h"

namespace trafo::util {
namespace {

constexpr char kBase64Digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

}  // namespace

std::string to_base64(const std::string& bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t left = std::min<size_t>(3, bytes.size() - i);
    uint32_t group = 0;
    for (size_t k = 0; k < 3; ++k) group = (group << 8) | (k < left ? static_cast<unsigned char>(bytes[i + k]) : 0u);
    for (size_t k = 0; k < 4; ++k) out += k <= left ? kBase64Digits[(group >> (18 - 6 * k)) & 63] : '=';
  }
  return out;
}

std::string from_base64(const std::string& text, const std::string& what) {
  auto value = [&](char c) -> uint32_t {
    const char* at = std::strchr(kBase64Digits, c);
    if (c == '\0' || at == nullptr) throw InputError(what + " is not base64");
    return static_cast<uint32_t>(at - kBase64Digits);
  };
  if (text.size() % 4 != 0) throw InputError(what + " is not base64");
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    const size_t padding = (text[i + 3] == '=') + (text[i + 2] == '=');
    if (padding > 0 && i + 4 != text.size()) throw InputError(what + " is not base64");
    uint32_t group = 0;
    for (size_t k = 0; k < 4; ++k) group = (group << 6) | (k < 4 - padding ? value(text[i + k]) : 0u);
    for (size_t k = 0; k < 3 - padding; ++k) out += static_cast<char>((group >> (16 - 8 * k)) & 0xff);
  }
  return out;
}

}  // namespace trafo::util
