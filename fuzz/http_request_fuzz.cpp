// What trafo serve's connections make of arbitrary bytes: http::RequestReader (Beast's parser and
// trafo's rules on it) reads requests one after another from a connection's bytes, as the transport
// does, with small limits so that every limit is crossed. Input: one option byte, then the bytes.
// Invariants:
// - each request is whole, refused (one answer, then the connection closes) or waits for more;
//   a request never takes more bytes than it was given, and a refusal's status is one trafo sends;
// - the bytes arriving in pieces (sizes drawn from the option byte) give the same requests as the
//   bytes arriving at once. What follows the last of them may differ: Beast checks (and takes) a
//   head's fields as far as they have come on its first look, and waits for the head's end on later
//   ones, so a malformed head may be refused at once one way and wait for more (or meet the head's
//   limit) the other way, and what it has taken of an unfinished head differs.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "trafo/http/message.h"

using namespace trafo;

namespace {

struct Outcome {
  std::vector<std::string> requests;  // each whole request, flattened
  int refusal = 0;                    // the status that closed the connection, or 0
};

std::string flattened(const http::Request& r) {
  std::string out = r.method + ' ' + r.path + (r.keep_alive ? " keep" : " close") + '\n';
  for (const auto& [name, value] : r.headers) out += name + ':' + value + '\n';
  for (const auto& [name, value] : r.params) out += name + '=' + value + '\n';
  return out + std::to_string(r.body.size()) + ':' + r.body;
}

void check_status(int status) {
  switch (status) {
    case 400: case 411: case 413: case 415: case 431: case 505: return;
    default: std::abort();
  }
}

// The connection's bytes arriving in pieces of the sizes `next` draws (0: all at once).
template <typename Next>
Outcome read_connection(std::string_view bytes, const http::MessageLimits& limits, Next next) {
  Outcome outcome;
  auto reader = std::make_unique<http::RequestReader>(limits);
  std::string pending;
  size_t fed = 0;
  while (fed < bytes.size()) {
    const size_t piece = std::min(bytes.size() - fed, next());
    pending.append(bytes.substr(fed, piece));
    fed += piece;
    for (;;) {  // every request the bytes so far hold
      const auto parsed = reader->read(pending);
      if (parsed.used > pending.size()) std::abort();
      if (parsed.kind == http::Parsed::kRefused) {
        check_status(parsed.status);
        outcome.refusal = parsed.status;
        return outcome;
      }
      pending.erase(0, parsed.used);
      if (parsed.kind == http::Parsed::kIncomplete) break;
      outcome.requests.push_back(flattened(reader->take()));
      reader = std::make_unique<http::RequestReader>(limits);
      if (pending.empty()) break;
    }
  }
  return outcome;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t option = data[0];
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  http::MessageLimits limits;
  limits.max_body_bytes = 64 + (option & 0x3f) * 16;
  limits.max_head_bytes = 256;
  limits.max_headers = 8;
  const auto whole = read_connection(bytes, limits, [] { return size_t{1} << 30; });
  uint32_t state = 2166136261u ^ option;
  const auto pieces = read_connection(bytes, limits, [&state] {
    state = state * 16777619u + 12345u;
    return static_cast<size_t>(1 + (state >> 8) % 17);
  });
  if (whole.requests != pieces.requests) std::abort();
  for (const auto& request : whole.requests) {
    http::Response response;
    response.body = request;
    if (http::serialize(response, true).size() < request.size()) std::abort();
  }
  return 0;
}
