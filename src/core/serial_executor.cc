#include "src/core/serial_executor.h"

#include <cstdio>
#include <cstdlib>
#include <utility>

namespace resilience {

SerialExecutor::~SerialExecutor() {
  std::thread thread;
  {
    MutexLock lock(&mu_);
    if (OnExecutorThread()) {
      // Joining would wait for this very job: a bug of the caller.
      std::fputs("grpc-resilience: a SerialExecutor was destroyed by one of its own jobs\n",
                 stderr);
      std::abort();
    }
    stop_ = true;
    work_.SignalAll();
    thread.swap(thread_);
  }
  // Run() empties the queue before it sees stop_.
  if (thread.joinable()) thread.join();
}

void SerialExecutor::Post(std::function<void()> job) {
  MutexLock lock(&mu_);
  jobs_.push_back(std::move(job));
  ++posted_count_;
  if (!thread_.joinable() && !stop_) {
    thread_ = std::thread([this] { Run(); });
    runner_ = thread_.get_id();
  }
  work_.Signal();
}

bool SerialExecutor::Flush() {
  MutexLock lock(&mu_);
  // A job cannot wait for the jobs queued behind itself.
  if (OnExecutorThread()) return false;
  const uint64_t target = posted_count_;
  while (finished_count_ < target) finished_.Wait(&mu_);
  return true;
}

size_t SerialExecutor::pending() const {
  MutexLock lock(&mu_);
  return static_cast<size_t>(posted_count_ - finished_count_);
}

void SerialExecutor::Run() {
  mu_.Lock();
  for (;;) {
    while (jobs_.empty() && !stop_) work_.Wait(&mu_);
    // Stopping: what is queued still runs.
    if (jobs_.empty()) break;
    std::function<void()> job = std::move(jobs_.front());
    jobs_.pop_front();
    // The job runs with no lock held: it may block, Post() or Flush().
    mu_.Unlock();
    job();
    job = nullptr;  // whatever it captured is released before it counts as finished
    mu_.Lock();
    ++finished_count_;
    finished_.SignalAll();
  }
  mu_.Unlock();
}

}  // namespace resilience
