// `trafo report`: one self-contained HTML page for one or more runs: the curves of metrics.jsonl
// against steps and against wall-clock time (Chart.js, embedded), the effective config, the best
// checkpoint and its scores, and the sample translations of each validation.
#pragma once

#include <string>
#include <vector>

#include "trafo/report/metrics_reader.h"

namespace trafo::report {

// One curve of the page: a metric of one event kind, drawn against steps and against time.
struct Curve {
  std::string id;     // the chart's data-curve name, e.g. "train_loss"
  std::string event;  // "train" or "valid"
  std::string field;  // the event's field, e.g. "loss"
  std::string title;  // the charts' heading
  std::string axis;   // the y axis' short label
};

// train loss, dev loss, dev perplexity, dev BLEU, dev chrF, learning rate, target tokens/s.
const std::vector<Curve>& report_curves();

// The whole page. Each curve gets two charts (steps, wall-clock) overlaying every run; once drawn,
// the page sets <body data-charts-drawn="N" data-charts-expected="M"> (tests read them).
std::string html_report(const std::vector<RunMetrics>& runs);

}  // namespace trafo::report
