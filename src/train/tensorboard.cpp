#include "trafo/train/tensorboard.h"

#include <unistd.h>

#include <array>
#include <chrono>
#include <cstring>

#include <nlohmann/json.hpp>

#include "trafo/errors.h"

namespace trafo::train {
namespace {

std::array<uint32_t, 256> make_crc32c_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t crc = i;
    for (int bit = 0; bit < 8; ++bit) crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
    table[i] = crc;
  }
  return table;
}

// Protobuf wire format: a key is (field << 3) | wire type; 0 varint, 1 fixed64, 2 bytes, 5 fixed32.
void put_varint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7F) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

template <typename T>
void put_little_endian(std::string& out, T value) {  // the host is little-endian (x86, ARM)
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

void put_bytes_field(std::string& out, int field, const std::string& bytes) {
  put_varint(out, static_cast<uint64_t>(field) << 3 | 2);
  put_varint(out, bytes.size());
  out += bytes;
}

// Event { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5; }
std::string encode_event(double wall_time, int64_t step, const std::string& file_version, const std::string& summary) {
  std::string event;
  put_varint(event, 1 << 3 | 1);
  put_little_endian(event, wall_time);
  put_varint(event, 2 << 3 | 0);
  put_varint(event, static_cast<uint64_t>(step));
  if (!file_version.empty()) put_bytes_field(event, 3, file_version);
  if (!summary.empty()) put_bytes_field(event, 5, summary);
  return event;
}

// Summary { repeated Value value = 1; }  Value { string tag = 1; float simple_value = 2; }
std::string encode_summary(const std::string& tag, float value) {
  std::string summary_value;
  put_bytes_field(summary_value, 1, tag);
  put_varint(summary_value, 2 << 3 | 5);
  put_little_endian(summary_value, value);
  std::string summary;
  put_bytes_field(summary, 1, summary_value);
  return summary;
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

}  // namespace

uint32_t crc32c(const char* data, size_t size) {
  static const std::array<uint32_t, 256> table = make_crc32c_table();
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < size; ++i) crc = table[(crc ^ static_cast<unsigned char>(data[i])) & 0xFF] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

uint32_t masked_crc32c(const char* data, size_t size) {
  const uint32_t crc = crc32c(data, size);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

TensorBoardWriter::TensorBoardWriter(const std::filesystem::path& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) throw_write_error(dir.string(), error.value());
  const double started = now_s();
  const std::string name = "events.out.tfevents." + std::to_string(static_cast<int64_t>(started)) + "." + host_name();
  path_ = dir / name;
  for (int suffix = 1; std::filesystem::exists(path_); ++suffix) path_ = dir / (name + "." + std::to_string(suffix));
  out_.open(path_, std::ios::binary);
  if (!out_) throw_write_error(path_.string(), errno);
  write_record(encode_event(started, 0, "brain.Event:2", ""));
}

void TensorBoardWriter::scalar(const std::string& tag, double value, int64_t step, double wall_time) {
  write_record(encode_event(wall_time < 0 ? now_s() : wall_time, step, "",
                            encode_summary(tag, static_cast<float>(value))));
}

void TensorBoardWriter::scalars(const std::string& prefix, const nlohmann::json& fields, int64_t step,
                                double wall_time) {
  if (wall_time < 0) wall_time = now_s();
  for (const auto& [key, value] : fields.items()) {
    if (value.is_number()) scalar(prefix + "/" + key, value.get<double>(), step, wall_time);
  }
}

void TensorBoardWriter::write_record(const std::string& bytes) {
  std::string header;
  put_little_endian(header, static_cast<uint64_t>(bytes.size()));
  std::string record = header;
  put_little_endian(record, masked_crc32c(header.data(), header.size()));
  record += bytes;
  put_little_endian(record, masked_crc32c(bytes.data(), bytes.size()));
  out_.write(record.data(), static_cast<std::streamsize>(record.size()));
  out_.flush();
  if (!out_) throw RunError("cannot write " + path_.string() + " (disk full?)");
}

}  // namespace trafo::train
