// The style sheet and the chart-drawing script of the `trafo report` page.
#pragma once

namespace trafo::report {

extern const char* const kReportStyle;
// Reads <script id="trafo-data">, draws every <canvas data-curve data-axis> with Chart.js,
// then sets data-charts-drawn / data-charts-expected on <body>.
extern const char* const kReportScript;

}  // namespace trafo::report
