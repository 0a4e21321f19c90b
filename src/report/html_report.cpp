#include "trafo/report/html_report.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>

#include <fmt/format.h>

#include "report_page_assets.h"
#include "trafo/report/html.h"
#include "trafo/report/run_advice.h"

namespace trafo::report {
namespace {

const char* const kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                               "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"};

const char* run_color(size_t index) { return kColors[index % (sizeof kColors / sizeof kColors[0])]; }

bool is(const nlohmann::json& event, const char* name) { return event["event"] == name; }

bool flag(const nlohmann::json& event, const char* key) {
  const auto it = event.find(key);
  return it != event.end() && it->is_boolean() && it->get<bool>();
}

std::string number(const nlohmann::json& event, const char* key, const char* format = "{:.2f}") {
  const auto it = event.find(key);
  return it != event.end() && it->is_number() ? fmt::format(fmt::runtime(format), it->get<double>()) : "–";
}

std::string text(const nlohmann::json& event, const char* key) {
  const auto it = event.find(key);
  return it != event.end() && it->is_string() ? it->get<std::string>() : "";
}

std::string duration(double seconds) {
  const auto total = static_cast<int64_t>(std::llround(std::max(0.0, seconds)));
  if (total < 60) return fmt::format("{}s", total);
  if (total < 3600) return fmt::format("{}m {:02}s", total / 60, total % 60);
  return fmt::format("{}h {:02}m", total / 3600, total % 3600 / 60);
}

// Wall-clock axes in seconds, minutes or hours, whichever suits the longest run.
std::pair<const char*, double> time_unit(const std::vector<RunMetrics>& runs) {
  double longest = 0.0;
  for (const auto& run : runs) {
    for (const auto& event : run.events) longest = std::max(longest, event["time_s"].get<double>());
  }
  if (longest < 180) return {"s", 1.0};
  if (longest < 3 * 3600) return {"min", 60.0};
  return {"h", 3600.0};
}

// A valid event's figures by direction ({"en-fr": {"bleu", ...}, ...}), of a run of several
// directions; null for any other event.
const nlohmann::json* directions_in(const nlohmann::json& event) {
  const auto directions = event.find("directions");
  return is(event, "valid") && directions != event.end() && directions->is_object() ? &*directions : nullptr;
}

// The directions a run of several directions validated ("en-fr", ...), in the order first seen.
std::vector<std::string> directions_of(const RunMetrics& run) {
  std::vector<std::string> names;
  for (const auto& event : run.events) {
    const auto* directions = directions_in(event);
    if (directions == nullptr) continue;
    for (const auto& [name, figures] : directions->items()) {
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
  }
  return names;
}

// A curve's points, [[step, time, value]], of `run`'s events; of one direction's figures in them
// when `direction` is not empty (its valid events' "directions" object).
nlohmann::json curve_points(const RunMetrics& run, const Curve& curve, double scale, const std::string& direction) {
  auto list = nlohmann::json::array();
  for (const auto& event : run.events) {
    if (!is(event, curve.event.c_str())) continue;
    const nlohmann::json* figures = &event;
    if (!direction.empty()) {
      const auto* directions = directions_in(event);
      if (directions == nullptr || !directions->contains(direction)) continue;
      figures = &(*directions)[direction];
    }
    const auto value = figures->find(curve.field);
    if (value == figures->end() || !value->is_number()) continue;
    const double y = value->get<double>();
    list.push_back({event["step"], event["time_s"].get<double>() / scale, std::isfinite(y) ? nlohmann::json(y)
                                                                                             : nlohmann::json()});
  }
  return list;
}

// {"curves": [...], "time_unit": ..., "runs": [{"name", "color", "dashed", "points": {CURVE: [[step, time,
// value]]}}]}. A run of several directions draws its macro averages as itself and each direction's
// dev figures as a dashed line of its own, "RUN · en-fr".
nlohmann::json chart_data(const std::vector<RunMetrics>& runs) {
  const auto [unit, scale] = time_unit(runs);
  nlohmann::json data = {{"time_unit", unit}, {"curves", nlohmann::json::array()}, {"runs", nlohmann::json::array()}};
  for (const auto& curve : report_curves()) {
    data["curves"].push_back({{"id", curve.id}, {"event", curve.event}, {"y_title", curve.axis}});
  }
  size_t lines = runs.size();  // colours: the runs first, then each direction's line
  for (size_t r = 0; r < runs.size(); ++r) {
    auto directions = directions_of(runs[r]);
    directions.insert(directions.begin(), "");  // the run itself
    for (const auto& direction : directions) {
      nlohmann::json points = nlohmann::json::object();
      for (const auto& curve : report_curves()) {
        if (direction.empty() || curve.event == "valid") points[curve.id] = curve_points(runs[r], curve, scale, direction);
      }
      data["runs"].push_back({{"name", direction.empty() ? runs[r].name : runs[r].name + " · " + direction},
                              {"color", run_color(direction.empty() ? r : lines++)},
                              {"dashed", !direction.empty()},
                              {"points", std::move(points)}});
    }
  }
  return data;
}

void write_curves(std::string& page) {
  page += "<h2>Curves</h2>\n";
  for (const auto& curve : report_curves()) {
    page += fmt::format("<div class=\"curve\"><h3>{}</h3><div class=\"pair\">", escape_html(curve.title));
    for (const char* axis : {"step", "time"}) {
      page += fmt::format("<div class=\"chart\"><canvas data-curve=\"{}\" data-axis=\"{}\"></canvas></div>", curve.id,
                          axis);
    }
    page += "</div></div>\n";
  }
}

void write_summary(std::string& page, const RunMetrics& run) {
  const nlohmann::json* start = nullptr;
  const nlohmann::json* end = nullptr;
  std::string best_checkpoint;
  for (const auto& event : run.events) {
    if (is(event, "start")) start = &event;
    if (is(event, "end")) end = &event;
    if (is(event, "checkpoint") && flag(event, "best")) best_checkpoint = text(event, "path");
  }
  const auto& last = run.events.back();
  page += "<table>\n";
  page += fmt::format("<tr><th>steps</th><td>{}</td></tr><tr><th>epoch</th><td>{}</td></tr>", last["step"].dump(),
                      last.contains("epoch") ? last["epoch"].dump() : "–");
  page += fmt::format("<tr><th>wall-clock time</th><td>{}</td></tr>", duration(last["time_s"].get<double>()));
  page += fmt::format("<tr><th>stopped</th><td>{}</td></tr>",
                      end != nullptr ? escape_html(text(*end, "reason")) : "no end event (still running?)");
  if (start != nullptr) {
    page += fmt::format("<tr><th>device</th><td>{} · {} threads · trafo {} · torch {}</td></tr>",
                        escape_html(text(*start, "device")), start->value("threads", nlohmann::json()).dump(),
                        escape_html(text(*start, "version")), escape_html(text(*start, "torch")));
  }
  if (const auto* best = best_validation(run)) {
    page += fmt::format(
        "<tr><th>best validation</th><td>step {}: BLEU {}, chrF {}, dev loss {}, perplexity {}</td></tr>",
        (*best)["step"].dump(), number(*best, "bleu"), number(*best, "chrf"), number(*best, "loss", "{:.4f}"),
        number(*best, "ppl"));
    if (const auto* directions = directions_in(*best)) {
      std::string each;
      for (const auto& [name, figures] : directions->items()) {
        each += fmt::format("{}{}: BLEU {}, chrF {}", each.empty() ? "" : "; ", escape_html(name), number(figures, "bleu"),
                            number(figures, "chrf"));
      }
      page += "<tr><th>by direction</th><td>" + each + " (the figures above are their macro average)</td></tr>";
    }
  } else {
    page += "<tr><th>best validation</th><td>none yet</td></tr>";
  }
  page += fmt::format("<tr><th>best checkpoint</th><td>{}</td></tr>\n</table>\n",
                      best_checkpoint.empty() ? "none yet" : "<code>" + escape_html(best_checkpoint) + "</code>");
  for (const auto& sentence : run_advice(run)) page += "<p class=\"advice\">" + escape_html(sentence) + "</p>\n";
  if (start != nullptr && !text(*start, "config").empty()) {
    page += "<details><summary>Effective config</summary><pre>" + escape_html(text(*start, "config")) +
            "</pre></details>\n";
  }
}

void write_samples(std::string& page, const RunMetrics& run) {
  std::string body;
  int validations = 0;
  for (const auto& event : run.events) {
    if (!is(event, "valid")) continue;
    ++validations;
    body += fmt::format("<h3>step {}: BLEU {}, chrF {}, dev loss {}{}</h3>\n", event["step"].dump(),
                        number(event, "bleu"), number(event, "chrf"), number(event, "loss", "{:.4f}"),
                        flag(event, "best") ? " (best so far)" : "");
    const auto samples = event.find("samples");
    if (samples == event.end() || !samples->is_array() || samples->empty()) {
      body += "<p class=\"muted\">no samples logged</p>\n";
      continue;
    }
    body += "<table class=\"samples\">\n";
    for (const auto& sample : *samples) {
      if (!sample.is_object()) continue;
      for (const char* key : {"src", "ref", "hyp"}) {
        body += fmt::format("<tr{}><td>{}</td><td>{}</td></tr>", key[0] == 's' ? " class=\"first\"" : "", key,
                            escape_html(text(sample, key)));
      }
      body += "\n";
    }
    body += "</table>\n";
  }
  page += fmt::format("<details><summary>Sample translations of {} validation{}</summary>\n{}</details>\n",
                      validations, validations == 1 ? "" : "s", body);
}

std::string now_text() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%d %H:%M", std::localtime(&now));
  return buffer;
}

}  // namespace

