#include "trafo/checkpoint/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "trafo/errors.h"
#include "trafo/json.h"
#include "trafo/util/hex.h"

namespace trafo::checkpoint {
namespace {

using util::hex;

constexpr char kChecksumKey[] = "checksum";
constexpr char kZeroChecksum[] = "0000000000000000";

struct DType {
  const char* name;
  at::ScalarType type;
  size_t bytes;
};
// The safetensors names of the dtypes trafo reads; largest element first (the write order).
constexpr DType kDTypes[] = {{"I64", at::kLong, 8}, {"F64", at::kDouble, 8}, {"F32", at::kFloat, 4},
                             {"I32", at::kInt, 4},  {"BF16", at::kBFloat16, 2}, {"F16", at::kHalf, 2},
                             {"U8", at::kByte, 1},  {"BOOL", at::kBool, 1}};

const DType* dtype_named(const std::string& name) {
  for (const auto& dtype : kDTypes) {
    if (name == dtype.name) return &dtype;
  }
  return nullptr;
}

const DType& dtype_of(at::ScalarType type) {
  for (const auto& dtype : kDTypes) {
    if (dtype.type == type) return dtype;
  }
  throw std::logic_error(std::string("safetensors: no dtype for ") + c10::toString(type));
}

void put_u64(std::string& out, uint64_t value) {
  for (int i = 0; i < 8; ++i) out += static_cast<char>((value >> (8 * i)) & 0xff);
}

uint64_t get_u64(const unsigned char* bytes) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | bytes[i];
  return value;
}

// The file, mapped copy-on-write: tensors may be changed in place without touching the file.
struct Mapping {
  void* data = MAP_FAILED;
  size_t size = 0;
  ~Mapping() {
    if (data != MAP_FAILED) ::munmap(data, size);
  }
};

std::shared_ptr<Mapping> map_file(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw InputError("cannot read " + path.string() + ": " + std::strerror(errno));
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    throw InputError("cannot read " + path.string() + ": not a regular file");
  }
  auto mapping = std::make_shared<Mapping>();
  mapping->size = static_cast<size_t>(info.st_size);
  if (mapping->size > 0) {
    mapping->data = ::mmap(nullptr, mapping->size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  }
  const int error = errno;
  ::close(fd);
  if (mapping->size > 0 && mapping->data == MAP_FAILED) {
    throw InputError("cannot map " + path.string() + ": " + std::strerror(error));
  }
  return mapping;
}

// XXH3-64 of the file with the checksum's 16 digits, at `at` in it, read as zeros.
uint64_t file_checksum(const char* data, size_t size, size_t at) {
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  XXH3_64bits_update(state, data, at);
  XXH3_64bits_update(state, kZeroChecksum, 16);
  XXH3_64bits_update(state, data + at + 16, size - at - 16);
  const uint64_t hash = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return hash;
}

// Where the checksum's digits sit in the file: once, as "checksum":"<16 hex digits>" in the header
// (a name or value inside a JSON string has its quotes escaped, so only the entry itself matches).
size_t checksum_position(const std::string_view header, const std::string& path) {
  const std::string key = std::string("\"") + kChecksumKey + "\":\"";
  const auto found = header.find(key);
  if (found == std::string_view::npos || header.find(key, found + 1) != std::string_view::npos ||
      found + key.size() + 17 > header.size() || header[found + key.size() + 16] != '"') {
    throw InputError("corrupt checkpoint " + path + ": its header holds no single checksum");
  }
  return 8 + found + key.size();
}

}  // namespace

bool looks_like_safetensors(const std::string& prefix) {
  if (prefix.size() < 9) return false;
  const uint64_t length = get_u64(reinterpret_cast<const unsigned char*>(prefix.data()));
  return length >= 2 && length <= kMaxHeaderBytes && prefix[8] == '{';
}

