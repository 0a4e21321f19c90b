#include "trafo/serve/http_message.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

namespace trafo::serve::http {
namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trimmed(std::string_view text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

// RFC 9110's token characters: what a method and a header name are made of.
bool token(std::string_view text) {
  if (text.empty()) return false;
  return std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
  });
}

Parsed refused(int status, std::string reason) {
  Parsed p;
  p.kind = Parsed::kRefused;
  p.status = status;
  p.reason = std::move(reason);
  return p;
}

// Where the head ends (after its blank line), or npos; a line may end in CRLF or in LF alone.
size_t head_end(std::string_view received) {
  const auto crlf = received.find("\r\n\r\n");
  const auto lf = received.find("\n\n");
  if (crlf == std::string_view::npos && lf == std::string_view::npos) return std::string_view::npos;
  return crlf < lf ? crlf + 4 : lf + 2;
}

std::vector<std::string_view> lines_of(std::string_view head) {
  std::vector<std::string_view> lines;
  while (!head.empty()) {
    const auto end = head.find('\n');
    auto line = head.substr(0, end);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    if (end == std::string_view::npos) break;
    head.remove_prefix(end + 1);
  }
  return lines;
}

void add_fields(std::string_view text, Pairs& out) {
  while (!text.empty()) {
    const auto end = text.find('&');
    const auto field = text.substr(0, end);
    if (!field.empty()) {
      const auto equals = field.find('=');
      out.emplace_back(form_decode(field.substr(0, equals)),
                       equals == std::string_view::npos ? "" : form_decode(field.substr(equals + 1)));
    }
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
}

// `name` of a header value's parameters ("form-data; name=\"q\"", "multipart/form-data; boundary=x").
std::string parameter(std::string_view value, std::string_view name) {
  while (!value.empty()) {
    const auto end = value.find(';');
    const auto item = trimmed(value.substr(0, end));
    const auto equals = item.find('=');
    if (equals != std::string_view::npos && lower(trimmed(item.substr(0, equals))) == name) {
      auto v = trimmed(item.substr(equals + 1));
      if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
      return std::string(v);
    }
    if (end == std::string_view::npos) break;
    value.remove_prefix(end + 1);
  }
  return "";
}

// A multipart/form-data body's parts as fields (a file part too: its content is the value).
bool add_parts(std::string_view body, const std::string& boundary, Pairs& out) {
  const std::string delimiter = "--" + boundary;
  auto at = body.find(delimiter);
  if (boundary.empty() || at == std::string_view::npos) return false;
  for (;;) {
    at += delimiter.size();
    if (body.substr(at, 2) == "--") return true;
    if (body.substr(at, 2) != "\r\n") return false;
    const auto head_start = at + 2;
    const auto head_stop = body.find("\r\n\r\n", head_start);
    if (head_stop == std::string_view::npos) return false;
    const auto next = body.find("\r\n" + delimiter, head_stop + 4);
    if (next == std::string_view::npos) return false;
    std::string name;
    for (const auto line : lines_of(body.substr(head_start, head_stop - head_start))) {
      const auto colon = line.find(':');
      if (colon != std::string_view::npos && lower(trimmed(line.substr(0, colon))) == "content-disposition") {
        name = parameter(line.substr(colon + 1), "name");
      }
    }
    if (name.empty()) return false;
    out.emplace_back(name, std::string(body.substr(head_stop + 4, next - head_stop - 4)));
    at = next + 2;
  }
}

// The body's size from Content-Length: -1 when it is not a number (or differs between copies).
int64_t content_length(const Pairs& headers, bool& given) {
  int64_t length = 0;
  given = false;
  for (const auto& [name, value] : headers) {
    if (name != "content-length") continue;
    if (value.empty() || value.size() > 18 || !std::all_of(value.begin(), value.end(), ::isdigit)) return -1;
    const auto parsed = std::stoll(value);
    if (given && parsed != length) return -1;
    length = parsed;
    given = true;
  }
  return length;
}

}  // namespace

std::string Request::header(std::string_view lower_name) const {
  for (const auto& [name, value] : headers) {
    if (name == lower_name) return value;
  }
  return "";
}

bool Request::has_param(std::string_view name) const { return param_count(name) > 0; }

size_t Request::param_count(std::string_view name) const {
  return static_cast<size_t>(std::count_if(params.begin(), params.end(), [&](const auto& p) { return p.first == name; }));
}

std::string Request::param(std::string_view name, size_t index) const {
  for (const auto& [key, value] : params) {
    if (key == name && index-- == 0) return value;
  }
  return "";
}

