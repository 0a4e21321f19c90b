// HTTP/1.1 messages as trafo serve reads and writes them: a request is read whole (head and body)
// before any thread but the transport's sees it, and its size is bounded before its body is read.
// Pure functions over bytes, so that every rule is tested without a socket (serve/http_transport.h
// moves the bytes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trafo::serve::http {

using Pairs = std::vector<std::pair<std::string, std::string>>;

struct Request {
  std::string method;  // HEAD is answered as GET without the body
  std::string path;    // the target up to '?', as sent
  Pairs headers;       // names in lower case, in the order sent
  std::string body;
  Pairs params;  // the query's fields, then the body's (a urlencoded or multipart form)
  bool keep_alive = true;

  std::string header(std::string_view lower_name) const;  // "" when absent
  bool has_param(std::string_view name) const;
  size_t param_count(std::string_view name) const;
  std::string param(std::string_view name, size_t index = 0) const;  // "" when absent
};

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  Pairs headers;  // besides Content-Type, Content-Length and Connection
};

struct MessageLimits {
  int64_t max_body_bytes = int64_t{1} << 20;
  size_t max_head_bytes = 16384;  // request line and headers together
  size_t max_headers = 100;
};

// What the bytes received so far on a connection make.
struct Parsed {
  enum Kind { kIncomplete, kComplete, kRefused } kind = kIncomplete;
  size_t head_bytes = 0;   // once the head is whole: its size
  size_t total_bytes = 0;  // once the head is whole: head and body
  bool expects_continue = false;  // the client waits for "100 Continue" before its body
  int status = 0;                 // kRefused: the answer, and why
  std::string reason;
};

// Reads `received` (a connection's bytes from the start of a request); on kComplete, `request`
// holds it, form fields parsed. A body's size is checked against the limit from the head alone:
// a body without Content-Length (any Transfer-Encoding) gets 411, a compressed one 415.
Parsed parse_request(std::string_view received, const MessageLimits& limits, Request& request);

// "a+b%21" -> "a b!"; a '%' not followed by two hex digits stays as it is.
std::string form_decode(std::string_view text);

// The status line, headers and body; `keep_alive` false adds "Connection: close". For HEAD the
// body is left out and its length kept.
std::string serialize(const Response& response, bool keep_alive, bool head_only = false);

const char* status_text(int status);

}  // namespace trafo::serve::http
