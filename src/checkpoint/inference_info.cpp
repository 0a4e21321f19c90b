// InferenceInfo from the TOML text older checkpoints hold: the flat `key = value` lines and
// [[corpus]] tables that trafo writes (quoted strings without escapes), read line by line.
#include <algorithm>
#include <sstream>
#include <string>

#include "trafo/checkpoint/checkpoint.h"
#include "trafo/util/language_tag.h"

namespace trafo::checkpoint {
namespace {

std::string trim(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\r") - first + 1);
}

// A quoted value up to its closing quote, or a bare one up to a space or a comment.
std::string value_of(const std::string& text) {
  if (text.empty()) return "";
  if (text.front() == '"' || text.front() == '\'') {
    const auto close = text.find(text.front(), 1);
    return close == std::string::npos ? "" : text.substr(1, close - 1);
  }
  return text.substr(0, text.find_first_of(" \t#"));
}

}  // namespace

InferenceInfo inference_from_config(const std::string& toml) {
  InferenceInfo info;
  std::istringstream lines(toml.compare(0, 3, "\xEF\xBB\xBF") == 0 ? toml.substr(3) : toml);
  bool in_corpus = false;
  for (std::string line; std::getline(lines, line);) {
    line = trim(line);
    if (line.empty() || line.front() == '#') continue;
    if (line.rfind("[[corpus]]", 0) == 0) {
      in_corpus = true;
      continue;
    }
    const auto equals = line.find('=');
    if (equals == std::string::npos) continue;
    const std::string key = trim(line.substr(0, equals)), value = value_of(trim(line.substr(equals + 1)));
    if (in_corpus && key == "tag" && !value.empty() &&
        std::find(info.tags.begin(), info.tags.end(), value) == info.tags.end()) {
      info.tags.push_back(value);
    } else if (!in_corpus && key == "src-lang") {
      info.src_lang = value;
    } else if (!in_corpus && key == "tgt-lang") {
      info.tgt_lang = value;
    }
  }
  return info;
}

std::vector<std::string> InferenceInfo::target_languages() const {
  std::vector<std::string> codes;
  for (const auto& tag : tags) {
    if (const auto code = util::tag_language(tag); !code.empty()) codes.emplace_back(code);
  }
  return codes;
}

}  // namespace trafo::checkpoint
