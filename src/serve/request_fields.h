// A request's fields and faults: what LibreTranslate's and trafo's endpoints read from a JSON body or
// a form, checked for type and UTF-8, and the HttpError that answers a bad one.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <utf8.h>

#include "trafo/http/message.h"
#include "trafo/json.h"

namespace trafo::serve::detail {

// A request's fault, answered with `status` and {"error": message}.
struct HttpError : std::runtime_error {
  HttpError(int status, const std::string& message) : std::runtime_error(message), status(status) {}
  int status;
};

// A request's fields, from a JSON object or a form (application/x-www-form-urlencoded or
// multipart), as LibreTranslate takes both.
class Fields {
  using json = nlohmann::json;

 public:
  explicit Fields(const http::Request& request) : request_(request) {
    const auto type = request.header("content-type");
    if (type.rfind("application/json", 0) == 0) {
      try {
        body_ = parse_json(request.body, "the body");
      } catch (const json::exception&) {
        throw HttpError(400, "the body is not valid JSON");
      } catch (const JsonTooDeep& e) {
        throw HttpError(400, e.what());
      }
      if (!body_->is_object()) throw HttpError(400, "the body must be a JSON object");
    }
  }

  // A field comes from the JSON body where it is there, else from the query or form: a JSON body
  // may leave a field (the key) to the query.
  bool has(const std::string& name) const { return in_body(name) || request_.has_param(name); }

  std::string text(const std::string& name) const {
    if (!has(name)) throw HttpError(400, "Invalid request: missing " + name + " parameter");
    std::string value;
    if (in_body(name)) {
      const auto& field = (*body_)[name];
      if (!field.is_string()) throw HttpError(400, name + " must be a string");
      value = field.get<std::string>();
    } else {
      value = request_.param(name);
    }
    utf8_checked(value, name);
    return value;
  }

  std::string text_or(const std::string& name, const std::string& otherwise) const {
    return has(name) ? text(name) : otherwise;
  }

  // A string or a list of strings (a form may repeat the field); `listed` says which it was.
  std::vector<std::string> texts(const std::string& name, bool& listed) const {
    if (!has(name)) throw HttpError(400, "Invalid request: missing " + name + " parameter");
    std::vector<std::string> values;
    listed = false;
    if (in_body(name)) {
      const auto& field = (*body_)[name];
      if (field.is_string()) {
        values.push_back(field.get<std::string>());
      } else if (field.is_array()) {
        listed = true;
        for (const auto& item : field) {
          if (!item.is_string()) throw HttpError(400, name + " must be a string or a list of strings");
          values.push_back(item.get<std::string>());
        }
      } else {
        throw HttpError(400, name + " must be a string or a list of strings");
      }
    } else {
      const size_t count = request_.param_count(name);
      listed = count > 1;
      for (size_t i = 0; i < count; ++i) values.push_back(request_.param(name, i));
    }
    if (listed && values.empty()) throw HttpError(400, name + " is an empty list");
    for (const auto& value : values) utf8_checked(value, name);
    return values;
  }

  // A JSON list of [source, target] string pairs (a glossary); at most `most`, each string at most
  // `bytes` long. A form cannot carry it.
  std::vector<std::pair<std::string, std::string>> pairs(const std::string& name, size_t most, size_t bytes) const {
    if (!body_) throw HttpError(400, name + " needs a JSON body");
    const auto& field = (*body_)[name];
    const auto bad = HttpError(400, name + " must be a list of [source term, target term] pairs");
    if (!field.is_array()) throw bad;
    if (field.size() > most) throw HttpError(413, fmt::format("{}: more than {} pairs", name, most));
    std::vector<std::pair<std::string, std::string>> values;
    for (const auto& item : field) {
      if (!item.is_array() || item.size() != 2 || !item[0].is_string() || !item[1].is_string()) throw bad;
      values.emplace_back(item[0].get<std::string>(), item[1].get<std::string>());
      for (const auto* text : {&values.back().first, &values.back().second}) {
        utf8_checked(*text, name);
        if (text->size() > bytes) throw HttpError(413, fmt::format("{}: a term of {} bytes: at most {}", name, text->size(), bytes));
        if (text->find('\n') != std::string::npos || text->find('\t') != std::string::npos) {
          throw HttpError(400, name + ": a term holds no line break or tab");
        }
      }
    }
    return values;
  }

  double number(const std::string& name, double otherwise) const {
    if (!has(name)) return otherwise;
    if (in_body(name)) {
      const auto& field = (*body_)[name];
      if (!field.is_number()) throw HttpError(400, name + " must be a number");
      return field.get<double>();
    }
    const auto value = request_.param(name);
    try {
      size_t used = 0;
      const double parsed = std::stod(value, &used);
      if (used != value.size() || !std::isfinite(parsed)) throw std::invalid_argument(value);
      return parsed;
    } catch (const std::exception&) {
      throw HttpError(400, name + " must be a number, not '" + value.substr(0, 40) + "'");
    }
  }

  int64_t integer(const std::string& name, int64_t otherwise, int64_t low, int64_t high) const {
    const double value = number(name, static_cast<double>(otherwise));
    if (value != std::floor(value) || value < static_cast<double>(low) || value > static_cast<double>(high)) {
      throw HttpError(400, fmt::format("{} must be a whole number from {} to {}", name, low, high));
    }
    return static_cast<int64_t>(value);
  }

  bool flag(const std::string& name) const {
    if (!has(name)) return false;
    if (in_body(name)) {
      const auto& field = (*body_)[name];
      if (!field.is_boolean()) throw HttpError(400, name + " must be true or false");
      return field.get<bool>();
    }
    const auto value = request_.param(name);
    if (value == "true" || value == "1") return true;
    if (value == "false" || value == "0") return false;
    throw HttpError(400, name + " must be true or false");
  }

 private:
  bool in_body(const std::string& name) const { return body_ && body_->contains(name) && !(*body_)[name].is_null(); }

  static void utf8_checked(const std::string& value, const std::string& name) {
    if (!utf8::is_valid(value.begin(), value.end())) throw HttpError(400, name + " is not valid UTF-8");
  }

  const http::Request& request_;
  std::optional<json> body_;
};

// The lines of each text (a text may hold several lines: each is translated on its own).
inline std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  for (;;) {
    const auto end = text.find('\n', start);
    std::string line = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
    if (end == std::string::npos) return lines;
    start = end + 1;
  }
}

}  // namespace trafo::serve::detail
