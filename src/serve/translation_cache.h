// Serve's translation cache (--cache-sentences): the last N sentences translated, by what decides
// their translation (the direction, every decoding option, the sentence and its prefix), so that a
// sentence asked again is answered from memory. Translations are batch-independent, so an answer
// from the cache is the one decoding would give. Least recently used entries leave first.
#pragma once

#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "trafo/inference/translation.h"

namespace trafo::serve::detail {

class TranslationCache {
 public:
  explicit TranslationCache(int64_t capacity) : capacity_(capacity) {}

  // The translation stored under `key`, now the most recently used; nullopt when there is none.
  std::optional<inference::Translated> find(const std::string& key);
  // Stores `translated` under `key`; past the capacity, the least recently used entry leaves.
  void store(const std::string& key, const inference::Translated& translated);
  int64_t size() const;

 private:
  using Entry = std::pair<std::string, inference::Translated>;
  int64_t capacity_;
  mutable std::mutex mutex_;
  std::list<Entry> entries_;  // most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
};

}  // namespace trafo::serve::detail
