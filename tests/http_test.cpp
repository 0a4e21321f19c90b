// The HTTP requests of trafo serve (http/message.cpp, on Beast's parser): what a request is, and
// what is refused from its head alone, before any body is read, or as a chunked body is decoded.
// tests/serve_check.py drives the same rules through sockets.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "trafo/http/message.h"

namespace trafo::http {
namespace {

Parsed parse(const std::string& bytes, Request& request, int64_t max_body = 1000) {
  MessageLimits limits;
  limits.max_body_bytes = max_body;
  return parse_request(bytes, limits, request);
}

int refusal(const std::string& bytes, int64_t max_body = 1000) {
  Request request;
  const auto parsed = parse(bytes, request, max_body);
  return parsed.kind == Parsed::kRefused ? parsed.status : 0;
}

TEST(HttpMessage, ARequestIsWholeOnlyWithItsWholeBody) {
  const std::string head = "POST /translate?api_key=k%21&x HTTP/1.1\r\nHost: a\r\nContent-Length: 9\r\n\r\n";
  Request request;
  EXPECT_EQ(parse(head.substr(0, 20), request).kind, Parsed::kIncomplete);
  EXPECT_EQ(parse(head + "q=a+b", request).kind, Parsed::kIncomplete);
  const auto parsed = parse(head + "q=a+b&q=cGET /next", request);
  ASSERT_EQ(parsed.kind, Parsed::kComplete);
  EXPECT_EQ(parsed.used, head.size() + 9);  // what follows is the next request's
  EXPECT_EQ(request.method, "POST");
  EXPECT_EQ(request.path, "/translate");
  EXPECT_EQ(request.body, "q=a+b&q=c");
  EXPECT_EQ(request.header("host"), "a");
  EXPECT_EQ(request.param("api_key"), "k!");
  EXPECT_TRUE(request.has_param("x"));
  EXPECT_EQ(request.param_count("q"), 0u);  // no form Content-Type: the body is not a form
  EXPECT_TRUE(request.keep_alive);
}

TEST(HttpMessage, FormsAreDecodedUrlencodedAndMultipart) {
  Request request;
  const std::string form = "q=The+cat%2E&q=%E2%98%83&source=en&bad=%zz";
  ASSERT_EQ(parse("POST / HTTP/1.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: " +
                      std::to_string(form.size()) + "\r\n\r\n" + form,
                  request)
                .kind,
            Parsed::kComplete);
  EXPECT_EQ(request.param_count("q"), 2u);
  EXPECT_EQ(request.param("q", 0), "The cat.");
  EXPECT_EQ(request.param("q", 1), "\xE2\x98\x83");
  EXPECT_EQ(request.param("bad"), "%zz");

  const std::string body =
      "--XyZ\r\nContent-Disposition: form-data; name=\"q\"\r\n\r\nline one\r\nline two\r\n"
      "--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\nContent-Type: text/plain\r\n\r\n"
      "from a file\r\n--XyZ--\r\n";
  ASSERT_EQ(parse("POST / HTTP/1.1\r\nContent-Type: multipart/form-data; boundary=\"XyZ\"\r\nContent-Length: " +
                      std::to_string(body.size()) + "\r\n\r\n" + body,
                  request)
                .kind,
            Parsed::kComplete);
  EXPECT_EQ(request.param("q"), "line one\r\nline two");
  EXPECT_EQ(request.param("file"), "from a file");
  EXPECT_EQ(request.file_name("file"), "a.txt");
  EXPECT_EQ(request.file_name("q"), "");
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nContent-Type: multipart/form-data; boundary=XyZ\r\nContent-Length: 5\r\n\r\n"
                    "hello"),
            400);
}

