#include "translation_cache.h"

namespace trafo::serve::detail {

std::optional<inference::Translated> TranslationCache::find(const std::string& key) {
  std::lock_guard lock(mutex_);
  const auto found = index_.find(key);
  if (found == index_.end()) return std::nullopt;
  entries_.splice(entries_.begin(), entries_, found->second);
  return found->second->second;
}

void TranslationCache::store(const std::string& key, const inference::Translated& translated) {
  if (capacity_ <= 0) return;
  std::lock_guard lock(mutex_);
  if (const auto found = index_.find(key); found != index_.end()) {
    entries_.splice(entries_.begin(), entries_, found->second);
    return;
  }
  entries_.emplace_front(key, translated);
  index_.emplace(key, entries_.begin());
  if (static_cast<int64_t>(entries_.size()) > capacity_) {
    index_.erase(entries_.back().first);
    entries_.pop_back();
  }
}

int64_t TranslationCache::size() const {
  std::lock_guard lock(mutex_);
  return static_cast<int64_t>(entries_.size());
}

}  // namespace trafo::serve::detail
