#include "http_transport.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <list>
#include <mutex>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "trafo/errors.h"

namespace trafo::serve::http {
namespace {

using Clock = std::chrono::steady_clock;

// A closed connection is read for this long more, so that what the client still sends does not
// reset the connection before it has read its answer.
constexpr auto kLinger = std::chrono::seconds(1);

struct Connection {
  enum State { kReading, kWorking, kWriting, kClosing };
  int fd = -1;
  State state = kReading;
  std::string in;   // received, not yet taken as a request
  std::string out;  // the answer being written
  size_t written = 0;
  Clock::time_point deadline;
  bool served = false;     // has had an answer: silence now is idleness, not slowness
  bool started = false;    // bytes of the current request have come
  bool continued = false;  // "100 Continue" sent for the current request
  bool keep_alive = true;  // of the answer in hand
  bool head_only = false;
  bool pipelined = false;  // a next request's bytes came with the last one: read them on the next round
};

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL, 0) | O_NONBLOCK); }

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
  int listener = -1;
  int bound_port = -1;
  int wake[2] = {-1, -1};
  std::atomic<bool> stopping{false};
  std::list<Connection> connections;  // the connections' thread's own

  // Shared with the workers.
  struct Answered {
    Connection* connection;
    Response response;
  };
  std::mutex mutex;
  std::condition_variable work;
  std::deque<std::pair<Connection*, Request>> jobs;
  std::vector<Answered> answered;
  size_t busy = 0;
  bool workers_done = false;
  std::vector<std::thread> workers;

  Impl(TransportOptions options, Handlers h) : o(std::move(options)), handlers(std::move(h)) {
    read_time = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.read_seconds));
  }

  ~Impl() {
    if (listener >= 0) ::close(listener);
    for (int fd : wake) {
      if (fd >= 0) ::close(fd);
    }
    for (auto& c : connections) {
      if (c.fd >= 0) ::close(c.fd);
    }
  }

  void wake_up() {
    const char byte = 1;
    [[maybe_unused]] const auto ignored = ::write(wake[1], &byte, 1);
  }

  void bind() {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    addrinfo* found = nullptr;
    const auto port = std::to_string(o.port);
    const auto failed = [&] {
      return InputError(fmt::format("cannot listen on {}:{} (taken, or not an address of this machine)", o.host, o.port));
    };
    if (::getaddrinfo(o.host.c_str(), port.c_str(), &hints, &found) != 0) throw failed();
    for (auto* a = found; a != nullptr && listener < 0; a = a->ai_next) {
      const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) continue;
      int yes = 1;
      ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
      if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, SOMAXCONN) == 0) {
        listener = fd;
      } else {
        ::close(fd);
      }
    }
    ::freeaddrinfo(found);
    if (listener < 0) throw failed();
    set_nonblocking(listener);
    sockaddr_storage address{};
    socklen_t size = sizeof address;
    ::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &size);
    bound_port = ntohs(address.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&address)->sin6_port
                                                     : reinterpret_cast<sockaddr_in*>(&address)->sin_port);
    if (::pipe2(wake, O_NONBLOCK | O_CLOEXEC) != 0) throw InputError("cannot make a pipe for trafo serve");
    max_open = open_connection_limit();
  }

  // -- the connections' thread -------------------------------------------------------------------

  void accept_all() {
    for (;;) {
      const int fd = ::accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;
      int yes = 1;
      // Answers go out in one write, but a kept-alive client's next request should not wait for
      // a delayed ACK either.
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
      if (connections.size() >= max_open) {
        const auto busy = serialize(handlers.refusal(503, "too many open connections: try again later"), false);
        [[maybe_unused]] const auto sent = ::send(fd, busy.data(), busy.size(), MSG_NOSIGNAL);
        ::close(fd);
        continue;
      }
      auto& c = connections.emplace_back();
      c.fd = fd;
      c.deadline = Clock::now() + read_time;
    }
  }

  void close_now(Connection& c) {
    if (c.fd >= 0) ::close(c.fd);
    c.fd = -1;
  }

  void respond(Connection& c, const Response& response, bool keep_alive) {
    c.keep_alive = keep_alive && !stopping;
    c.out = serialize(response, c.keep_alive, c.head_only);
    c.written = 0;
    c.state = Connection::kWriting;
    c.deadline = Clock::now() + read_time;
    write_some(c);
  }

  void write_some(Connection& c) {
    while (c.written < c.out.size()) {
      const auto sent = ::send(c.fd, c.out.data() + c.written, c.out.size() - c.written, MSG_NOSIGNAL);
      if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      if (sent < 0 && errno == EINTR) continue;
      if (sent <= 0) return close_now(c);
      c.written += static_cast<size_t>(sent);
    }
    c.out.clear();
    if (!c.keep_alive) {
      ::shutdown(c.fd, SHUT_WR);
      c.state = Connection::kClosing;
      c.deadline = Clock::now() + kLinger;
      return;
    }
    c.state = Connection::kReading;
    c.served = true;
    c.started = !c.in.empty();
    c.continued = false;
    c.deadline = Clock::now() + read_time;
    c.pipelined = c.started;
  }

  // A whole request: answered here, handed to a worker, or refused when too many are in hand.
  void dispatch(Connection& c, Request request) {
    c.head_only = request.method == "HEAD";
    if (stopping) return respond(c, handlers.refusal(503, "the server is stopping"), false);
    if (handlers.at_once(request)) return respond(c, answer(request), request.keep_alive);
    {
      std::lock_guard lock(mutex);
      const auto limit = 2 * static_cast<size_t>(o.workers);
      if (busy + jobs.size() < limit) {
        c.keep_alive = request.keep_alive;
        c.state = Connection::kWorking;
        jobs.emplace_back(&c, std::move(request));
        work.notify_one();
        return;
      }
    }
    respond(c, handlers.refusal(503, "too many requests at once: try again later"), request.keep_alive);
  }

  void take_request(Connection& c) {
    Request request;
    const auto parsed = parse_request(c.in, o.message, request);
    if (parsed.kind == Parsed::kRefused) return respond(c, handlers.refusal(parsed.status, parsed.reason), false);
    if (parsed.kind == Parsed::kIncomplete) {
      if (parsed.expects_continue && !c.continued) {
        static constexpr char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
        [[maybe_unused]] const auto sent = ::send(c.fd, kContinue, sizeof kContinue - 1, MSG_NOSIGNAL);
        c.continued = true;
      }
      return;
    }
    c.in.erase(0, parsed.total_bytes);
    dispatch(c, std::move(request));
  }

  void read_some(Connection& c) {
    char buffer[65536];
    for (;;) {
      const auto got = ::recv(c.fd, buffer, sizeof buffer, 0);
      if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) return close_now(c);
      if (c.state == Connection::kClosing) continue;  // read only to be thrown away
      if (!c.started && c.served) c.deadline = Clock::now() + read_time;  // a kept-alive one's next
      c.started = true;
      c.in.append(buffer, static_cast<size_t>(got));
      // Enough to decide on: the head's limit, or the whole request, is already exceeded.
      if (c.in.size() > o.message.max_head_bytes + static_cast<size_t>(o.message.max_body_bytes)) break;
    }
    if (c.state == Connection::kReading && c.started) take_request(c);
  }

  void on_deadline(Connection& c) {
    if (c.state == Connection::kReading && c.started) {
      return respond(c, handlers.refusal(408, fmt::format("the request did not arrive whole within {} s", o.read_seconds)),
                     false);
    }
    if (c.state != Connection::kWorking) close_now(c);  // silent, idle, or not reading its answer
  }

  void collect_answers() {
    std::vector<Answered> ready;
    {
      std::lock_guard lock(mutex);
      ready.swap(answered);
    }
    for (auto& a : ready) {
      Connection& c = *a.connection;
      respond(c, a.response, c.keep_alive);
    }
  }

  void begin_stopping() {
    accept_all();  // those the system had already taken are answered too
    ::close(listener);
    listener = -1;
    for (auto& c : connections) {
      if (c.state == Connection::kReading && c.served && !c.started) close_now(c);
    }
  }

  void run() {
    std::vector<pollfd> polled;
    std::vector<Connection*> owners;
    for (;;) {
      if (stopping && listener >= 0) begin_stopping();
      collect_answers();
      bool pipelined = false;
      for (auto& c : connections) {
        if (c.fd < 0 || !c.pipelined) continue;
        c.pipelined = false;
        take_request(c);
        pipelined |= c.pipelined;
      }
      connections.remove_if([](const Connection& c) { return c.fd < 0; });
      if (listener < 0 && connections.empty()) return;

      polled.assign(1, pollfd{wake[0], POLLIN, 0});
      owners.assign(1, nullptr);
      if (listener >= 0) {
        polled.push_back({listener, POLLIN, 0});
        owners.push_back(nullptr);
      }
      auto next = Clock::now() + std::chrono::seconds(1);
      for (auto& c : connections) {
        if (c.state == Connection::kWorking) continue;
        polled.push_back({c.fd, static_cast<short>(c.state == Connection::kWriting ? POLLOUT : POLLIN), 0});
        owners.push_back(&c);
        next = std::min(next, c.deadline);
      }
      const auto wait = pipelined ? 0 : std::chrono::ceil<std::chrono::milliseconds>(next - Clock::now()).count();
      if (::poll(polled.data(), polled.size(), static_cast<int>(std::max<int64_t>(wait, 0))) < 0 && errno != EINTR) {
        return;
      }
      if (polled[0].revents != 0) {
        char drained[256];
        while (::read(wake[0], drained, sizeof drained) > 0) {
        }
      }
      if (listener >= 0 && polled[1].revents != 0) accept_all();
      for (size_t i = 0; i < polled.size(); ++i) {
        Connection* c = owners[i];
        if (c == nullptr || polled[i].revents == 0 || c->fd < 0) continue;
        if (c->state == Connection::kWriting) {
          write_some(*c);
        } else {
          read_some(*c);
        }
      }
      const auto now = Clock::now();
      for (auto& c : connections) {
        if (c.fd >= 0 && c.state != Connection::kWorking && now >= c.deadline) on_deadline(c);
      }
    }
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
      std::pair<Connection*, Request> job;
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
        answered.push_back({job.first, std::move(response)});
      }
      wake_up();
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
  i.run();
  {
    std::lock_guard lock(i.mutex);
    i.workers_done = true;
  }
  i.work.notify_all();
  for (auto& worker : i.workers) worker.join();
}

void Transport::stop() {
  impl_->stopping = true;
  if (impl_->wake[1] >= 0) impl_->wake_up();
}

}  // namespace trafo::serve::http
