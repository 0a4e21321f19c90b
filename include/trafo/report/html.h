// Pieces shared by the HTML pages that `trafo report` and `trafo attention` write.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace trafo::report {

// Text safe inside HTML elements and double-quoted attributes: & < > " ' escaped.
std::string escape_html(std::string_view text);

// JSON safe inside <script type="application/json">: "</" written as "<\/"; invalid UTF-8 replaced.
std::string script_json(const nlohmann::json& value);

// Chart.js (Debian's libjs-chart.js), embedded at build time so that reports open offline.
std::string_view chart_js();

}  // namespace trafo::report
