// Base64 (RFC 4648, with '=' padding): binary data in text, such as a checkpoint's JSON metadata.
#pragma once

#include <string>

namespace trafo::util {

std::string to_base64(const std::string& bytes);

// Throws trafo::InputError naming `what` when `text` is not padded base64.
std::string from_base64(const std::string& text, const std::string& what);

}  // namespace trafo::util
