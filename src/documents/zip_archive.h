// A zip archive in memory (libzip): its entries listed and read within a document's limits, and
// written again with some entries' contents replaced. Internal to documents/.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "trafo/documents/document.h"

typedef struct zip zip_t;

namespace trafo::documents::detail {

class ZipArchive {
 public:
  // Opens `bytes` (kept by reference: they must outlive the archive). InputError naming `what` for
  // bytes that are not a zip archive or a damaged one, more entries than limits.max_entries, or
  // entries that would unpack past limits.max_unpacked_bytes.
  ZipArchive(const std::string& bytes, const Limits& limits, const std::string& what);
  ~ZipArchive();
  ZipArchive(const ZipArchive&) = delete;
  ZipArchive& operator=(const ZipArchive&) = delete;

  // The entries' names, in the archive's order.
  const std::vector<std::string>& names() const { return names_; }
  bool has(const std::string& name) const;
  // Entry `name` unpacked; InputError where it is damaged or unpacks past its stated size.
  std::string read(const std::string& name) const;
  // The archive with the entries of `replaced` holding their new contents (deflated), every other
  // entry copied as it is stored (its compressed bytes and method), in the same order.
  std::string write(const std::map<std::string, std::string>& replaced) const;

 private:
  zip_t* zip_ = nullptr;
  std::string what_;
  std::vector<std::string> names_;
  std::vector<uint64_t> sizes_;   // each entry's stated unpacked size
  std::vector<int32_t> methods_;  // each entry's compression method
};

}  // namespace trafo::documents::detail
