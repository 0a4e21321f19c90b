#include "report_page_assets.h"

namespace trafo::report {

const char* const kReportStyle = R"css(
body { font: 14px/1.45 system-ui, sans-serif; color: #222; margin: 0 auto; padding: 16px 24px; max-width: 1400px; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 18px; border-bottom: 1px solid #ddd; padding-bottom: 4px; margin-top: 28px; }
h3 { font-size: 15px; margin: 22px 0 6px; }
.muted { color: #666; }
.problems { background: #fff4e5; border: 1px solid #f0b35a; padding: 8px 12px; border-radius: 4px; }
.advice { background: #eef6ff; border: 1px solid #7aa7e0; padding: 8px 12px; border-radius: 4px; }
.curve { margin: 10px 0 18px; }
.curve h3 { margin: 0 0 4px; }
.pair { display: grid; grid-template-columns: 1fr 1fr; gap: 18px; }
.chart { position: relative; height: 240px; }
table { border-collapse: collapse; }
td, th { border: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f5f5f5; font-weight: 600; }
table.samples td:first-child { color: #666; width: 3em; }
table.samples tr.first td { border-top: 2px solid #999; }
.swatch { display: inline-block; width: 12px; height: 12px; border-radius: 2px; margin-right: 6px; vertical-align: -1px; }
pre { background: #f7f7f7; padding: 8px; overflow: auto; max-height: 420px; font-size: 12px; }
details { margin: 6px 0; }
summary { cursor: pointer; }
)css";

const char* const kReportScript = R"js(
(function () {
  'use strict';
  const data = JSON.parse(document.getElementById('trafo-data').textContent);
  function hasInk(canvas) {
    const pixels = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
    for (let i = 3; i < pixels.length; i += 4) if (pixels[i] !== 0) return true;
    return false;
  }
  // Chart.js writes 0.00004 as "4.000000E-5"; small learning rates read better as 4.0e-5.
  function tick(value, index, ticks) {
    const size = Math.abs(value);
    if (size !== 0 && size < 1e-3) return value.toExponential(1);
    return Chart.Ticks.formatters.numeric.call(this, value, index, ticks);
  }
  let drawn = 0, expected = 0;
  for (const curve of data.curves) {
    for (const axis of ['step', 'time']) {
      expected++;
      const canvas = document.querySelector('canvas[data-curve="' + curve.id + '"][data-axis="' + axis + '"]');
      const datasets = data.runs.filter(function (run) { return curve.id in run.points; }).map(function (run) {
        const points = (run.points[curve.id] || []).filter(function (p) { return p[2] !== null; });
        return {
          label: run.name,
          data: points.map(function (p) { return {x: axis === 'step' ? p[0] : p[1], y: p[2]}; }),
          borderColor: run.color, backgroundColor: run.color, borderWidth: 1.5, showLine: true,
          borderDash: run.dashed ? [6, 3] : [],
          pointRadius: curve.event === 'valid' ? 2.5 : 0, pointHoverRadius: 4,
        };
      });
      const xTitle = axis === 'step' ? 'step' : 'wall-clock time (' + data.time_unit + ')';
      try {
        new Chart(canvas, {
          type: 'scatter',
          data: {datasets: datasets},
          options: {
            animation: false, responsive: true, maintainAspectRatio: false,
            plugins: {legend: {display: true, position: 'bottom'}},
            scales: {x: {type: 'linear', title: {display: true, text: xTitle}},
                     y: {type: 'linear', title: {display: true, text: curve.y_title}, ticks: {callback: tick}}},
          },
        });
        if (hasInk(canvas)) drawn++;
      } catch (error) {
        console.error('trafo report: cannot draw ' + curve.id + ' against ' + axis + ': ' + error);
      }
    }
  }
  document.body.dataset.chartsDrawn = String(drawn);
  document.body.dataset.chartsExpected = String(expected);
})();
)js";

}  // namespace trafo::report
