#include "trafo/decode/language_check.h"

#include <utility>

namespace trafo::decode {

LanguageCheck::LanguageCheck(metrics::LanguageId identifier, std::map<int, std::string> targets)
    : identifier_(std::move(identifier)), targets_(std::move(targets)) {}

std::string LanguageCheck::asked(const std::vector<int>& source) const {
  if (source.empty()) return "";
  const auto found = targets_.find(source.front());
  return found == targets_.end() ? "" : found->second;
}

bool LanguageCheck::off_target(const std::string& text, const std::string& language) const {
  const auto label = identifier_.identify(text);
  return !label.empty() && label != language;
}

bool LanguageCheck::on_target(const std::string& text, const std::string& language) const {
  return identifier_.identify(text) == language;
}

}  // namespace trafo::decode
