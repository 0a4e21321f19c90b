#include "trafo/report/attention_svg.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <torch/torch.h>

#include "trafo/report/html.h"

namespace trafo::report {
namespace {

constexpr double kCell = 18;        // a weight's square, in px
constexpr double kCharWidth = 7.2;  // estimated width of one character at 12px
constexpr double kTitleHeight = 20;
constexpr double kGap = 28;         // between panels

struct Panel {
  std::string body;  // SVG elements drawn from (0, 0)
  double width = 0, height = 0;
};

double label_width(const std::vector<std::string>& labels) {
  size_t longest = 0;
  for (const auto& label : labels) {  // UTF-8 characters, not bytes
    longest = std::max<size_t>(longest, std::count_if(label.begin(), label.end(),
                                                      [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
  }
  return static_cast<double>(longest) * kCharWidth + 8;
}

// White (0) to dark blue (1).
std::string color(float weight) {
  const double w = std::clamp(static_cast<double>(weight), 0.0, 1.0);
  auto channel = [w](int dark) { return static_cast<int>(std::lround(255 + (dark - 255) * w)); };
  return fmt::format("rgb({},{},{})", channel(8), channel(48), channel(107));
}

// weights [R,C] as a heatmap with labelled rows (left) and columns (top, written upwards).
Panel heatmap(const torch::Tensor& weights, const std::vector<std::string>& rows,
              const std::vector<std::string>& columns, const std::string& title) {
  const double left = label_width(rows), top = kTitleHeight + label_width(columns);
  const auto values = weights.accessor<float, 2>();
  Panel panel;
  panel.width = left + kCell * static_cast<double>(columns.size()) + 4;
  panel.height = top + kCell * static_cast<double>(rows.size()) + 4;
  std::string& svg = panel.body;
  svg += fmt::format("<text x=\"{}\" y=\"14\" class=\"title\">{}</text>\n", left, escape_html(title));
  for (size_t c = 0; c < columns.size(); ++c) {
    const double x = left + kCell * (static_cast<double>(c) + 0.5) + 4;
    svg += fmt::format("<text transform=\"translate({:.1f},{:.1f}) rotate(-90)\" class=\"label\">{}</text>\n", x,
                       top - 4, escape_html(columns[c]));
  }
  svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" class=\"frame\"/>\n", left, top,
                     kCell * static_cast<double>(columns.size()), kCell * static_cast<double>(rows.size()));
  for (size_t r = 0; r < rows.size(); ++r) {
    const double y = top + kCell * static_cast<double>(r);
    svg += fmt::format("<text x=\"{}\" y=\"{:.1f}\" class=\"label\" text-anchor=\"end\">{}</text>\n", left - 4,
                       y + kCell * 0.7, escape_html(rows[r]));
    for (size_t c = 0; c < columns.size(); ++c) {
      const float w = values[static_cast<int64_t>(r)][static_cast<int64_t>(c)];
      if (w < 0.005f) continue;  // white on white
      svg += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{} → {}: {:.3f}</title></rect>\n",
          left + kCell * static_cast<double>(c), y, kCell, kCell, color(w), escape_html(rows[r]),
          escape_html(columns[c]), w);
    }
  }
  return panel;
}

std::string heading(const AttentionMap& map) {
  const std::string layer = "layer " + std::to_string(map.layer + 1);
  if (map.kind == "cross") return "Cross-attention, " + layer + " (rows: predicted target piece; columns: source)";
  if (map.kind == "encoder") return "Encoder self-attention, " + layer;
  return "Decoder self-attention (causal), " + layer + " (decoder inputs)";
}

// The head average first, then each head.
std::vector<Panel> panels(const AttentionMap& map) {
  std::vector<Panel> result{heatmap(map.weights.mean(0), map.rows, map.columns, "average of heads")};
  for (int64_t h = 0; h < map.weights.size(0); ++h) {
    result.push_back(heatmap(map.weights[h], map.rows, map.columns, "head " + std::to_string(h + 1)));
  }
  return result;
}

const char* const kSvgStyle =
    ".title{font:bold 13px sans-serif;fill:#222}.label{font:12px monospace;fill:#333}"
    ".frame{fill:none;stroke:#bbb}.heading{font:bold 15px sans-serif;fill:#111}";

std::string svg_element(const Panel& panel, double x, double y) {
  return fmt::format("<svg x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\">\n{}</svg>\n", x, y,
                     panel.width, panel.height, panel.body);
}

std::string texts_line(const AttentionMaps& maps) {
  return "source: " + maps.source + "  |  target (" + (maps.forced ? "given" : "translated") + "): " + maps.target;
}

}  // namespace

std::string attention_svg(const AttentionMaps& maps) {
  std::string body;
  double y = 40, width = 600;
  body += fmt::format("<text x=\"10\" y=\"22\" class=\"heading\">{}</text>\n", escape_html(texts_line(maps)));
  for (const auto& map : maps.maps) {
    body += fmt::format("<text x=\"10\" y=\"{:.1f}\" class=\"heading\">{}</text>\n", y + 18, escape_html(heading(map)));
    y += 28;
    double x = 10, row_height = 0;
    for (const auto& panel : panels(map)) {
      body += svg_element(panel, x, y);
      x += panel.width + kGap;
      row_height = std::max(row_height, panel.height);
    }
    width = std::max(width, x);
    y += row_height + 16;
  }
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" "
      "height=\"{:.0f}\" viewBox=\"0 0 {:.0f} {:.0f}\">\n<style>{}</style>\n<rect width=\"100%\" height=\"100%\" "
      "fill=\"white\"/>\n{}</svg>\n",
      width, y, width, y, kSvgStyle, body);
}

std::string attention_html(const AttentionMaps& maps) {
  std::string page =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>trafo attention</title>\n<style>"
      "body{font:14px/1.45 system-ui,sans-serif;color:#222;margin:16px 24px}h2{font-size:16px;margin:24px 0 6px}"
      ".panels{display:flex;flex-wrap:wrap;gap:18px;align-items:flex-start}table td{padding:2px 10px 2px 0}";
  page += std::string(kSvgStyle) + "</style>\n</head>\n<body>\n<h1>Attention weights</h1>\n<table>\n";
  page += "<tr><td>source</td><td>" + escape_html(maps.source) + "</td></tr>\n";
  page += std::string("<tr><td>target (") + (maps.forced ? "given" : "translated") + ")</td><td>" +
          escape_html(maps.target) + "</td></tr>\n</table>\n";
  page += "<p>Each row sums to 1; darker is more weight. Hover over a square for its value.</p>\n";
  for (const auto& map : maps.maps) {
    page += fmt::format("<h2 data-kind=\"{}\" data-layer=\"{}\">{}</h2>\n<div class=\"panels\">\n", map.kind, map.layer,
                        escape_html(heading(map)));
    for (const auto& panel : panels(map)) {
      page += fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\">\n{}</svg>\n",
                          panel.width, panel.height, panel.body);
    }
    page += "</div>\n";
  }
  return page + "</body>\n</html>\n";
}

}  // namespace trafo::report
