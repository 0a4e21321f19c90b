// trafo serve's connections: `workers` threads serve them, as many more wait, and past that one spare
// thread answers each at once with 503 (http_server.cpp's pre-routing handler reads over_capacity).
#pragma once

#include <httplib.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace trafo::serve::detail {

// Connections are served by `workers` threads; up to as many more wait for one. Past that, a
// connection is served by one spare thread that answers 503 at once (over_capacity), so that a crowd
// of clients is told to come back instead of waiting without end.
inline thread_local bool over_capacity = false;

class ConnectionPool : public httplib::TaskQueue {
 public:
  explicit ConnectionPool(int workers) : limit_(static_cast<size_t>(workers)) {
    for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { work(jobs_, false); });
    threads_.emplace_back([this] { work(overflow_, true); });
  }
  void enqueue(std::function<void()> fn) override {
    {
      std::lock_guard lock(mutex_);
      auto& queue = busy_ + jobs_.size() >= 2 * limit_ ? overflow_ : jobs_;
      queue.push_back(std::move(fn));
    }
    wake_.notify_all();
  }
  void shutdown() override {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (auto& thread : threads_) thread.join();
  }

 private:
  void work(std::deque<std::function<void()>>& queue, bool overflow) {
    over_capacity = overflow;
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return stopping_ || !queue.empty(); });
        if (queue.empty()) return;
        fn = std::move(queue.front());
        queue.pop_front();
        if (!overflow) ++busy_;
      }
      fn();
      if (!overflow) {
        std::lock_guard lock(mutex_);
        --busy_;
      }
    }
  }

  size_t limit_;
  size_t busy_ = 0;
  bool stopping_ = false;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> jobs_, overflow_;
  std::vector<std::thread> threads_;
};

}  // namespace trafo::serve::detail
