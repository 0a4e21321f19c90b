#include "trafo/data/token_cache.h"

#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <future>
#include <iterator>
#include <thread>
#include <nlohmann/json.hpp>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "trafo/data/tokenizer.h"
#include "trafo/errors.h"
#include "trafo/json.h"
#include "trafo/test_hooks.h"
#include "trafo/util/files.h"
#include "trafo/util/hex.h"

namespace trafo::data {
namespace {

constexpr char kCacheMagic[8] = {'T', 'R', 'A', 'F', 'O', 'T', 'C', '1'};
constexpr int64_t kChunkPairs = 8192;  // line pairs one thread tokenizes at a time
constexpr size_t kReadBlock = 1 << 20;

// The fixed part of the header; the key (JSON) follows it, then zeros up to header_bytes.
struct Header {
  char magic[8];
  uint64_t header_bytes;
  uint64_t key_bytes;
  uint64_t pairs;
  uint64_t tokens;
  uint64_t lines_read, skipped_empty, skipped_too_long, skipped_ratio;
  uint64_t tokens_checksum;   // XXH3-64 of the token array as stored
  uint64_t records_checksum;  // XXH3-64 of the records
};
static_assert(sizeof(Header) == 88, "the token cache's header layout");

uint64_t round_up(uint64_t value, uint64_t to) { return (value + to - 1) / to * to; }

uint64_t tokens_bytes(uint64_t tokens) { return round_up(tokens * sizeof(int32_t), 8); }

uint64_t expected_size(const Header& header) {
  return header.header_bytes + tokens_bytes(header.tokens) + header.pairs * sizeof(PairRecord);
}

constexpr char kCacheAdvice[] = "give --cache-dir a folder that can be written";

// A full disk is a failure at run time, a folder that cannot be written bad input (trafo/errors.h).
[[noreturn]] void cannot_write(const std::filesystem::path& path, int error) {
  throw_write_error("the token cache " + path.string(), error, kCacheAdvice);
}

// A file descriptor closed on every way out.
struct Fd {
  int fd = -1;
  explicit Fd(int value) : fd(value) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

void write_all(int fd, const void* data, size_t size, const std::filesystem::path& path) {
  const char* bytes = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t written = ::write(fd, bytes, size);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) cannot_write(path, written < 0 ? errno : ENOSPC);
    bytes += written;
    size -= static_cast<size_t>(written);
  }
}

bool read_all(int fd, void* data, size_t size, uint64_t offset) {
  char* bytes = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t got = ::pread(fd, bytes, size, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    bytes += got;
    size -= static_cast<size_t>(got);
    offset += static_cast<uint64_t>(got);
  }
  return true;
}

// XXH3 of `size` bytes at `offset`, read through a small buffer rather than the mapping, so that
// checking a large cache does not make its pages part of this process's memory.
bool checksum_of(int fd, uint64_t offset, uint64_t size, uint64_t& hash) {
  XXH3_state_t state;
  XXH3_64bits_reset(&state);
  std::vector<char> buffer(kReadBlock);
  while (size > 0) {
    const size_t block = static_cast<size_t>(std::min<uint64_t>(size, buffer.size()));
    if (!read_all(fd, buffer.data(), block, offset)) return false;
    XXH3_64bits_update(&state, buffer.data(), block);
    offset += block;
    size -= block;
  }
  hash = XXH3_64bits_digest(&state);
  return true;
}

// What the pieces depend on, apart from the files' contents.
nlohmann::json identity(const std::filesystem::path& source, const std::filesystem::path& target,
                        const Tokenizer& tokenizer, const CorpusOptions& options) {
  auto absolute = [](const std::filesystem::path& path) {
    std::error_code error;
    const auto resolved = std::filesystem::weakly_canonical(std::filesystem::absolute(path), error);
    return (error ? std::filesystem::absolute(path) : resolved).string();
  };
  const auto& model = tokenizer.to_bytes();
  // format 2: a source's leading language code is its reserved piece (Tokenizer::encode)
  nlohmann::json id = {{"format", 2},
                       {"source", absolute(source)},
                       {"target", absolute(target)},
                       {"tokenizer", util::hex(XXH3_64bits(model.data(), model.size()))},
                       {"max_length", options.max_length},
                       {"max_length_ratio", options.max_length_ratio},
                       {"tag", options.tag},
                       {"tag_pieces", options.tag_pieces}};
  if (options.sample > 0) id["sample"] = {{"number", options.sample}, {"alpha", options.sample_alpha}};
  if (options.all_caps_every > 0 || options.title_case_every > 0) {
    id["case_variants"] = {{"all_caps_every", options.all_caps_every}, {"title_case_every", options.title_case_every}};
  }
  return id;
}

struct Mapping {
  void* address = MAP_FAILED;
  size_t size = 0;
  ~Mapping() {
    if (address != MAP_FAILED) ::munmap(address, size);
  }
};

// Maps a cache file whose header was checked; the corpus keeps the mapping alive.
Corpus map_cache(int fd, const Header& header, const std::filesystem::path& path) {
  auto mapping = std::make_shared<Mapping>();
  mapping->size = static_cast<size_t>(expected_size(header));
  mapping->address = ::mmap(nullptr, mapping->size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (mapping->address == MAP_FAILED) {
    throw RunError("cannot map the token cache " + path.string() + ": " + std::strerror(errno));
  }
  const char* base = static_cast<const char*>(mapping->address);
  const auto* tokens = reinterpret_cast<const int32_t*>(base + header.header_bytes);
  const auto* records = reinterpret_cast<const PairRecord*>(base + header.header_bytes + tokens_bytes(header.tokens));
  CorpusCounts counts{static_cast<int64_t>(header.lines_read), static_cast<int64_t>(header.skipped_empty),
                      static_cast<int64_t>(header.skipped_too_long), static_cast<int64_t>(header.skipped_ratio)};
  return Corpus::view(mapping, records, static_cast<int64_t>(header.pairs), tokens, counts);
}

// Why the existing file at `path` cannot serve `key` ("" when it can); `header` gets its header.
std::string check_existing(int fd, const nlohmann::json& key, Header& header) {
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) return "it is not a regular file";
  if (!read_all(fd, &header, sizeof header, 0) ||
      std::memcmp(header.magic, kCacheMagic, sizeof kCacheMagic) != 0 || header.header_bytes < sizeof header ||
      header.key_bytes > header.header_bytes - sizeof header || header.header_bytes % 8 != 0) {
    return "it is not a complete token cache";
  }
  std::string stored(header.key_bytes, '\0');
  if (!read_all(fd, stored.data(), stored.size(), sizeof header)) return "it is not a complete token cache";
  nlohmann::json stored_key;
  try {
    stored_key = parse_json(stored, "its key", /*allow_exceptions=*/false);
  } catch (const JsonTooDeep&) {
    return "its key is not a key of trafo's";
  }
  if (stored_key != key) {
    if (stored_key.is_object() && stored_key.value("identity", nlohmann::json()) == key["identity"]) {
      return "the data files changed since it was built";
    }
    return "its key does not match its name";
  }
  if (static_cast<uint64_t>(info.st_size) != expected_size(header)) return "its size does not match its header";
  uint64_t tokens_hash = 0, records_hash = 0;
  if (!checksum_of(fd, header.header_bytes, tokens_bytes(header.tokens), tokens_hash) ||
      !checksum_of(fd, header.header_bytes + tokens_bytes(header.tokens), header.pairs * sizeof(PairRecord),
                   records_hash) ||
      tokens_hash != header.tokens_checksum || records_hash != header.records_checksum) {
    return "its checksum does not match (a damaged file)";
  }
  return "";
}

// Temporary files removed on every way out but success.
struct TemporaryFiles {
  std::vector<std::filesystem::path> paths;
  bool keep = false;
  ~TemporaryFiles() {
    if (keep) return;
    for (const auto& path : paths) ::unlink(path.c_str());
  }
};

// Temporary files of a build whose process is gone (killed mid-build) are removed; a build that still
// runs keeps its own.
void remove_abandoned_builds(const std::filesystem::path& path) {
  std::error_code error;
  const std::string prefix = path.filename().string() + ".";
  for (const auto& entry : std::filesystem::directory_iterator(path.parent_path(), error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0 || name.size() < prefix.size() + 4 ||
        name.compare(name.size() - 4, 4, ".tmp") != 0) {
      continue;
    }
    const auto digits = name.substr(0, name.size() - 4);
    const auto dot = digits.find_last_of('.');
    const long pid = std::atol(digits.c_str() + dot + 1);
    if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) ::unlink(entry.path().c_str());
  }
}

