// The HTTP parser of trafo serve (serve/http_message.cpp): what a request is, and what is refused
// from its head alone, before any body is read. tests/serve_check.py drives the same rules through
// sockets.
#include <gtest/gtest.h>

#include <string>

#include "trafo/serve/http_message.h"

namespace trafo::serve::http {
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
  EXPECT_EQ(parsed.total_bytes, head.size() + 9);  // what follows is the next request's
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
  EXPECT_EQ(refusal("POST / HTTP/1.1\r\nContent-Type: multipart/form-data; boundary=XyZ\r\nContent-Length: 5\r\n\r\n"
                    "hello"),
            400);
}

TEST(HttpMessage, BodiesThatTheLimitCannotBoundAreRefusedFromTheHead) {
  const std::string post = "POST /translate HTTP/1.1\r\nHost: a\r\n";
  EXPECT_EQ(refusal(post + "Transfer-Encoding: chunked\r\n\r\n"), 411);
  EXPECT_EQ(refusal(post + "Content-Encoding: gzip\r\nContent-Length: 5\r\n\r\n"), 415);
  EXPECT_EQ(refusal(post + "Content-Encoding: identity\r\nContent-Length: 0\r\n\r\n"), 0);
  EXPECT_EQ(refusal(post + "Content-Length: 1001\r\n\r\n"), 413);  // before a byte of the body
  EXPECT_EQ(refusal(post + "Content-Length: 99999999999999999999\r\n\r\n"), 400);
  EXPECT_EQ(refusal(post + "Content-Length: -1\r\n\r\n"), 400);
  EXPECT_EQ(refusal(post + "Content-Length: 5\r\nContent-Length: 6\r\n\r\n"), 400);
  EXPECT_EQ(refusal("GET / HTTP/1.1\r\nX: " + std::string(20000, 'a')), 431);  // no end of head in sight
  std::string many = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 101; ++i) many += "X-" + std::to_string(i) + ": 1\r\n";
  EXPECT_EQ(refusal(many + "\r\n"), 431);
}

TEST(HttpMessage, MalformedHeadsAreRefused) {
  EXPECT_EQ(refusal("HELLO THERE\r\n\r\n"), 400);
  EXPECT_EQ(refusal("GET relative HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(refusal("GET / HTTP/2.0\r\n\r\n"), 505);
  EXPECT_EQ(refusal("GET / HTTP/1.1\r\nNo colon here\r\n\r\n"), 400);
  EXPECT_EQ(refusal("GET / HTTP/1.1\r\nBad Name: 1\r\n\r\n"), 400);
  Request request;
  EXPECT_EQ(parse("\r\nGET /health HTTP/1.0\n\n", request).kind, Parsed::kComplete);  // LF lines; 1.0
  EXPECT_EQ(request.path, "/health");
  EXPECT_FALSE(request.keep_alive);
  EXPECT_EQ(parse("GET / HTTP/1.1\r\nConnection: close\r\n\r\n", request).kind, Parsed::kComplete);
  EXPECT_FALSE(request.keep_alive);
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
}  // namespace trafo::serve::http