const std::vector<Curve>& report_curves() {
  static const std::vector<Curve> curves = {
      {"train_loss", "train", "loss", "train loss (label-smoothed cross-entropy per target token)", "loss"},
      {"dev_loss", "valid", "loss", "dev loss (NLL per target token, no smoothing)", "loss"},
      {"dev_ppl", "valid", "ppl", "dev perplexity", "perplexity"},
      {"dev_bleu", "valid", "bleu", "dev BLEU", "BLEU"},
      {"dev_chrf", "valid", "chrf", "dev chrF", "chrF"},
      {"lr", "train", "lr", "learning rate", "learning rate"},
      {"tgt_tokens_per_s", "train", "tgt_tokens_per_s", "target tokens per second (training)", "tokens/s"},
  };
  return curves;
}

std::string html_report(const std::vector<RunMetrics>& runs) {
  std::string names;
  for (const auto& run : runs) names += (names.empty() ? "" : ", ") + run.name;
  std::string page = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  page += "<title>trafo report: " + escape_html(names) + "</title>\n<style>" + kReportStyle + "</style>\n";
  page += "</head>\n<body>\n<h1>trafo report</h1>\n";
  page += "<p class=\"muted\">" + escape_html(names) + " · written " + now_text() + "</p>\n";

  std::string problems;
  for (const auto& run : runs) {
    for (const auto& problem : run.problems) problems += "<li>" + escape_html(problem) + " (left out)</li>\n";
  }
  if (!problems.empty()) page += "<div class=\"problems\"><b>Malformed lines</b><ul>\n" + problems + "</ul></div>\n";

  write_curves(page);
  for (size_t r = 0; r < runs.size(); ++r) {
    page += fmt::format("<h2><span class=\"swatch\" style=\"background:{}\"></span>{}</h2>\n", run_color(r),
                        escape_html(runs[r].name));
    write_summary(page, runs[r]);
    write_samples(page, runs[r]);
  }
  page += "<script type=\"application/json\" id=\"trafo-data\">" + script_json(chart_data(runs)) + "</script>\n";
  page += "<script>\n" + std::string(chart_js()) + "\n</script>\n";
  page += std::string("<script>") + kReportScript + "</script>\n</body>\n</html>\n";
  return page;
}

}  // namespace trafo::report
