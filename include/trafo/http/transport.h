// trafo serve's sockets, on Boost.Asio: one thread runs the event loop that holds every open
// connection and reads each request whole (http/message.h's RequestReader, Beast's parser), with
// its own deadline, before a worker sees it; workers never touch a socket. So a client that is
// silent, or sends a byte a second, costs a socket and nothing else, and cannot hold a worker (the
// slowloris attack). The same thread writes the answers back, without blocking.
//
//   accept -> read until the request is whole (or refused, or past its deadline)
//          -> at once on this thread (cheap endpoints) or to a worker (decoding)
//          -> write the answer -> read the next request (keep-alive), or close
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "trafo/http/message.h"

namespace trafo::http {

struct TransportOptions {
  std::string host = "127.0.0.1";
  int port = 5000;            // 0: any free port
  int workers = 64;           // requests answered at once; as many more wait; past that, 503
  MessageLimits message;
  double read_seconds = 5.0;  // a request must arrive whole this long after the connection opens
                              // (or, on a kept-alive connection, after its first byte)
};

struct Handlers {
  std::function<Response(const Request&)> answer;  // on a worker, or at once where `at_once` says
  std::function<bool(const Request&)> at_once;     // cheap requests answered on the connections' thread
  std::function<Response(int status, const std::string& reason)> refusal;  // the transport's own answers
};

class Transport {
 public:
  Transport(TransportOptions options, Handlers handlers);
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  // Binds and listens; throws trafo::InputError when it cannot.
  void bind();
  int port() const;
  // Serves until stop(). Then it takes no new connection, answers what it has been sent (requests
  // already taken are answered in full; one that arrives whole now gets 503), and returns.
  void serve();
  // Any thread.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace trafo::http