Header build(const std::filesystem::path& path, const std::filesystem::path& source,
             const std::filesystem::path& target, const Tokenizer& tokenizer, const CorpusOptions& options, int threads,
             const std::string& key) {
  remove_abandoned_builds(path);
  const std::string suffix = "." + std::to_string(::getpid()) + ".tmp";
  TemporaryFiles temporary;
  const auto main_path = path.string() + suffix, records_path = path.string() + ".records" + suffix;
  temporary.paths = {main_path, records_path};
  Fd out(::open(main_path.c_str(), O_CREAT | O_TRUNC | O_RDWR | O_CLOEXEC, 0644));
  if (out.fd < 0) cannot_write(path, errno);
  Fd side(::open(records_path.c_str(), O_CREAT | O_TRUNC | O_RDWR | O_CLOEXEC, 0644));
  if (side.fd < 0) cannot_write(path, errno);

  Header header{};
  std::memcpy(header.magic, kCacheMagic, sizeof kCacheMagic);
  header.key_bytes = key.size();
  header.header_bytes = round_up(sizeof header + key.size(), 4096);
  const std::vector<char> zeros(header.header_bytes, 0);
  write_all(out.fd, zeros.data(), zeros.size(), path);

  XXH3_state_t tokens_state, records_state;
  XXH3_64bits_reset(&tokens_state);
  XXH3_64bits_reset(&records_state);
  LinePairReader reader(source, target);
  std::deque<std::future<EncodedChunk>> pending;
  auto write_next = [&] {
    auto chunk = pending.front().get();
    pending.pop_front();
    check_no_tag_in_text(chunk, source, target, tokenizer);
    for (auto& record : chunk.records) {
      record.source_start += static_cast<int64_t>(header.tokens);
      record.target_start += static_cast<int64_t>(header.tokens);
    }
    const size_t token_bytes = chunk.tokens.size() * sizeof(int32_t),
                 record_bytes = chunk.records.size() * sizeof(PairRecord);
    write_all(out.fd, chunk.tokens.data(), token_bytes, path);
    write_all(side.fd, chunk.records.data(), record_bytes, path);
    XXH3_64bits_update(&tokens_state, chunk.tokens.data(), token_bytes);
    XXH3_64bits_update(&records_state, chunk.records.data(), record_bytes);
    header.tokens += chunk.tokens.size();
    header.pairs += chunk.records.size();
    header.lines_read += static_cast<uint64_t>(chunk.counts.lines_read);
    header.skipped_empty += static_cast<uint64_t>(chunk.counts.skipped_empty);
    header.skipped_too_long += static_cast<uint64_t>(chunk.counts.skipped_too_long);
    header.skipped_ratio += static_cast<uint64_t>(chunk.counts.skipped_ratio);
    // Test hook (tests/corpora_cli_test.cpp): each chunk written waits this long, as on a slow disk,
    // so that a test's kill lands while the cache is being built, however fast the machine.
    if (const int delay_ms = test_hooks().cache_chunk_delay_ms; delay_ms > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    }
  };
  // This thread reads and writes in line order; `threads` chunks are tokenized side by side meanwhile.
  std::vector<std::string> sources, targets;
  while (reader.read(kChunkPairs, sources, targets)) {
    const int64_t first_line = reader.lines_read() - static_cast<int64_t>(sources.size()) + 1;
    pending.push_back(std::async(std::launch::async,
                                 [&tokenizer, &options, first_line, s = std::move(sources), t = std::move(targets)] {
                                   return encode_pairs(s, t, first_line, tokenizer, options);
                                 }));
    sources = {};
    targets = {};
    while (static_cast<int>(pending.size()) >= std::max(1, threads)) write_next();
  }
  while (!pending.empty()) write_next();
  const uint64_t padding = tokens_bytes(header.tokens) - header.tokens * sizeof(int32_t);
  write_all(out.fd, zeros.data(), padding, path);
  XXH3_64bits_update(&tokens_state, zeros.data(), padding);
  header.tokens_checksum = XXH3_64bits_digest(&tokens_state);
  header.records_checksum = XXH3_64bits_digest(&records_state);

  std::vector<char> buffer(kReadBlock);
  for (uint64_t offset = 0, size = header.pairs * sizeof(PairRecord); offset < size;) {
    const size_t block = static_cast<size_t>(std::min<uint64_t>(size - offset, buffer.size()));
    if (!read_all(side.fd, buffer.data(), block, offset)) cannot_write(path, EIO);
    write_all(out.fd, buffer.data(), block, path);
    offset += block;
  }
  std::vector<char> head(zeros);
  std::memcpy(head.data(), &header, sizeof header);
  std::memcpy(head.data() + sizeof header, key.data(), key.size());
  const ssize_t head_written = ::pwrite(out.fd, head.data(), head.size(), 0);
  if (head_written != static_cast<ssize_t>(head.size())) cannot_write(path, head_written < 0 ? errno : ENOSPC);
  if (::fsync(out.fd) != 0) cannot_write(path, errno);
  if (::rename(main_path.c_str(), path.c_str()) != 0) cannot_write(path, errno);
  return header;
}

}  // namespace

