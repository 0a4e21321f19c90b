#include "fuzz_support.h"


#include <unistd.h>

#include <fstream>

#include "trafo/util/files.h"

namespace trafo::fuzz {
namespace {

struct ScratchDir {
  std::filesystem::path path;
  ScratchDir() {
    const char* base = std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : "/tmp";
    std::string pattern = std::string(base) + "/trafo-fuzz-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) finding("cannot make a scratch folder under " + std::string(base));
    path = pattern;
  }
  ~ScratchDir() { util::remove_tree(path); }
};

}  // namespace

const std::filesystem::path& scratch_dir() {
  static const ScratchDir dir;
  return dir.path;
}

std::filesystem::path write_scratch(const std::string& name, std::string_view bytes) {
  const auto path = scratch_dir() / name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) finding("cannot write the scratch file " + path.string());
  return path;
}

std::pair<std::string_view, std::string_view> split_once(std::string_view data, char separator) {
  const auto at = data.find(separator);
  if (at == std::string_view::npos) return {data, {}};
  return {data.substr(0, at), data.substr(at + 1)};
}

std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> lines;
  while (!text.empty()) {
    const auto [line, rest] = split_once(text, '\n');
    lines.emplace_back(line);
    if (line.size() == text.size()) break;
    text = rest;
  }
  return lines;
}

}  // namespace trafo::fuzz
