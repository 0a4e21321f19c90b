// TensorBoard event files (RUN_DIR/tensorboard/events.out.tfevents.TIME.HOST) written without
// TensorFlow: each record is a hand-encoded `Event` protobuf framed as TFRecord
// (uint64 length, masked CRC32C of the length, the bytes, masked CRC32C of the bytes).
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace trafo::train {

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) of `size` bytes.
uint32_t crc32c(const char* data, size_t size);

// TFRecord's masked CRC: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
uint32_t masked_crc32c(const char* data, size_t size);

class TensorBoardWriter {
 public:
  // Creates `dir` and a new event file in it, starting with the "brain.Event:2" version record.
  // Throws trafo::RunError when the folder or file cannot be written.
  explicit TensorBoardWriter(const std::filesystem::path& dir);

  // One scalar at `step`; `wall_time` in seconds since the Unix epoch (negative: now). Flushed.
  void scalar(const std::string& tag, double value, int64_t step, double wall_time = -1.0);

  // Every number among `fields` (booleans, strings, arrays left out) as the scalar
  // "PREFIX/KEY": scalars("train", {{"loss", 2.1}, {"lr", 1e-3}}, 50) writes train/loss, train/lr.
  void scalars(const std::string& prefix, const nlohmann::json& fields, int64_t step, double wall_time = -1.0);

  const std::filesystem::path& path() const { return path_; }

 private:
  void write_record(const std::string& bytes);

  std::filesystem::path path_;
  std::ofstream out_;
};

}  // namespace trafo::train
