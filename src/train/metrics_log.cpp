#include "trafo/train/metrics_log.h"

#include <cerrno>
#include <cstring>

#include "trafo/errors.h"

namespace trafo::train {

MetricsLog::MetricsLog(const std::filesystem::path& path) : path_(path.string()), out_(path, std::ios::app) {
  if (!out_) throw_write_error(path_, errno);
}

void MetricsLog::write(const std::string& event, int64_t step, int64_t epoch, double time_s, nlohmann::json fields) {
  nlohmann::json line = {{"event", event}, {"step", step}, {"epoch", epoch}, {"time_s", time_s}};
  if (fields.is_object()) line.update(fields);
  out_ << line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  out_.flush();
  // A full disk: the run fails (exit 1) rather than going on without its log.
  if (!out_) throw_write_error(path_, errno != 0 ? errno : EIO);
}

}  // namespace trafo::train