std::string file_stamp(const std::filesystem::path& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return path.string() + " missing";
  return std::filesystem::absolute(path).string() + " " + std::to_string(info.st_size) + " bytes, modified " +
         std::to_string(info.st_mtim.tv_sec) + "." + std::to_string(info.st_mtim.tv_nsec);
}

int64_t check_parallel_files_once(const std::filesystem::path& folder, const std::filesystem::path& source,
                                  const std::filesystem::path& target) {
  check_text_file(source);
  check_text_file(target);
  const std::string stamps = "checked 1\n" + file_stamp(source) + "\n" + file_stamp(target) + "\n";
  const auto path = folder / ("checked-" + util::hex(XXH3_64bits(stamps.data(), stamps.size())) + ".txt");
  if (util::special_kind(path).empty()) {  // never a pipe's open(), which waits for a writer
    std::ifstream in(path);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    long long lines = 0;
    if (in.eof() && text.rfind(stamps, 0) == 0 &&
        std::sscanf(text.c_str() + stamps.size(), "lines %lld", &lines) == 1 && lines > 0) {
      return lines;
    }
  }
  const int64_t lines = check_parallel_files(source, target);
  // A note for later starts; one that cannot be written only costs them this check again.
  const std::string temporary = path.string() + "." + std::to_string(::getpid()) + ".tmp";
  std::ofstream out(temporary);
  out << stamps << "lines " << lines << "\n";
  out.close();
  std::error_code ignored;
  if (out) std::filesystem::rename(temporary, path, ignored);
  std::filesystem::remove(temporary, ignored);
  return lines;
}

