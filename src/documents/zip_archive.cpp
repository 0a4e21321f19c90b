#include "zip_archive.h"

#include <zip.h>

#include <list>
#include <memory>

#include "trafo/errors.h"

namespace trafo::documents::detail {

namespace {

std::string zip_message(zip_error_t* error) {
  const std::string message = zip_error_strerror(error);
  zip_error_fini(error);
  return message;
}

}  // namespace

ZipArchive::ZipArchive(const std::string& bytes, const Limits& limits, const std::string& what) : what_(what) {
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* source = zip_source_buffer_create(bytes.data(), bytes.size(), 0, &error);
  if (!source) throw std::runtime_error("libzip: " + zip_message(&error));
  zip_ = zip_open_from_source(source, ZIP_RDONLY | ZIP_CHECKCONS, &error);
  if (!zip_) {
    zip_source_free(source);
    const int code = zip_error_code_zip(&error);
    const std::string message = zip_message(&error);
    if (code == ZIP_ER_NOZIP) throw InputError(what + " is not a zip archive, as its format's files are");
    throw InputError(what + " is a damaged zip archive (" + message + ")");
  }
  const zip_int64_t count = zip_get_num_entries(zip_, 0);
  if (count > limits.max_entries) {
    zip_close(zip_);
    throw DocumentTooLarge(what + " holds " + std::to_string(count) + " entries; at most " +
                     std::to_string(limits.max_entries) + " are taken");
  }
  uint64_t unpacked = 0;
  for (zip_int64_t i = 0; i < count; ++i) {
    zip_stat_t stat;
    if (zip_stat_index(zip_, static_cast<zip_uint64_t>(i), 0, &stat) != 0 || !(stat.valid & ZIP_STAT_NAME) ||
        !(stat.valid & ZIP_STAT_SIZE)) {
      zip_close(zip_);
      throw InputError(what + " is a damaged zip archive (entry " + std::to_string(i) + " cannot be read)");
    }
    unpacked += stat.size;
    if (stat.size > static_cast<uint64_t>(limits.max_unpacked_bytes) ||
        unpacked > static_cast<uint64_t>(limits.max_unpacked_bytes)) {
      zip_close(zip_);
      throw DocumentTooLarge(what + " would unpack to more than " + std::to_string(limits.max_unpacked_bytes >> 20) +
                       " MiB (a zip bomb?); that is the limit");
    }
    names_.emplace_back(stat.name);
    sizes_.push_back(stat.size);
    methods_.push_back(stat.valid & ZIP_STAT_COMP_METHOD ? stat.comp_method : ZIP_CM_DEFLATE);
  }
}

ZipArchive::~ZipArchive() {
  if (zip_) zip_discard(zip_);
}

bool ZipArchive::has(const std::string& name) const { return zip_name_locate(zip_, name.c_str(), 0) >= 0; }

std::string ZipArchive::read(const std::string& name) const {
  const zip_int64_t index = zip_name_locate(zip_, name.c_str(), 0);
  if (index < 0) throw InputError(what_ + " has no " + name);
  std::unique_ptr<zip_file_t, decltype(&zip_fclose)> file(zip_fopen_index(zip_, static_cast<zip_uint64_t>(index), 0),
                                                          &zip_fclose);
  if (!file) throw InputError(what_ + ": " + name + " cannot be unpacked (" + zip_strerror(zip_) + ")");
  // Read one byte past the stated size: an entry that unpacks past it lies about its size.
  const uint64_t stated = sizes_[static_cast<size_t>(index)];
  std::string data(static_cast<size_t>(stated) + 1, '\0');
  uint64_t got = 0;
  while (got < data.size()) {
    const zip_int64_t count = zip_fread(file.get(), data.data() + got, data.size() - got);
    if (count < 0) throw InputError(what_ + ": " + name + " is damaged (" + zip_file_strerror(file.get()) + ")");
    if (count == 0) break;
    got += static_cast<uint64_t>(count);
  }
  if (got != stated) {
    throw InputError(what_ + ": " + name + " unpacks to " + (got > stated ? "more" : "fewer") +
                     " bytes than it states: a damaged archive or a zip bomb");
  }
  data.resize(static_cast<size_t>(got));
  return data;
}

std::string ZipArchive::write(const std::map<std::string, std::string>& replaced) const {
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* buffer = zip_source_buffer_create(nullptr, 0, 0, &error);
  if (!buffer) throw std::runtime_error("libzip: " + zip_message(&error));
  zip_source_keep(buffer);  // still read after zip_close
  std::unique_ptr<zip_source_t, decltype(&zip_source_free)> out(buffer, &zip_source_free);
  zip_t* archive = zip_open_from_source(buffer, ZIP_TRUNCATE, &error);
  if (!archive) throw std::runtime_error("libzip: " + zip_message(&error));
  const auto fail = [&](const std::string& doing) {
    const std::string message = zip_strerror(archive);
    zip_discard(archive);
    throw std::runtime_error("libzip: " + doing + ": " + message);
  };
  for (size_t i = 0; i < names_.size(); ++i) {
    const auto& name = names_[i];
    const auto found = replaced.find(name);
    zip_source_t* source =
        found != replaced.end()
            ? zip_source_buffer(archive, found->second.data(), found->second.size(), 0)
            // As stored: the compressed bytes are copied, never unpacked.
            : zip_source_zip(archive, zip_, i, ZIP_FL_COMPRESSED, 0, -1);
    if (!source) fail("reading " + name);
    const zip_int64_t index = zip_file_add(archive, name.c_str(), source, ZIP_FL_ENC_UTF_8);
    if (index < 0) {
      zip_source_free(source);
      fail("adding " + name);
    }
    // The method it has (the one the copied bytes are in; an OpenDocument's mimetype stays stored).
    const int32_t method = found != replaced.end() ? ZIP_CM_DEFLATE : methods_[i];
    if (zip_set_file_compression(archive, static_cast<zip_uint64_t>(index), method, 0) != 0) fail("compressing " + name);
  }
  if (zip_close(archive) != 0) fail("writing the archive");
  if (zip_source_open(buffer) != 0 || zip_source_seek(buffer, 0, SEEK_END) != 0) {
    throw std::runtime_error("libzip: the written archive cannot be read back");
  }
  const zip_int64_t size = zip_source_tell(buffer);
  std::string bytes(static_cast<size_t>(size), '\0');
  zip_source_seek(buffer, 0, SEEK_SET);
  const zip_int64_t read = zip_source_read(buffer, bytes.data(), bytes.size());
  zip_source_close(buffer);
  if (read != size) throw std::runtime_error("libzip: the written archive cannot be read back");
  return bytes;
}

}  // namespace trafo::documents::detail