std::string to_safetensors(const Safetensors& contents) {
  std::vector<std::pair<std::string, at::Tensor>> order;
  for (const auto& [name, tensor] : contents.tensors) order.emplace_back(name, tensor.detach().cpu().contiguous());
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return dtype_of(a.second.scalar_type()).bytes > dtype_of(b.second.scalar_type()).bytes;
  });
  nlohmann::json header = nlohmann::json::object();
  nlohmann::json metadata(contents.metadata);
  metadata[kChecksumKey] = kZeroChecksum;
  header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : order) {
    const auto bytes = static_cast<uint64_t>(tensor.nbytes());
    header[name] = {{"dtype", dtype_of(tensor.scalar_type()).name},
                    {"shape", tensor.sizes().vec()},
                    {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out;
  out.reserve(8 + text.size() + offset);
  put_u64(out, text.size());
  out += text;
  for (const auto& [name, tensor] : order) {
    out.append(static_cast<const char*>(tensor.data_ptr()), tensor.nbytes());
  }
  return with_checksum(std::move(out));
}

std::string with_checksum(std::string file) {
  if (file.size() < 8) throw InputError("not a safetensors file: shorter than its header length");
  const uint64_t header_size = std::min<uint64_t>(get_u64(reinterpret_cast<const unsigned char*>(file.data())),
                                                  file.size() - 8);
  const size_t at = checksum_position(std::string_view(file).substr(8, header_size), "(safetensors bytes)");
  file.replace(at, 16, hex(file_checksum(file.data(), file.size(), at)));
  return file;
}

Safetensors read_safetensors(const std::filesystem::path& path, Writer writer) {
  const std::string name = path.string();
  const bool ours = writer == Writer::kTrafo;
  auto fail = [&](const std::string& why) -> InputError {
    return InputError((ours ? "corrupt checkpoint " : "corrupt safetensors file ") + name + ": " + why);
  };
  const auto mapping = map_file(path);
  const auto* bytes = static_cast<const unsigned char*>(mapping->data);
  if (mapping->size < 8) throw fail("shorter than a safetensors header");
  const uint64_t header_size = get_u64(bytes);
  if (header_size > kMaxHeaderBytes || header_size > mapping->size - 8) {
    throw fail("its header claims " + std::to_string(header_size) + " bytes of a " + std::to_string(mapping->size) +
               "-byte file");
  }
  const std::string_view header(reinterpret_cast<const char*>(bytes) + 8, header_size);
  if (ours) {
    const size_t at = checksum_position(header, name);
    const std::string stored(reinterpret_cast<const char*>(bytes) + at, 16);
    if (hex(file_checksum(reinterpret_cast<const char*>(bytes), mapping->size, at)) != stored) {
      throw fail("its bytes fail their checksum");
    }
  }

  // Checked (kTrafo): what follows reads a header trafo wrote, or one written to pass the checksum.
  Safetensors result;
  nlohmann::json json;
  try {
    json = parse_json(header, "its header");
  } catch (const nlohmann::json::exception&) {
    throw fail("its header is not JSON");
  } catch (const JsonTooDeep& e) {
    throw fail(e.what());
  }
  if (!json.is_object()) throw fail("its header is not a JSON object");
  const uint64_t data_size = mapping->size - 8 - header_size;
  char* data = static_cast<char*>(mapping->data) + 8 + header_size;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const auto& [key, entry] : json.items()) {
    if (key == "__metadata__") {
      if (!entry.is_object()) throw fail("__metadata__ is not an object");
      for (const auto& [meta_key, value] : entry.items()) {
        if (!value.is_string()) throw fail("metadata " + meta_key + " is not a string");
        if (meta_key != kChecksumKey) result.metadata[meta_key] = value.get<std::string>();
      }
      continue;
    }
    const auto* dtype = entry.is_object() && entry.contains("dtype") && entry["dtype"].is_string()
                            ? dtype_named(entry["dtype"].get<std::string>())
                            : nullptr;
    if (dtype == nullptr) throw fail("tensor " + key + " has no dtype trafo reads");
    const auto& shape = entry.value("shape", nlohmann::json());
    const auto& offsets = entry.value("data_offsets", nlohmann::json());
    if (!shape.is_array() || !offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
        !offsets[1].is_number_unsigned()) {
      throw fail("tensor " + key + " has no valid shape or data_offsets");
    }
    std::vector<int64_t> sizes;
    uint64_t elements = 1;
    for (const auto& size : shape) {
      if (!size.is_number_unsigned() || size.get<uint64_t>() > data_size) throw fail("tensor " + key + ": bad shape");
      sizes.push_back(size.get<int64_t>());
      elements = sizes.back() == 0 ? 0 : (elements > data_size / sizes.back() ? data_size + 1 : elements * sizes.back());
    }
    const uint64_t begin = offsets[0].get<uint64_t>(), end = offsets[1].get<uint64_t>();
    if (begin > end || end > data_size || elements > data_size || elements * dtype->bytes != end - begin) {
      throw fail("tensor " + key + "'s bytes do not fit its shape or the file");
    }
    ranges.emplace_back(begin, end);
    // The mapping lives as long as any tensor made from it.
    result.tensors[key] = torch::from_blob(
        data + begin, sizes, [mapping](void*) {}, torch::TensorOptions().dtype(dtype->type));
  }
  std::sort(ranges.begin(), ranges.end());
  uint64_t covered = 0;
  for (const auto& [begin, end] : ranges) {
    if (begin != covered) throw fail("its tensors overlap or leave gaps in the data section");
    covered = end;
  }
  if (covered != data_size) throw fail("its data section holds bytes no tensor names");
  return result;
}

}  // namespace trafo::checkpoint