void check_cache_folder(const std::filesystem::path& folder) {
  std::error_code error;
  std::filesystem::create_directories(folder, error);
  if (error) {  // by throw_write_error's rule: a full disk is a failure at run time, a bad path bad input
    const std::string message = "cannot create the cache folder " + folder.string() + ": " + error.message();
    if (is_run_time_failure(error.value())) throw RunError(message);
    throw InputError(message + "; " + kCacheAdvice);
  }
  if (!std::filesystem::is_directory(folder)) {
    throw InputError("cannot create the cache folder " + folder.string() + ": a file of that name is in the way; " +
                     kCacheAdvice);
  }
  if (::access(folder.c_str(), W_OK | X_OK) != 0) {
    throw_write_error("in the cache folder " + folder.string(), errno, kCacheAdvice);
  }
}

CachedCorpus open_token_cache(const std::filesystem::path& folder, const std::filesystem::path& source,
                              const std::filesystem::path& target, const Tokenizer& tokenizer,
                              const CorpusOptions& options, int threads) {
  const auto started = std::chrono::steady_clock::now();
  check_text_file(source);
  check_text_file(target);
  const auto id = identity(source, target, tokenizer, options);
  const nlohmann::json key = {{"identity", id}, {"source", file_stamp(source)}, {"target", file_stamp(target)}};
  CachedCorpus cached;
  cached.file = folder / ("corpus-" + util::hex(XXH3_64bits(id.dump().data(), id.dump().size())) + ".tokens");
  Header header{};
  {
    // O_NONBLOCK: a named pipe in its place is opened without waiting for a writer, then replaced.
    Fd existing(::open(cached.file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
    if (existing.fd >= 0) {
      cached.rebuilt_because = check_existing(existing.fd, key, header);
      if (cached.rebuilt_because.empty()) {
        cached.corpus = map_cache(existing.fd, header, cached.file);
        cached.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        if (options.sample == 0) report_counts(source, target, cached.corpus.size(), cached.corpus.counts(), options);
        return cached;
      }
      spdlog::warn("rebuilding the token cache {}: {}", cached.file.string(), cached.rebuilt_because);
    }
  }
  check_cache_folder(folder);
  spdlog::info("tokenizing {} / {} on {} threads into the token cache {}", source.string(), target.string(),
               std::max(1, threads), cached.file.string());
  header = build(cached.file, source, target, tokenizer, options, threads, key.dump());
  Fd built(::open(cached.file.c_str(), O_RDONLY | O_CLOEXEC));
  if (built.fd < 0) cannot_write(cached.file, errno);
  cached.corpus = map_cache(built.fd, header, cached.file);
  cached.built = true;
  cached.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  // A sample holds the best segmentation's pairs, whose cache reported them.
  if (options.sample == 0) report_counts(source, target, cached.corpus.size(), cached.corpus.counts(), options);
  return cached;
}

}  // namespace trafo::data
