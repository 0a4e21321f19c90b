#include "trafo/checkpoint/checkpoint.h"

#include <algorithm>
#include <cstdio>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>
#include <torch/torch.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "trafo/checkpoint/archive_check.h"
#include "trafo/data/tokenizer.h"
#include "trafo/errors.h"
#include "trafo/util/files.h"

namespace trafo::checkpoint {
namespace {

// XXH3-64 of a record, as 16 hex digits. A tensor's covers its dtype, shape and bytes.
std::string hex(uint64_t hash) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

std::string checksum(const char* data, size_t size) { return hex(XXH3_64bits(data, size)); }
std::string checksum(const std::string& bytes) { return checksum(bytes.data(), bytes.size()); }

// A format 2 file: this magic, the checksum of the rest (16 hex digits), a newline, then the
// archive. Checked before LibTorch unpickles anything: a changed byte in a pickle could ask it for
// any amount of memory (fuzz/findings/checkpoint/huge-alloc-unpickler).
constexpr char kMagic[] = "trafo-checkpoint xxh3-64 ";
constexpr size_t kMagicSize = sizeof kMagic - 1;
constexpr size_t kHeaderSize = kMagicSize + 16 + 1;

std::string with_header(const std::string& archive) {
  return kMagic + checksum(archive) + "\n" + archive;
}

// The archive's bytes: past the header, checked, for format 2; the whole file for format 1.
std::pair<const char*, size_t> checked_archive(const std::string& bytes, const std::string& path) {
  if (bytes.compare(0, kMagicSize, kMagic) != 0) return {bytes.data(), bytes.size()};
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

// Writes records and notes each one's checksum; finish() stores them all as one more record.
class RecordWriter {
 public:
  void string(const std::string& key, const std::string& value) {
    archive_.write(key, c10::IValue(value));
    checksums_[key] = checksum(value);
  }
  void tensor(const std::string& key, const at::Tensor& value) {
    const auto cpu = value.detach().cpu().contiguous();
    archive_.write(key, cpu, /*is_buffer=*/true);
    checksums_[key] = checksum(cpu);
  }
  void flag(const std::string& key, bool value) {
    archive_.write(key, c10::IValue(value));
    checksums_[key] = checksum(std::to_string(value));
  }
  void tensors(const std::string& prefix, const std::map<std::string, at::Tensor>& tensors) {
    std::vector<std::string> names;
    for (const auto& [name, tensor] : tensors) {
      this->tensor(prefix + "/" + name, tensor);
      names.push_back(name);
    }
    string(prefix + "/names", nlohmann::json(names).dump());
  }
  std::string finish() {
    archive_.write("checksums", c10::IValue(checksums_.dump()));
    std::ostringstream bytes;
    archive_.save_to(bytes);
    return bytes.str();
  }
  torch::serialize::OutputArchive& archive() { return archive_; }

 private:
  torch::serialize::OutputArchive archive_;
  nlohmann::json checksums_ = nlohmann::json::object();
};

// Reads records and checks each against its checksum (format 1 files have none).
class RecordReader {
 public:
  RecordReader(torch::serialize::InputArchive& archive, std::string path, bool checked)
      : archive_(archive), path_(std::move(path)) {
    if (checked) checksums_ = nlohmann::json::parse(raw_string("checksums"));
  }
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
    for (const auto& name : nlohmann::json::parse(string(prefix + "/names"))) {
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
    if (checksums_.is_null()) return;
    const auto expected = checksums_.find(key);
    if (expected == checksums_.end() || *expected != actual) {
      throw InputError("corrupt checkpoint " + path_ + ": its record '" + key + "' fails its checksum");
    }
  }
  torch::serialize::InputArchive& archive_;
  std::string path_;
  nlohmann::json checksums_;  // null: format 1, unchecked
};

}  // namespace

std::map<std::string, at::Tensor> model_weights(const model::Transformer& model) {
  std::map<std::string, at::Tensor> weights;
  for (const auto& p : model->named_parameters()) weights.emplace(p.key(), p.value().detach().cpu().clone());
  for (const auto& b : model->named_buffers()) weights.emplace(b.key(), b.value().detach().cpu().clone());
  return weights;
}

void save(const std::filesystem::path& path, const Checkpoint& checkpoint) {
  RecordWriter records;
  records.archive().write("format_version", c10::IValue(kFormatVersion));
  records.string("model_config", model::to_json(checkpoint.model_config).dump());
  records.string("tokenizer", checkpoint.tokenizer);
  records.string("config", checkpoint.config);
  records.tensors("weights", checkpoint.weights);
  records.flag("has_training_state", checkpoint.training.has_value());
  if (checkpoint.training) {
    records.tensors("training", checkpoint.training->tensors);
    records.string("training_json", checkpoint.training->json);
  }
  util::write_file_atomically(path, with_header(records.finish()));
}

Checkpoint load(const std::filesystem::path& path, bool with_training_state) {
  if (!std::filesystem::exists(path)) throw InputError("checkpoint not found: " + path.string());
  const std::string bytes = util::read_file(path);
  Checkpoint checkpoint;
  try {
    torch::serialize::InputArchive archive;
    const auto [archive_data, archive_size] = checked_archive(bytes, path.string());
    check_archive(archive_data, archive_size, path.string());
    archive.load_from(archive_data, archive_size);
    c10::IValue version;
    if (!archive.try_read("format_version", version) || !version.isInt()) {
      throw InputError("not a trafo checkpoint: " + path.string());
    }
    if (version.toInt() < 1 || version.toInt() > kFormatVersion) {
      throw InputError("checkpoint " + path.string() + " has format version " + std::to_string(version.toInt()) +
                       "; this trafo reads versions 1 to " + std::to_string(kFormatVersion));
    }
    RecordReader records(archive, path.string(), /*checked=*/version.toInt() >= 2);
    checkpoint.model_config = model::model_config_from_json(nlohmann::json::parse(records.string("model_config")));
    checkpoint.tokenizer = records.string("tokenizer");
    if (!checkpoint.tokenizer.empty()) {
      int pieces = 0;
      try {
        pieces = data::Tokenizer::from_bytes(checkpoint.tokenizer).vocab_size();
      } catch (const InputError& e) {
        throw InputError("checkpoint " + path.string() + ": " + e.what());
      }
      if (pieces != checkpoint.model_config.vocab_size) {
        throw InputError("checkpoint " + path.string() + " is inconsistent: its model has " +
                         std::to_string(checkpoint.model_config.vocab_size) + " pieces, its tokenizer " +
                         std::to_string(pieces));
      }
    }
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
    throw InputError("corrupt or truncated checkpoint " + path.string() + ": " + reason);
  }
  return checkpoint;
}

model::Transformer make_model(const Checkpoint& checkpoint, const at::Device& device) {
  model::Transformer model(checkpoint.model_config);
  torch::NoGradGuard no_grad;
  auto assign = [&](const std::string& name, at::Tensor& target) {
    const auto found = checkpoint.weights.find(name);
    if (found == checkpoint.weights.end()) throw InputError("checkpoint lacks weight " + name);
    if (found->second.sizes() != target.sizes()) throw InputError("checkpoint weight " + name + " has the wrong shape");
    target.copy_(found->second);
  };
  for (auto& p : model->named_parameters()) assign(p.key(), p.value());
  for (auto& b : model->named_buffers()) assign(b.key(), b.value());
  model->to(device);
  model->eval();
  return model;
}

std::vector<std::pair<int64_t, std::filesystem::path>> numbered_checkpoints(const std::filesystem::path& dir) {
  static const std::regex pattern(R"(checkpoint-(\d{1,18})\.pt)");
  std::vector<std::pair<int64_t, std::filesystem::path>> found;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::smatch match;
    const auto name = entry.path().filename().string();
    if (std::regex_match(name, match, pattern)) found.emplace_back(std::stoll(match[1].str()), entry.path());
  }
  std::sort(found.begin(), found.end());
  return found;
}

}  // namespace trafo::checkpoint
