// `trafo report`: one self-contained HTML page (Chart.js embedded) with the curves, config, best
// checkpoint and sample translations of one or more run folders; several runs overlay their curves.
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "trafo/inference_cli/commands.h"
#include "trafo/report/html_report.h"
#include "trafo/report/run_advice.h"
#include "trafo/util/files.h"

namespace trafo::cli {
namespace {

struct ReportOptions {
  std::vector<std::string> run_dirs;  // run folders written by trafo train
  std::string out = "report.html";    // the page
};

int run_report(const ReportOptions& options) {
  // What trafo train saved in each run folder: a report is never written over it.
  std::vector<util::NamedPath> inputs;
  for (const auto& dir : options.run_dirs) {
    for (const char* name : {"metrics.jsonl", "config.toml", "train.log"}) {
      inputs.push_back({name, std::filesystem::path(dir) / name});
    }
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
      const auto name = entry.path().filename().string();
      if (name.rfind("checkpoint", 0) == 0) inputs.push_back({"checkpoint", entry.path()});
    }
  }
  util::refuse_overwriting("--out", options.out, inputs);
  std::vector<report::RunMetrics> runs;
  for (const auto& dir : options.run_dirs) {
    runs.push_back(report::read_run(dir));
    for (const auto& problem : runs.back().problems) spdlog::warn("{} (left out)", problem);
    for (const auto& sentence : report::run_advice(runs.back())) spdlog::info("{}: {}", runs.back().name, sentence);
  }
  util::write_file_atomically(options.out, report::html_report(runs));
  spdlog::info("wrote {} ({} run{})", options.out, runs.size(), runs.size() == 1 ? "" : "s");
  return 0;
}

}  // namespace

CommandRunner add_report_command(CLI::App& app) {
  auto options = std::make_shared<ReportOptions>();
  CLI::App* command = app.add_subcommand(
      "report",
      "write one self-contained HTML page (opens offline) with the curves of runs' metrics.jsonl against steps and "
      "wall-clock time, the effective config, the best checkpoint and the sample translations");
  command->add_option("RUN_DIR", options->run_dirs, "run folders (RUN_DIR of trafo train); several overlay")
      ->required();
  command->add_option("--out,-o", options->out, "the HTML file to write")->capture_default_str();
  return [options] { return run_report(*options); };
}

}  // namespace trafo::cli
