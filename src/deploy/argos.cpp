#include "trafo/deploy/argos.h"

#include <array>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "export_support.h"
#include "trafo/deploy/ctranslate2.h"
#include "trafo/data/tokenizer.h"
#include "trafo/errors.h"

namespace trafo::deploy {
namespace {

// CRC-32 (the zip's: polynomial 0xEDB88320, reflected).
uint32_t crc32(const std::string& bytes) {
  static const auto table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t c = 0xFFFFFFFFu;
  for (const unsigned char byte : bytes) c = table[(c ^ byte) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

void put16(std::string& out, uint32_t value) {
  out.push_back(static_cast<char>(value & 0xFF));
  out.push_back(static_cast<char>((value >> 8) & 0xFF));
}

void put32(std::string& out, uint32_t value) {
  put16(out, value & 0xFFFF);
  put16(out, value >> 16);
}

}  // namespace

std::string stored_zip(const std::vector<std::pair<std::string, std::string>>& entries) {
  constexpr uint64_t kLimit = 0xFFFFFFFFu;
  constexpr uint32_t kDosDate = (1 << 5) | 1;  // 1980-01-01, 00:00: the same bytes for the same model
  std::string archive, directory;
  for (const auto& [name, bytes] : entries) {
    if (bytes.size() >= kLimit || archive.size() + bytes.size() + name.size() + 30 >= kLimit) {
      throw InputError("the package would pass the 4 GiB a zip holds without its 64-bit extension");
    }
    const uint32_t crc = crc32(bytes), size = static_cast<uint32_t>(bytes.size());
    const uint32_t offset = static_cast<uint32_t>(archive.size());
    auto header = [&](std::string& out, bool central) {
      put32(out, central ? 0x02014b50u : 0x04034b50u);
      if (central) put16(out, 20);  // made by: zip 2.0
      put16(out, 20);               // needed to extract: 2.0
      put16(out, 0x0800);           // names are UTF-8
      put16(out, 0);                // stored
      put16(out, 0);                // time
      put16(out, kDosDate);
      put32(out, crc);
      put32(out, size);  // compressed
      put32(out, size);
      put16(out, static_cast<uint32_t>(name.size()));
      put16(out, 0);  // extra field
      if (central) {
        put16(out, 0);  // comment
        put16(out, 0);  // disk
        put16(out, 0);  // internal attributes
        put32(out, 0644u << 16);  // external: a regular file, rw-r--r--
        put32(out, offset);
      }
      out += name;
    };
    header(archive, false);
    archive += bytes;
    header(directory, true);
  }
  const uint32_t directory_offset = static_cast<uint32_t>(archive.size());
  archive += directory;
  put32(archive, 0x06054b50u);  // end of central directory
  put16(archive, 0);
  put16(archive, 0);
  put16(archive, static_cast<uint32_t>(entries.size()));
  put16(archive, static_cast<uint32_t>(entries.size()));
  put32(archive, static_cast<uint32_t>(directory.size()));
  put32(archive, directory_offset);
  put16(archive, 0);
  return archive;
}

std::vector<std::pair<std::string, std::string>> argos_files(const checkpoint::Checkpoint& checkpoint,
                                                             const std::string& quantization) {
  const auto& info = checkpoint.inference;
  if (info.src_lang.empty() || info.tgt_lang.empty()) {
    throw InputError("it does not say which languages it translates (no src_lang and tgt_lang), which an Argos "
                     "package must name");
  }
  const std::string top = "translate-" + info.src_lang + "_" + info.tgt_lang + "-1_0";
  const nlohmann::json metadata = {
      {"package_version", "1.0"},     {"argos_version", "1.9"},  {"type", "translate"},
      {"from_code", info.src_lang},   {"from_name", info.src_lang}, {"to_code", info.tgt_lang},
      {"to_name", info.tgt_lang},     {"code", top},
  };
  std::vector<std::pair<std::string, std::string>> entries = {{top + "/metadata.json", json_text(metadata)}};
  // Argos cuts source text and joins target pieces with one SentencePiece model, sentencepiece.model.
  const auto tokenizer = data::Tokenizer::from_bytes(checkpoint.tokenizer);
  if (tokenizer.source_model() != tokenizer.target_model()) {
    throw InputError("its vocabulary has a SentencePiece model per side (an imported MarianMT model), and an Argos "
                     "package holds one for both: export it as ctranslate2 or huggingface instead");
  }
  for (auto& [name, bytes] : ctranslate2_files(checkpoint, quantization)) {
    if (name == "target.spm") continue;
    if (name == "sentencepiece.model" || name == "source.spm") {
      entries.emplace_back(top + "/sentencepiece.model", std::move(bytes));
    } else {
      entries.emplace_back(top + "/model/" + name, std::move(bytes));
    }
  }
  entries.emplace_back(top + "/README.md", "A " + info.src_lang + " to " + info.tgt_lang +
                                               " translation model exported by trafo.\n");
  return {{top + ".argosmodel", stored_zip(entries)}};
}

}  // namespace trafo::deploy