TEST(HttpMessage, BodiesThatTheLimitCannotBoundAreRefusedFromTheHead) {
  const std::string post = "POST /translate HTTP/1.1\r\nHost: a\r\n";
  EXPECT_EQ(refusal(post + "Transfer-Encoding: identity\r\n\r\n"), 411);
  EXPECT_EQ(refusal(post + "Transfer-Encoding: gzip, chunked\r\n\r\n"), 415);
  EXPECT_EQ(refusal(post + "Content-Encoding: gzip\r\nContent-Length: 5\r\n\r\n"), 415);
  // Two framings at once is how requests are smuggled past a proxy.
  EXPECT_EQ(refusal(post + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"), 400);
  EXPECT_EQ(refusal(post + "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n"), 400);
  EXPECT_EQ(refusal(post + "Content-Encoding: identity\r\nContent-Length: 0\r\n\r\n"), 0);
  EXPECT_EQ(refusal(post + "Content-Length: 1001\r\n\r\n"), 413);  // before a byte of the body
  EXPECT_EQ(refusal(post + "Content-Length: 99999999999999999999\r\n\r\n"), 400);
  EXPECT_EQ(refusal(post + "Content-Length: -1\r\n\r\n"), 400);
  EXPECT_EQ(refusal(post + "Content-Length: 5\r\nContent-Length: 6\r\n\r\n"), 400);
  EXPECT_EQ(refusal("GET / HTTP/1.1\r\nX: " + std::string(20000, 'a')), 431);  // no end of head in sight
  std::string many = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 101; ++i) many += "X-" + std::to_string(i) + ": 1\r\n";
  EXPECT_EQ(refusal(many + "\r\n"), 431);
  // A request line and headers each under the limit, together over it (Beast checks them apart).
  EXPECT_EQ(refusal("GET /" + std::string(10000, 'a') + " HTTP/1.1\r\nX: " + std::string(10000, 'b') + "\r\n\r\n"), 431);
}

// A path with a limit of its own (POST /translate_file: a document) takes larger bodies than the
// rest, sized or chunked, and is bound by its own limit.
TEST(HttpMessage, APathMayTakeLargerBodies) {
  MessageLimits limits;
  limits.max_body_bytes = 1000;
  limits.max_body_bytes_at["/translate_file"] = 5000;
  const auto status = [&](const std::string& path, size_t size, bool chunked = false) {
    Request request;
    std::string bytes = "POST " + path + " HTTP/1.1\r\nHost: a\r\n";
    if (chunked) {
      char hex[32];
      std::snprintf(hex, sizeof hex, "%zx", size);
      bytes += "Transfer-Encoding: chunked\r\n\r\n" + std::string(hex) + "\r\n" + std::string(size, 'x') + "\r\n0\r\n\r\n";
    } else {
      bytes += "Content-Length: " + std::to_string(size) + "\r\n\r\n" + std::string(size, 'x');
    }
    const auto parsed = parse_request(bytes, limits, request);
    if (parsed.kind == Parsed::kComplete) {
      EXPECT_EQ(request.body.size(), size);
    }
    return parsed.kind == Parsed::kRefused ? parsed.status : parsed.kind == Parsed::kComplete ? 200 : 0;
  };
  EXPECT_EQ(status("/translate_file", 3000), 200);
  EXPECT_EQ(status("/translate_file", 3000, /*chunked=*/true), 200);
  EXPECT_EQ(status("/translate_file", 6000), 413);
  EXPECT_EQ(status("/translate_file", 6000, true), 413);
  EXPECT_EQ(status("/translate", 3000), 413);
  EXPECT_EQ(status("/translate", 3000, true), 413);
  EXPECT_EQ(status("/translate", 900), 200);
}

TEST(HttpMessage, MalformedHeadsAreRefused) {
  EXPECT_EQ(refusal("HELLO THERE\r\n\r\n"), 400);
  EXPECT_EQ(refusal("GET relative HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(refusal("GET / HTTP/2.0\r\n\r\n"), 505);
  EXPECT_EQ(refusal("GET / HTTP/1.1\r\nNo colon here\r\n\r\n"), 400);
  EXPECT_EQ(refusal("GET / HTTP/1.1\r\nBad Name: 1\r\n\r\n"), 400);
  EXPECT_EQ(refusal("GET / HTTP/1.1\nHost: a\n\n"), 400);  // lines end in CRLF
  Request request;
  EXPECT_EQ(parse("\r\nGET /health HTTP/1.0\r\n\r\n", request).kind, Parsed::kComplete);  // a blank line first
  EXPECT_EQ(request.path, "/health");
  EXPECT_FALSE(request.keep_alive);
  EXPECT_EQ(parse("GET / HTTP/1.1\r\nConnection: close\r\n\r\n", request).kind, Parsed::kComplete);
  EXPECT_FALSE(request.keep_alive);
}

// A chunked body (what clients send that stream a body of unknown length) is decoded, and its
// decoded bytes count against the limit: 413 the moment they pass it, whatever is still to come.
TEST(HttpMessage, ChunkedBodiesAreDecodedAndBoundAsTheyCome) {
  const std::string head =
      "POST /translate HTTP/1.1\r\nHost: a\r\nContent-Type: application/x-www-form-urlencoded\r\n"
      "Transfer-Encoding: chunked\r\n\r\n";
  const std::string chunks = "4\r\nq=ab\r\n6;ext=1\r\n&q=cde\r\n0\r\n\r\n";
  Request request;
  EXPECT_EQ(parse(head + chunks.substr(0, 12), request).kind, Parsed::kIncomplete);
  const auto parsed = parse(head + chunks + "GET /next", request);
  ASSERT_EQ(parsed.kind, Parsed::kComplete);
  EXPECT_EQ(parsed.used, head.size() + chunks.size());
  EXPECT_EQ(request.body, "q=ab&q=cde");
  EXPECT_EQ(request.param("q", 1), "cde");
  // 600 bytes in chunks of 100: past the limit of 500 at the sixth chunk, before the end is sent.
  std::string big = head;
  for (int i = 0; i < 6; ++i) big += "64\r\n" + std::string(100, 'x') + "\r\n";
  EXPECT_EQ(refusal(big, 500), 413);
  EXPECT_EQ(refusal(head + "zz\r\nab\r\n0\r\n\r\n"), 400);  // not a chunk size
}

// The reader takes bytes as they arrive: fed a byte at a time it reads what it reads whole.
TEST(HttpMessage, BytesFedOneAtATimeGiveTheSameRequest) {
  const std::string bytes =
      "POST /v1/translate?x=1 HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
      "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\nGET /health HTTP/1.1\r\n\r\n";
  RequestReader reader(MessageLimits{});
  std::string pending;
  Parsed parsed;
  size_t fed = 0;
  while (parsed.kind == Parsed::kIncomplete && fed < bytes.size()) {
    pending += bytes[fed++];
    parsed = reader.read(pending);
    pending.erase(0, parsed.used);
  }
  ASSERT_EQ(parsed.kind, Parsed::kComplete);
  const auto request = reader.take();
  EXPECT_EQ(request.body, "abcde");
  EXPECT_EQ(request.param("x"), "1");
  EXPECT_EQ(bytes.substr(fed), "GET /health HTTP/1.1\r\n\r\n");  // the next request's, untouched
}

TEST(HttpMessage, AClientWaitingForContinueIsSeen) {
  Request request;
  const auto parsed = parse("POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n", request);
  EXPECT_EQ(parsed.kind, Parsed::kIncomplete);
  EXPECT_TRUE(parsed.expects_continue);
}

TEST(HttpMessage, AnswersCarryTheirLengthAndConnection) {
  Response response;
  response.status = 503;
  response.body = "{}";
  response.headers.emplace_back("Retry-After", "1");
  EXPECT_EQ(serialize(response, false),
            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
            "Connection: close\r\nRetry-After: 1\r\n\r\n{}");
  const auto head = serialize(response, true, /*head_only=*/true);
  EXPECT_NE(head.find("Content-Length: 2\r\nConnection: keep-alive"), std::string::npos);
  EXPECT_EQ(head.substr(head.size() - 4), "\r\n\r\n");
}

}  // namespace
}  // namespace trafo::http
