// Format 2, written by trafo before checkpoints became safetensors files: a header line with the
// XXH3-64 checksum of the LibTorch archive after it, and one checksum per record.
#include "legacy_format.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "trafo/errors.h"
#include "trafo/json.h"
#include "trafo/util/hex.h"

namespace trafo::checkpoint::detail {
namespace {

using util::hex;

// XXH3-64 of a record, as 16 hex digits. A tensor's covers its dtype, shape and bytes.
std::string checksum(const char* data, size_t size) { return hex(XXH3_64bits(data, size)); }
std::string checksum(const std::string& bytes) { return checksum(bytes.data(), bytes.size()); }

// A format 2 file: this magic, the checksum of the rest (16 hex digits), a newline, then the
// archive. Checked before LibTorch unpickles anything: a changed byte in a pickle could ask it for
// any amount of memory (fuzz/findings/checkpoint/huge-alloc-unpickler, a format 1 file without the
// checksum, asked for 26 GB; format 1 is no longer read).
constexpr char kMagic[] = "trafo-checkpoint xxh3-64 ";
constexpr size_t kMagicSize = sizeof kMagic - 1;
constexpr size_t kHeaderSize = kMagicSize + 16 + 1;

// The archive's bytes past the header, checked.
std::pair<const char*, size_t> checked_archive(const std::string& bytes, const std::string& path) {
  if (bytes.size() < kHeaderSize || bytes[kHeaderSize - 1] != '\n' ||
      bytes.compare(kMagicSize, 16, checksum(bytes.data() + kHeaderSize, bytes.size() - kHeaderSize)) != 0) {
    throw InputError("corrupt checkpoint " + path + ": its bytes fail their checksum");
  }
  return {bytes.data() + kHeaderSize, bytes.size() - kHeaderSize};
}

std::string checksum(const at::Tensor& tensor) {
  const auto data = tensor.contiguous();
  std::string header = std::string(c10::toString(data.scalar_type())) + ":";
  for (const auto size : data.sizes()) header += std::to_string(size) + ",";
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  XXH3_64bits_update(state, header.data(), header.size());
  XXH3_64bits_update(state, data.data_ptr(), data.nbytes());
  const uint64_t hash = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return hex(hash);
}

// Reads records and checks each against its checksum.
class RecordReader {
 public:
  RecordReader(torch::serialize::InputArchive& archive, std::string path)
      : archive_(archive), path_(std::move(path)), checksums_(parse_json(raw_string("checksums"), "checkpoint " + path_)) {}
  std::string string(const std::string& key) {
    auto value = raw_string(key);
    verify(key, checksum(value));
    return value;
  }
  at::Tensor tensor(const std::string& key) {
    at::Tensor value;
    archive_.read(key, value, /*is_buffer=*/true);
    verify(key, checksum(value));
    return value;
  }
  bool flag(const std::string& key) {
    c10::IValue value;
    archive_.read(key, value);
    verify(key, checksum(std::to_string(value.toBool())));
    return value.toBool();
  }
  std::map<std::string, at::Tensor> tensors(const std::string& prefix) {
    std::map<std::string, at::Tensor> result;
    for (const auto& name : parse_json(string(prefix + "/names"), "checkpoint " + path_)) {
      result.emplace(name.get<std::string>(), tensor(prefix + "/" + name.get<std::string>()));
    }
    return result;
  }

 private:
  std::string raw_string(const std::string& key) {
    c10::IValue value;
    archive_.read(key, value);
    return value.toStringRef();
  }
  void verify(const std::string& key, const std::string& actual) const {
    const auto expected = checksums_.find(key);
    if (expected == checksums_.end() || *expected != actual) {
      throw InputError("corrupt checkpoint " + path_ + ": its record '" + key + "' fails its checksum");
    }
  }
  torch::serialize::InputArchive& archive_;
  std::string path_;
  nlohmann::json checksums_;
};

}  // namespace

bool is_legacy_checkpoint(const std::string& prefix) { return prefix.compare(0, kMagicSize, kMagic) == 0; }

Checkpoint read_legacy_checkpoint(const std::string& bytes, const std::string& path, bool with_training_state) {
  Checkpoint checkpoint;
  try {
    torch::serialize::InputArchive archive;
    const auto [archive_data, archive_size] = checked_archive(bytes, path);
    archive.load_from(archive_data, archive_size);
    c10::IValue version;
    if (!archive.try_read("format_version", version) || !version.isInt() || version.toInt() != 2) {
      throw InputError("checkpoint " + path + " has an unknown format version");
    }
    RecordReader records(archive, path);
    checkpoint.model_config = model::model_config_from_json(parse_json(records.string("model_config"), "checkpoint " + path));
    checkpoint.tokenizer = records.string("tokenizer");
    checkpoint.config = records.string("config");
    checkpoint.weights = records.tensors("weights");
    if (records.flag("has_training_state") && with_training_state) {
      TrainingState state;
      state.tensors = records.tensors("training");
      state.json = records.string("training_json");
      checkpoint.training = std::move(state);
    }
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    // c10::Error's message carries a C++ backtrace: keep its first line only.
    std::string reason = e.what();
    reason = reason.substr(0, reason.find('\n'));
    throw InputError("corrupt or truncated checkpoint " + path + ": " + reason);
  }
  return checkpoint;
}

}  // namespace trafo::checkpoint::detail
