#include "trafo/report/metrics_reader.h"

#include <fstream>

#include "trafo/errors.h"
#include "trafo/json.h"

namespace trafo::report {
namespace {

// Why `line` cannot be used, or "" when it is a usable event.
std::string check_event(const std::string& line, nlohmann::json& event) {
  try {
    event = parse_json(line, "the line", /*allow_exceptions=*/false);
  } catch (const JsonTooDeep& e) {
    return e.what();
  }
  if (event.is_discarded()) return "not valid JSON";
  if (!event.is_object()) return "not a JSON object";
  if (!event.contains("event") || !event["event"].is_string()) return "no \"event\" name";
  if (!event.contains("step") || !event["step"].is_number()) return "no numeric \"step\"";
  if (!event.contains("time_s") || !event["time_s"].is_number()) return "no numeric \"time_s\"";
  return "";
}

std::string display_name(const std::filesystem::path& dir) {
  std::string name = dir.lexically_normal().string();
  while (name.size() > 1 && name.back() == '/') name.pop_back();
  return name;
}

}  // namespace

RunMetrics read_run(const std::filesystem::path& dir) {
  if (!std::filesystem::is_directory(dir)) throw InputError("run folder " + dir.string() + " does not exist");
  const auto path = dir / "metrics.jsonl";
  if (!std::filesystem::exists(path)) {
    throw InputError(dir.string() + " holds no metrics.jsonl (is it a trafo train run folder?)");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read " + path.string());

  RunMetrics run;
  run.name = display_name(dir);
  run.dir = dir;
  int64_t line_number = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    nlohmann::json event;
    const std::string problem = check_event(line, event);
    if (problem.empty()) {
      run.events.push_back(std::move(event));
    } else {
      run.problems.push_back(path.string() + " line " + std::to_string(line_number) + ": " + problem);
    }
  }
  if (in.bad()) throw InputError("cannot read " + path.string());
  if (run.events.empty()) {
    throw InputError(path.string() + " holds no usable events" +
                     (run.problems.empty() ? std::string(" (empty)") : " (" + run.problems.front() + ")"));
  }
  return run;
}

const nlohmann::json* best_validation(const RunMetrics& run) {
  const nlohmann::json* best = nullptr;
  for (const auto& event : run.events) {
    const auto flag = event.find("best");
    if (event["event"] == "valid" && flag != event.end() && flag->is_boolean() && flag->get<bool>()) best = &event;
  }
  return best;
}

}  // namespace trafo::report