std::string form_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '+') {
      out += ' ';
    } else if (c == '%' && i + 2 < text.size() && std::isxdigit(static_cast<unsigned char>(text[i + 1])) &&
               std::isxdigit(static_cast<unsigned char>(text[i + 2]))) {
      out += static_cast<char>(std::stoi(std::string(text.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

Parsed parse_request(std::string_view received, const MessageLimits& limits, Request& request) {
  // Blank lines before a request line are skipped (RFC 9112 2.2).
  const auto start = std::min(received.find_first_not_of("\r\n"), received.size());
  const auto view = received.substr(start);
  const auto end = head_end(view);
  if (end == std::string_view::npos || end > limits.max_head_bytes) {
    if (view.size() <= limits.max_head_bytes) return {};
    return refused(431, fmt::format("the request line and headers are larger than {} bytes", limits.max_head_bytes));
  }
  const auto lines = lines_of(view.substr(0, end));
  Request r;
  {
    const auto& line = lines.front();
    const auto first = line.find(' '), last = line.rfind(' ');
    if (first == std::string_view::npos || first == last) return refused(400, "a malformed request line");
    r.method = std::string(line.substr(0, first));
    const auto target = line.substr(first + 1, last - first - 1);
    const auto version = line.substr(last + 1);
    if (!token(r.method) || target.empty() || target.front() != '/' || target.find(' ') != std::string_view::npos) {
      return refused(400, "a malformed request line");
    }
    if (version != "HTTP/1.1" && version != "HTTP/1.0") {
      return version.substr(0, 5) == "HTTP/" ? refused(505, "HTTP/1.1 only") : refused(400, "a malformed request line");
    }
    const auto query = target.find('?');
    r.path = std::string(target.substr(0, query));
    if (query != std::string_view::npos) add_fields(target.substr(query + 1), r.params);
    r.keep_alive = version == "HTTP/1.1";
  }
  for (size_t i = 1; i < lines.size(); ++i) {
    const auto& line = lines[i];
    if (line.empty()) continue;
    const auto colon = line.find(':');
    if (colon == std::string_view::npos || !token(line.substr(0, colon))) return refused(400, "a malformed header line");
    r.headers.emplace_back(lower(line.substr(0, colon)), std::string(trimmed(line.substr(colon + 1))));
    if (r.headers.size() > limits.max_headers) {
      return refused(431, fmt::format("more than {} headers", limits.max_headers));
    }
  }
  const auto connection = lower(r.header("connection"));
  if (connection.find("close") != std::string::npos) r.keep_alive = false;
  if (connection.find("keep-alive") != std::string::npos) r.keep_alive = true;

  if (!r.header("transfer-encoding").empty()) {
    return refused(411, "send the body with a Content-Length: bodies of another framing (Transfer-Encoding: " +
                            r.header("transfer-encoding") + ") are not accepted");
  }
  const auto encoding = lower(r.header("content-encoding"));
  if (!encoding.empty() && encoding != "identity") {
    return refused(415, "send the body uncompressed: Content-Encoding " + r.header("content-encoding") + " is not accepted");
  }
  bool given = false;
  const auto length = content_length(r.headers, given);
  if (length < 0) return refused(400, "a malformed Content-Length");
  if (length > limits.max_body_bytes) {
    return refused(413, fmt::format("the request is larger than {} bytes", limits.max_body_bytes));
  }
  Parsed parsed;
  parsed.head_bytes = start + end;
  parsed.total_bytes = parsed.head_bytes + static_cast<size_t>(length);
  if (received.size() < parsed.total_bytes) {
    parsed.expects_continue = lower(r.header("expect")) == "100-continue";
    return parsed;
  }
  r.body = std::string(received.substr(parsed.head_bytes, static_cast<size_t>(length)));
  const auto type = lower(r.header("content-type"));
  if (type.rfind("application/x-www-form-urlencoded", 0) == 0) {
    add_fields(r.body, r.params);
  } else if (type.rfind("multipart/form-data", 0) == 0) {
    if (!add_parts(r.body, parameter(r.header("content-type"), "boundary"), r.params)) {
      return refused(400, "a malformed multipart/form-data body");
    }
  }
  request = std::move(r);
  parsed.kind = Parsed::kComplete;
  return parsed;
}

const char* status_text(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 400: return "Bad Request";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 411: return "Length Required";
    case 413: return "Payload Too Large";
    case 415: return "Unsupported Media Type";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
  }
}

std::string serialize(const Response& response, bool keep_alive, bool head_only) {
  std::string out = fmt::format("HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: {}\r\n",
                                response.status, status_text(response.status), response.content_type,
                                response.body.size(), keep_alive ? "keep-alive" : "close");
  for (const auto& [name, value] : response.headers) out += name + ": " + value + "\r\n";
  out += "\r\n";
  if (!head_only) out += response.body;
  return out;
}

}  // namespace trafo::serve::http
