// --api-keys FILE: the keys a server takes (serve/http_server.h).
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "trafo/errors.h"
#include "trafo/serve/http_server.h"

namespace trafo::serve {

std::vector<std::string> read_api_keys(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) throw InputError("--api-keys " + path + " is a directory, not a file");
  std::ifstream in(path);
  if (!in) throw InputError("cannot read --api-keys " + path);
  std::vector<std::string> keys;
  for (std::string line; std::getline(in, line);) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
    const auto start = line.find_first_not_of(" \t");
    if (start == std::string::npos || line[start] == '#') continue;
    keys.push_back(line.substr(start));
  }
  if (keys.empty()) throw InputError("--api-keys " + path + " holds no key (one a line)");
  return keys;
}

}  // namespace trafo::serve
