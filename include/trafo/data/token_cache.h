// A corpus tokenized once: its pieces in a binary file that later starts, resumes and new runs on the
// same files map instead of tokenizing again (docs/design.md "Token cache").
//
// One file per corpus, FOLDER/corpus-IDENTITY.tokens, where IDENTITY hashes what the pieces depend on:
// the two files' paths, the tokenizer, the length filters, the tag, the case variants asked for and,
// for a sampled segmentation (subword regularisation), its number and alpha. Its header also holds the files'
// sizes and modification times: a file changed since is a stale cache, rebuilt, as is one whose
// checksum (XXH3 of its tokens and of its records) does not match.
#pragma once

#include <filesystem>
#include <string>

#include "trafo/data/corpus.h"

namespace trafo::data {

class Tokenizer;

struct CachedCorpus {
  Corpus corpus;               // mapped from `file`
  std::filesystem::path file;
  bool built = false;          // false: an existing cache was mapped
  std::string rebuilt_because; // why an existing file was built again ("" when it was missing or reused)
  double seconds = 0.0;        // to map it, or to build it
};

// Maps the token cache of `source` / `target` in `folder`, building it first when it is missing, stale
// or corrupt (a warning says which). Building reads the files in chunks that `threads` threads tokenize
// side by side, keeping line order; a bad line is an InputError naming its file and line, as
// Corpus::load does, and leaves no cache behind. A folder that cannot be created or written is an
// InputError naming it.
CachedCorpus open_token_cache(const std::filesystem::path& folder, const std::filesystem::path& source,
                              const std::filesystem::path& target, const Tokenizer& tokenizer,
                              const CorpusOptions& options, int threads);

// A file's identity for cache keys: its absolute path, size and modification time.
std::string file_stamp(const std::filesystem::path& path);

// check_parallel_files, done once per version of the two files: the line count is kept in `folder`
// under a name made of the files' stamps, and read back while they keep them.
int64_t check_parallel_files_once(const std::filesystem::path& folder, const std::filesystem::path& source,
                                  const std::filesystem::path& target);

// Throws InputError unless `folder` exists or can be created and a file can be written in it.
void check_cache_folder(const std::filesystem::path& folder);

}  // namespace trafo::data
