#include "trafo/http/transport.h"

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_set>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <fmt/format.h>

#include "trafo/errors.h"

namespace trafo::http {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using boost::system::error_code;

// A closed connection is read for this long more, so that what the client still sends does not
// reset the connection before it has read its answer.
constexpr auto kLinger = std::chrono::seconds(1);

struct Connection {
  enum State { kReading, kWorking, kWriting, kClosing };
  Connection(tcp::socket s, const MessageLimits& limits)
      : socket(std::move(s)), timer(socket.get_executor()), reader(std::make_unique<RequestReader>(limits)) {}
  tcp::socket socket;
  asio::steady_timer timer;
  Clock::time_point deadline;
  std::unique_ptr<RequestReader> reader;  // of the current request
  State state = kReading;
  std::string in;   // received, not yet taken by the reader
  std::string out;  // the answer being written
  bool served = false;     // has had an answer: silence now is idleness, not slowness
  bool started = false;    // bytes of the current request have come
  bool continued = false;  // "100 Continue" sent for the current request
  bool keep_alive = true;  // of the answer in hand
  bool head_only = false;
  bool waiting = false;    // a wait for bytes to read is pending
  bool closed = false;
};
using Link = std::shared_ptr<Connection>;

// Each open connection costs a descriptor: take what the system allows.
size_t open_connection_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return 512;
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = std::min<rlim_t>(limit.rlim_max, 65536);
    ::setrlimit(RLIMIT_NOFILE, &limit);
    ::getrlimit(RLIMIT_NOFILE, &limit);
  }
  return static_cast<size_t>(std::max<rlim_t>(64, std::min<rlim_t>(limit.rlim_cur, 65536) - 128));
}

}  // namespace

struct Transport::Impl {
  TransportOptions o;
  Handlers handlers;
  Clock::duration read_time;
  size_t max_open = 0;
  asio::io_context io{1};
  asio::executor_work_guard<asio::io_context::executor_type> keep_running{io.get_executor()};
  tcp::acceptor acceptor{io};
  asio::steady_timer accept_retry{io};
  int bound_port = -1;
  bool stopping = false;                  // the event loop's own
  std::unordered_set<Link> connections;  // the event loop's own
  char buffer[65536];                     // every read lands here, one connection at a time

  // Shared with the workers.
  std::mutex mutex;
  std::condition_variable work;
  std::deque<std::pair<Link, Request>> jobs;
  size_t busy = 0;
  bool workers_done = false;
  std::vector<std::thread> workers;

