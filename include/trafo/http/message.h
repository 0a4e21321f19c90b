// HTTP/1.1 requests and answers as trafo serve reads and writes them. A request is read whole (head
// and body) before any thread but the transport's sees it; its head and body are parsed by
// Boost.Beast's parser, and its size is bounded before its body is read, or, for a chunked body, as
// it is decoded. Pure functions over bytes, so that every rule is tested without a socket
// (http/transport.h moves the bytes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trafo::http {

using Pairs = std::vector<std::pair<std::string, std::string>>;

struct Request {
  std::string method;  // HEAD is answered as GET without the body
  std::string path;    // the target up to '?', as sent
  Pairs headers;       // names in lower case, in the order sent
  std::string body;    // decoded from chunks when it came chunked
  Pairs params;  // the query's fields, then the body's (a urlencoded or multipart form)
  Pairs file_names;  // a multipart form's file fields: the field's name, the file's name as sent
  bool keep_alive = true;

  std::string header(std::string_view lower_name) const;  // "" when absent
  bool has_param(std::string_view name) const;
  size_t param_count(std::string_view name) const;
  std::string param(std::string_view name, size_t index = 0) const;  // "" when absent
  std::string file_name(std::string_view field) const;  // "" when the field was not a file
};

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  Pairs headers;  // besides Content-Type, Content-Length and Connection
};

struct MessageLimits {
  int64_t max_body_bytes = int64_t{1} << 20;  // decoded bytes, whether sized by Content-Length or chunked
  // Paths whose bodies have a limit of their own (POST /translate_file: a document).
  std::map<std::string, int64_t, std::less<>> max_body_bytes_at;
  size_t max_head_bytes = 16384;              // request line and headers together
  size_t max_headers = 100;
};

// What the bytes read so far make.
struct Parsed {
  enum Kind { kIncomplete, kComplete, kRefused } kind = kIncomplete;
  size_t used = 0;                // bytes of the input the request took (the rest is the next one's)
  bool expects_continue = false;  // kIncomplete: the client waits for "100 Continue" before its body
  int status = 0;                 // kRefused: the answer, and why
  std::string reason;
};

// Reads one request from bytes as they arrive, with Beast's parser. Refused, with the status that
// answers it: a head over max_head_bytes or max_headers (431); a body whose Content-Length is past
// max_body_bytes, from the head alone, or a chunked body once its decoded bytes pass it (413); a
// compressed body (415: a few kilobytes of gzip can unpack to gigabytes); a body framed by another
// Transfer-Encoding than chunked (411); a version other than 1.0 and 1.1 (505); anything malformed,
// a Content-Length beside a Transfer-Encoding or Content-Lengths that differ among them (400).
class RequestReader {
 public:
  explicit RequestReader(const MessageLimits& limits);
  ~RequestReader();
  RequestReader(const RequestReader&) = delete;
  RequestReader& operator=(const RequestReader&) = delete;

  // Reads from the front of `bytes`, which holds what an earlier call did not use followed by what
  // came since; returns what it knows now. `used` is how many bytes it took: those not taken must be
  // given again, with more, unless the request is whole (they are the next request's) or refused.
  Parsed read(std::string_view bytes);
  // The request, once read() said kComplete.
  Request take();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One request from the start of `received`; on kComplete `request` holds it, form fields parsed.
Parsed parse_request(std::string_view received, const MessageLimits& limits, Request& request);

// "a+b%21" -> "a b!"; a '%' not followed by two hex digits stays as it is.
std::string form_decode(std::string_view text);

// The status line, headers and body; `keep_alive` false adds "Connection: close". For HEAD the
// body is left out and its length kept.
std::string serialize(const Response& response, bool keep_alive, bool head_only = false);

const char* status_text(int status);

}  // namespace trafo::http
