// The safetensors container (Hugging Face's format, readable by PyPI's `safetensors` and every
// tool built on it): an 8-byte little-endian header length N, N bytes of JSON, then the tensors'
// raw little-endian bytes back to back. The JSON maps each tensor's name to its dtype, shape and
// byte range in the data section, and "__metadata__" to a flat object of strings.
//
// trafo adds one metadata entry, "checksum": XXH3-64 (16 hex digits) of the whole file as written
// with those 16 digits set to '0', so that any changed byte of the header or the data is caught.
// docs/design.md "Checkpoint".
#pragma once

#include <filesystem>
#include <map>
#include <string>

#include <ATen/core/Tensor.h>

namespace trafo::checkpoint {

struct Safetensors {
  std::map<std::string, std::string> metadata;  // without "checksum"
  std::map<std::string, at::Tensor> tensors;    // float32, int64 or uint8 (trafo's), on the CPU
};

// The file's bytes. Tensors are written largest element first (int64, float32, uint8), so that each
// starts aligned to its element size; the header is padded with spaces to a multiple of 8 bytes.
std::string to_safetensors(const Safetensors& contents);

// `file` (a safetensors file's bytes) with its checksum set to what its other bytes hash to, as
// to_safetensors writes it (tests and fuzzing make files with a right checksum and a wrong header).
// trafo::InputError when its header holds no single checksum entry.
std::string with_checksum(std::string file);

// Who wrote a safetensors file: trafo (with its checksum in the metadata) or another program (no
// checksum; float16 and bfloat16 tensors too, as transformers writes them).
enum class Writer { kTrafo, kOther };

// Maps the file and checks it whole before anything is made of it: its checksum (kTrafo), the
// header's JSON, each tensor's dtype, shape and byte range (in the data section, covering it without
// gaps or overlaps). The tensors are copy-on-write views of the mapping, which stays while any is
// alive. Throws trafo::InputError naming `path` and the first fault.
Safetensors read_safetensors(const std::filesystem::path& path, Writer writer = Writer::kTrafo);

// Whether `prefix` (a file's first bytes) can start a safetensors file: a header length, then '{'.
bool looks_like_safetensors(const std::string& prefix);

// Largest header read: a trafo header is the weights' names and the tokenizer in base64, a few MB.
inline constexpr uint64_t kMaxHeaderBytes = uint64_t{256} << 20;

}  // namespace trafo::checkpoint