  Impl(TransportOptions options, Handlers h) : o(std::move(options)), handlers(std::move(h)) {
    read_time = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.read_seconds));
  }

  void bind() {
    const auto failed = [&] {
      return InputError(fmt::format("cannot listen on {}:{} (taken, or not an address of this machine)", o.host, o.port));
    };
    error_code error;
    tcp::resolver resolver(io);
    const auto found = resolver.resolve(o.host, std::to_string(o.port), tcp::resolver::passive, error);
    if (error) throw failed();
    for (const auto& entry : found) {
      acceptor.open(entry.endpoint().protocol(), error);
      if (error) continue;
      acceptor.set_option(tcp::acceptor::reuse_address(true), error);
      acceptor.bind(entry.endpoint(), error);
      if (!error) acceptor.listen(asio::socket_base::max_listen_connections, error);
      if (!error) break;
      acceptor.close();
    }
    if (!acceptor.is_open()) throw failed();
    bound_port = acceptor.local_endpoint().port();
    max_open = open_connection_limit();
  }

  // -- the event loop ----------------------------------------------------------------------------

  void accept_next() {
    acceptor.async_accept([this](const error_code& error, tcp::socket socket) {
      if (!acceptor.is_open()) return;  // stopping
      if (!error) {
        opened(std::move(socket));
        return accept_next();
      }
      // Out of descriptors (or another passing failure): try again shortly rather than spin.
      accept_retry.expires_after(std::chrono::milliseconds(50));
      accept_retry.async_wait([this](const error_code& e) {
        if (!e && acceptor.is_open()) accept_next();
      });
    });
  }

  void opened(tcp::socket socket) {
    error_code ignored;
    // Answers go out in one write, but a kept-alive client's next request should not wait for a
    // delayed ACK either.
    socket.set_option(tcp::no_delay(true), ignored);
    socket.non_blocking(true, ignored);
    if (connections.size() >= max_open) {
      const auto busy = serialize(handlers.refusal(503, "too many open connections: try again later"), false);
      socket.write_some(asio::buffer(busy), ignored);
      socket.close(ignored);
      return;
    }
    auto c = std::make_shared<Connection>(std::move(socket), o.message);
    connections.insert(c);
    arm(c, read_time);
    wait_to_read(c);
  }

  void arm(const Link& c, Clock::duration after) {
    c->deadline = Clock::now() + after;
    c->timer.expires_at(c->deadline);
    c->timer.async_wait([this, c](const error_code& error) {
      // A wait cancelled, or one whose deadline was moved since: not this deadline's.
      if (error || c->closed || Clock::now() < c->deadline) return;
      on_deadline(c);
    });
  }

  void close_now(const Link& c) {
    if (c->closed) return;
    c->closed = true;
    error_code ignored;
    c->socket.close(ignored);
    c->timer.cancel();
    connections.erase(c);
    finish_if_done();
  }

  void finish_if_done() {
    if (stopping && connections.empty()) keep_running.reset();
  }

  void wait_to_read(const Link& c) {
    if (c->waiting || c->closed) return;
    c->waiting = true;
    c->socket.async_wait(tcp::socket::wait_read, [this, c](const error_code& error) {
      c->waiting = false;
      if (c->closed) return;
      if (error) return close_now(c);
      read_some(c);
    });
  }

  void read_some(const Link& c) {
    for (;;) {
      error_code error;
      const size_t got = c->socket.read_some(asio::buffer(buffer), error);
      if (error == asio::error::would_block) break;
      if (error == asio::error::interrupted) continue;
      if (error || got == 0) return close_now(c);
      if (c->state == Connection::kClosing) continue;  // read only to be thrown away
      if (c->state != Connection::kReading) return;    // a request timed out meanwhile: its answer is going
      if (!c->started && c->served) arm(c, read_time);  // a kept-alive one's next request
      c->started = true;
      c->in.append(buffer, got);
      take_request(c);
      if (c->state != Connection::kReading) return;
    }
    wait_to_read(c);
  }

  void take_request(const Link& c) {
    const auto parsed = c->reader->read(c->in);
    if (parsed.kind == Parsed::kRefused) return respond(c, handlers.refusal(parsed.status, parsed.reason), false);
    c->in.erase(0, parsed.used);
    if (parsed.kind == Parsed::kIncomplete) {
      if (parsed.expects_continue && !c->continued) {
        static constexpr char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
        error_code ignored;
        c->socket.write_some(asio::buffer(kContinue, sizeof kContinue - 1), ignored);
        c->continued = true;
      }
      return;
    }
    auto request = c->reader->take();
    c->reader = std::make_unique<RequestReader>(o.message);
    dispatch(c, std::move(request));
  }

  // A whole request: answered here, handed to a worker, or refused when too many are in hand.
  void dispatch(const Link& c, Request request) {
    c->head_only = request.method == "HEAD";
    if (stopping) return respond(c, handlers.refusal(503, "the server is stopping"), false);
    if (handlers.at_once(request)) return respond(c, answer(request), request.keep_alive);
    {
      std::lock_guard lock(mutex);
      const auto limit = 2 * static_cast<size_t>(o.workers);
      if (busy + jobs.size() < limit) {
        c->keep_alive = request.keep_alive;
        c->state = Connection::kWorking;
        jobs.emplace_back(c, std::move(request));
        work.notify_one();
        return;
      }
    }
    respond(c, handlers.refusal(503, "too many requests at once: try again later"), request.keep_alive);
  }

  void respond(const Link& c, const Response& response, bool keep_alive) {
    if (c->closed) return;
    c->keep_alive = keep_alive && !stopping;
    c->out = serialize(response, c->keep_alive, c->head_only);
    c->state = Connection::kWriting;
    arm(c, read_time);  // a client that does not read its answer is closed at the deadline
    asio::async_write(c->socket, asio::buffer(c->out), [this, c](const error_code& error, size_t) {
      if (c->closed) return;
      if (error) return close_now(c);
      written(c);
    });
  }

  void written(const Link& c) {
    c->out.clear();
    if (!c->keep_alive) {
      error_code ignored;
      c->socket.shutdown(tcp::socket::shutdown_send, ignored);
      c->state = Connection::kClosing;
      arm(c, kLinger);
      return wait_to_read(c);
    }
    c->state = Connection::kReading;
    c->served = true;
    c->started = !c->in.empty();
    c->continued = false;
    arm(c, read_time);
    if (!c->started) return wait_to_read(c);
    // The next request's bytes came with the last one: read them on the next round.
    asio::post(io, [this, c] {
      if (c->closed || c->state != Connection::kReading) return;
      take_request(c);
      if (c->state == Connection::kReading) wait_to_read(c);
    });
  }

  void on_deadline(const Link& c) {
    if (c->state == Connection::kReading && c->started) {
      return respond(c, handlers.refusal(408, fmt::format("the request did not arrive whole within {} s", o.read_seconds)),
                     false);
    }
    if (c->state != Connection::kWorking) close_now(c);  // silent, idle, or not reading its answer
  }

  void begin_stopping() {
    if (stopping) return;
    stopping = true;
    // Those the system had already taken are answered too.
    error_code error;
    acceptor.non_blocking(true, error);
    for (;;) {
      tcp::socket socket(io);
      acceptor.accept(socket, error);
      if (error) break;
      opened(std::move(socket));
    }
    acceptor.close(error);
    accept_retry.cancel();
    const std::vector<Link> open(connections.begin(), connections.end());
    for (const auto& c : open) {
      if (c->state == Connection::kReading && c->served && !c->started) close_now(c);
    }
    finish_if_done();
  }

  // -- the workers -------------------------------------------------------------------------------

  Response answer(const Request& request) {
    try {
      return handlers.answer(request);
    } catch (const std::exception& error) {
      return handlers.refusal(500, std::string("the server failed: ") + error.what());
    }
  }

  void work_loop() {
    for (;;) {
      std::pair<Link, Request> job;
      {
        std::unique_lock lock(mutex);
        work.wait(lock, [&] { return workers_done || !jobs.empty(); });
        if (jobs.empty()) return;
        job = std::move(jobs.front());
        jobs.pop_front();
        ++busy;
      }
      auto response = answer(job.second);
      {
        std::lock_guard lock(mutex);
        --busy;
      }
      asio::post(io, [this, c = std::move(job.first), response = std::move(response)] {
        respond(c, response, c->keep_alive);
      });
    }
  }
};

Transport::Transport(TransportOptions options, Handlers handlers)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(handlers))) {}

Transport::~Transport() = default;

void Transport::bind() { impl_->bind(); }

int Transport::port() const { return impl_->bound_port; }

void Transport::serve() {
  auto& i = *impl_;
  for (int w = 0; w < i.o.workers; ++w) i.workers.emplace_back([&i] { i.work_loop(); });
  i.accept_next();
  i.io.run();
  {
    std::lock_guard lock(i.mutex);
    i.workers_done = true;
  }
  i.work.notify_all();
  for (auto& worker : i.workers) worker.join();
}

void Transport::stop() {
  asio::post(impl_->io, [&i = *impl_] { i.begin_stopping(); });
}

}  // namespace trafo::http
