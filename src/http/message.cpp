#include "trafo/http/message.h"

#include <algorithm>
#include <cctype>
#include <optional>

#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <fmt/format.h>

namespace trafo::http {
namespace {

namespace beast = boost::beast::http;
using BeastParser = beast::request_parser<beast::string_body>;

std::string_view view(boost::beast::string_view text) { return {text.data(), text.size()}; }

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

Parsed refused(int status, std::string reason) {
  Parsed p;
  p.kind = Parsed::kRefused;
  p.status = status;
  p.reason = std::move(reason);
  return p;
}

// The comma-separated items of a header's values, in lower case, over every copy of it.
std::vector<std::string> items(const Pairs& headers, std::string_view name) {
  std::vector<std::string> out;
  for (const auto& [key, value] : headers) {
    if (key != name) continue;
    std::string_view rest = value;
    while (!rest.empty()) {
      const auto comma = rest.find(',');
      const auto item = trimmed(rest.substr(0, comma));
      if (!item.empty()) out.push_back(lower(item.substr(0, item.find(';'))));
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  return out;
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

// A multipart/form-data body's parts as fields (a file part too: its content is the value, its
// name in `files`).
bool add_parts(std::string_view body, const std::string& boundary, Pairs& out, Pairs& files) {
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
    std::string name, file_name;
    bool file = false;
    for (const auto line : lines_of(body.substr(head_start, head_stop - head_start))) {
      const auto colon = line.find(':');
      if (colon != std::string_view::npos && lower(trimmed(line.substr(0, colon))) == "content-disposition") {
        name = parameter(line.substr(colon + 1), "name");
        file_name = parameter(line.substr(colon + 1), "filename");
        file = line.find("filename") != std::string_view::npos;
      }
    }
    if (name.empty()) return false;
    if (file) files.emplace_back(name, file_name);
    out.emplace_back(name, std::string(body.substr(head_stop + 4, next - head_stop - 4)));
    at = next + 2;
  }
}

bool compressed(const std::string& coding) {
  return coding == "gzip" || coding == "x-gzip" || coding == "deflate" || coding == "compress" ||
         coding == "x-compress" || coding == "br" || coding == "zstd";
}

// Whether the request line of `bytes` ends in a well-formed version other than 1.0 and 1.1.
bool another_version(std::string_view bytes) {
  const auto line = bytes.substr(0, bytes.find("\r\n"));
  const auto at = line.rfind(" HTTP/");
  if (at == std::string_view::npos || line.size() != at + 9) return false;
  const auto version = line.substr(at + 6);
  return std::isdigit(static_cast<unsigned char>(version[0])) && version[1] == '.' &&
         std::isdigit(static_cast<unsigned char>(version[2])) && version != "1.0" && version != "1.1";
}

// Beast's reason for refusing `bytes`, as an answer.
Parsed refused_by_parser(const boost::system::error_code& error, const MessageLimits& limits, int64_t body_limit,
                         std::string_view bytes) {
  if (error == beast::error::header_limit) {
    return refused(431, fmt::format("the request line and headers are larger than {} bytes", limits.max_head_bytes));
  }
  if (error == beast::error::body_limit) {
    return refused(413, fmt::format("the request is larger than {} bytes", body_limit));
  }
  if (error == beast::error::bad_content_length) return refused(400, "a malformed or conflicting Content-Length");
  if (error == beast::error::bad_transfer_encoding) {
    return refused(400, "a Transfer-Encoding beside a Content-Length, or chunked twice");
  }
  if (error == beast::error::bad_chunk || error == beast::error::bad_chunk_extension) {
    return refused(400, "a malformed chunk of a chunked body");
  }
  if (error == beast::error::bad_version && another_version(bytes)) return refused(505, "HTTP/1.1 only");
  if (error == beast::error::bad_version) return refused(400, "a malformed request line");
  if (error == beast::error::bad_method || error == beast::error::bad_target) {
    return refused(400, "a malformed request line");
  }
  return refused(400, "a malformed request: " + error.message());
}

}  // namespace

struct RequestReader::Impl {
  MessageLimits limits;
  std::optional<BeastParser> parser;
  Request head;  // the request as far as it is read
  bool head_checked = false;
  bool started = false;  // past the blank lines a request may follow
  size_t head_bytes = 0;  // of the head, taken by the parser so far
  int64_t body_limit;     // the limit of this request's path
  Parsed state;

  explicit Impl(const MessageLimits& l) : limits(l), body_limit(l.max_body_bytes) {
    parser.emplace();
    parser->header_limit(static_cast<std::uint32_t>(std::min<size_t>(limits.max_head_bytes, UINT32_MAX)));
    // Beast checks a Content-Length as it reads the head, before the path is known: the largest
    // limit here, and the path's own once the head is read.
    int64_t largest = limits.max_body_bytes;
    for (const auto& [path, limit] : limits.max_body_bytes_at) largest = std::max(largest, limit);
    parser->body_limit(static_cast<std::uint64_t>(std::max<int64_t>(largest, 0)));
    parser->eager(false);  // stop after the head, so that it is checked before a byte of the body is read
  }

  // The head's own rules, beyond what Beast checks: a refusal, or nullopt.
  Parsed head_too_large() const {
    return refused(431, fmt::format("the request line and headers are larger than {} bytes", limits.max_head_bytes));
  }

  std::optional<Parsed> check_head() {
    if (head_bytes > limits.max_head_bytes) return head_too_large();
    const auto& message = parser->get();
    if (message.version() != 10 && message.version() != 11) return refused(505, "HTTP/1.1 only");
    const auto target = view(message.target());
    if (target.empty() || target.front() != '/') return refused(400, "a malformed request line");
    for (const auto& field : message) {
      head.headers.emplace_back(lower(view(field.name_string())), std::string(trimmed(view(field.value()))));
    }
    if (head.headers.size() > limits.max_headers) return refused(431, fmt::format("more than {} headers", limits.max_headers));
    const auto codings = items(head.headers, "transfer-encoding");
    if (std::any_of(codings.begin(), codings.end(), compressed)) {
      return refused(415, "send the body uncompressed: Transfer-Encoding " + head.header("transfer-encoding") +
                              " is not accepted");
    }
    if (!codings.empty() && codings != std::vector<std::string>{"chunked"}) {
      return refused(411, "send the body with a Content-Length or chunked: Transfer-Encoding " +
                              head.header("transfer-encoding") + " is not accepted");
    }
    for (const auto& coding : items(head.headers, "content-encoding")) {
      if (coding != "identity") {
        return refused(415, "send the body uncompressed: Content-Encoding " + head.header("content-encoding") +
                                " is not accepted");
      }
    }
    head.method = std::string(view(message.method_string()));
    const auto query = target.find('?');
    head.path = std::string(target.substr(0, query));
    if (query != std::string_view::npos) add_fields(target.substr(query + 1), head.params);
    if (const auto own = limits.max_body_bytes_at.find(head.path); own != limits.max_body_bytes_at.end()) {
      body_limit = own->second;
    }
    const auto length = parser->content_length();
    if (length && *length > static_cast<std::uint64_t>(std::max<int64_t>(body_limit, 0))) {
      return refused(413, fmt::format("the request is larger than {} bytes", body_limit));
    }
    parser->body_limit(static_cast<std::uint64_t>(std::max<int64_t>(body_limit, 0)));
    return std::nullopt;
  }

  Parsed read(std::string_view bytes) {
    if (state.kind != Parsed::kIncomplete) return state;
    size_t used = 0;
    if (!started) {  // blank lines before a request line are skipped (RFC 9112 2.2)
      used = std::min(bytes.find_first_not_of("\r\n"), bytes.size());
      started = used < bytes.size();
    }
    while (used < bytes.size() && !parser->is_done()) {
      // Beast 1.74 asserts that a last chunk it waited on comes back with 5 bytes at least; a
      // chunked body cannot end in fewer ("0\r\n\r\n"), so fewer are left until more come.
      if (parser->is_header_done() && parser->chunked() && bytes.size() - used < 5) break;
      boost::system::error_code error;
      const bool in_head = !parser->is_header_done();
      const size_t n = parser->put(boost::asio::const_buffer(bytes.data() + used, bytes.size() - used), error);
      used += n;
      if (in_head) head_bytes += n;
      if (error == beast::error::need_more) break;
      if (error) return state = refused_by_parser(error, limits, body_limit, bytes.substr(used));
      if (parser->is_header_done() && !head_checked) {
        head_checked = true;
        if (auto refusal = check_head()) return state = *refusal;
        parser->eager(true);
      }
      if (n == 0 && !parser->is_done()) break;
    }
    if (parser->is_header_done() && !head_checked) {  // a head without a body completes in the same call
      head_checked = true;
      if (auto refusal = check_head()) return state = *refusal;
    }
    // Beast takes the start line and the fields in separate looks, each against its limit, so that
    // a head can pass it by a start line's length: the head's bytes are counted here.
    if (!parser->is_header_done() && head_bytes + (bytes.size() - used) > limits.max_head_bytes) {
      return state = head_too_large();
    }
    state.used = used;
    if (!parser->is_done()) {
      state.expects_continue = head_checked && lower(head.header("expect")) == "100-continue";
      return state;
    }
    auto message = parser->release();
    head.body = std::move(message.body());
    head.keep_alive = message.keep_alive();
    const auto type = lower(head.header("content-type"));
    if (type.rfind("application/x-www-form-urlencoded", 0) == 0) {
      add_fields(head.body, head.params);
    } else if (type.rfind("multipart/form-data", 0) == 0 &&
               !add_parts(head.body, parameter(head.header("content-type"), "boundary"), head.params, head.file_names)) {
      return state = refused(400, "a malformed multipart/form-data body");
    }
    state.kind = Parsed::kComplete;
    return state;
  }
};

RequestReader::RequestReader(const MessageLimits& limits) : impl_(std::make_unique<Impl>(limits)) {}
RequestReader::~RequestReader() = default;
Parsed RequestReader::read(std::string_view bytes) { return impl_->read(bytes); }
Request RequestReader::take() { return std::move(impl_->head); }

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

std::string Request::file_name(std::string_view field) const {
  for (const auto& [key, value] : file_names) {
    if (key == field) return value;
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
  RequestReader reader(limits);
  const auto parsed = reader.read(received);
  if (parsed.kind == Parsed::kComplete) request = reader.take();
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

}  // namespace trafo::http
