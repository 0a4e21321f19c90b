#include "trafo/checkpoint/archive_check.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>

#include <caffe2/serialize/inline_container.h>
#include <caffe2/serialize/read_adapter_interface.h>

#include "trafo/errors.h"

namespace trafo::checkpoint {
namespace {

// Reads within the archive only, as InputArchive::load_from's own adapter does.
class Bytes final : public caffe2::serialize::ReadAdapterInterface {
 public:
  Bytes(const char* data, size_t size) : data_(data), size_(size) {}
  size_t size() const override { return size_; }
  size_t read(uint64_t pos, void* buf, size_t n, const char*) const override {
    if (pos >= size_) return 0;
    const size_t count = std::min<size_t>(n, size_ - static_cast<size_t>(pos));
    std::memcpy(buf, data_ + pos, count);
    return count;
  }

 private:
  const char* data_;
  size_t size_;
};

uint64_t little_endian(const unsigned char* p, int bytes) {
  uint64_t value = 0;
  for (int i = bytes - 1; i >= 0; --i) value = (value << 8) | p[i];
  return value;
}

}  // namespace

void check_pickle(const char* data, size_t size, const std::string& what) {
  const auto* p = reinterpret_cast<const unsigned char*>(data);
  size_t at = 0;
  uint64_t filled = 0;  // memo slots so far: a pickler numbers them 0, 1, 2, ...
  auto fail = [&](const std::string& why) {
    throw InputError("corrupt checkpoint " + what + ": its pickle " + why + " at byte " + std::to_string(at));
  };
  // An argument of `bytes` bytes after the opcode, as a number.
  auto argument = [&](int bytes) {
    if (size - at - 1 < static_cast<size_t>(bytes)) fail("ends inside an opcode");
    return little_endian(p + at + 1, bytes);
  };
  auto put = [&](uint64_t slot) {
    if (slot > filled) fail("numbers memo slot " + std::to_string(slot) + " after filling " + std::to_string(filled));
    filled = std::max(filled, slot + 1);
  };
  // Skips the opcode at `at` and its argument of `bytes` bytes.
  auto skip = [&](uint64_t bytes) {
    if (bytes > size - at - 1) fail("gives a length of " + std::to_string(bytes) + " past its end");
    at += 1 + bytes;
  };
  auto skip_lines = [&](int lines) {
    size_t end = at;
    for (int i = 0; i < lines; ++i) {
      const void* newline = std::memchr(p + end + 1, '\n', size - end - 1);
      if (newline == nullptr) fail("ends inside a text argument");
      end = static_cast<size_t>(static_cast<const unsigned char*>(newline) - p);
    }
    at = end + 1;
  };
  // Opcodes of one argument shape share a line.
  // clang-format off
  while (at < size) {
    switch (p[at]) {
      case '.':  // STOP
        return;
      case 'q':  // BINPUT
        put(argument(1));
        skip(1);
        break;
      case 'r':  // LONG_BINPUT
        put(argument(4));
        skip(4);
        break;
      case 0x94:  // MEMOIZE
        put(filled);
        skip(0);
        break;
      case 'K': case 'h': case 0x80:  // BININT1, BINGET, PROTO
        skip(1);
        break;
      case 'M':  // BININT2
        skip(2);
        break;
      case 'J': case 'j':  // BININT, LONG_BINGET
        skip(4);
        break;
      case 'G': case 0x95:  // BINFLOAT, FRAME
        skip(8);
        break;
      case 'U': case 'C': case 0x8c: case 0x8a:  // SHORT_BINSTRING, SHORT_BINBYTES, SHORT_BINUNICODE, LONG1
        skip(1 + argument(1));
        break;
      case 'T': case 'B': case 'X': case 0x8b:  // BINSTRING, BINBYTES, BINUNICODE, LONG4
        skip(4 + argument(4));
        break;
      case 0x8d: case 0x8e: {  // BINUNICODE8, BINBYTES8
        const uint64_t length = argument(8);
        if (length > size) fail("gives a length of " + std::to_string(length) + " past its end");
        skip(8 + length);
        break;
      }
      case 'c':  // GLOBAL: module and name, a line each
        skip_lines(2);
        break;
      case 'F': case 'I': case 'L': case 'S': case 'V': case 'P': case 'g': case 'p': case 'i':  // text argument
        if (p[at] == 'p') ++filled;  // PUT: a slot numbered in text, a line LibTorch does not read
        skip_lines(1);
        break;
      case '(': case ')': case ']': case '}': case 'N': case 't': case 'l': case 'd': case 'a': case 'e':
      case 's': case 'u': case 'R': case 'b': case 'Q': case 'o': case '0': case '1': case '2':
      case 0x81: case 0x85: case 0x86: case 0x87: case 0x88: case 0x89: case 0x8f: case 0x90: case 0x91:
      case 0x92: case 0x93:  // no argument
        skip(0);
        break;
      default:  // an opcode LibTorch does not read either: it stops there, so do we
        return;
    }
  }
  // clang-format on
}

void check_archive(const char* data, size_t size, const std::string& what) {
  caffe2::serialize::PyTorchStreamReader reader(std::make_shared<Bytes>(data, size));
  for (const auto& name : reader.getAllRecords()) {
    if (name.size() < 4 || name.compare(name.size() - 4, 4, ".pkl") != 0) continue;
    const auto [record, record_size] = reader.getRecord(name);
    check_pickle(static_cast<const char*>(record.get()), record_size, what);
  }
}

}  // namespace trafo::checkpoint
