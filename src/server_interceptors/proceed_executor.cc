#include "src/server_interceptors/proceed_executor.h"

namespace resilience {

ProceedExecutor::~ProceedExecutor() {
  std::vector<std::thread> threads;
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    threads.swap(threads_);
  }
  cv_.SignalAll();
  for (std::thread& t : threads) t.join();
}

void ProceedExecutor::Run(std::function<void()> task) {
  MutexLock lock(&mu_);
  tasks_.push_back(std::move(task));
  // Each idle thread takes one task; more tasks than that need a new thread.
  if (static_cast<int>(tasks_.size()) > idle_ &&
      static_cast<int>(threads_.size()) < max_threads_) {
    threads_.emplace_back([this] { Work(); });
  } else {
    cv_.Signal();
  }
}

void ProceedExecutor::Work() {
  mu_.Lock();
  while (true) {
    while (tasks_.empty() && !stopping_) {
      ++idle_;
      cv_.Wait(&mu_);
      --idle_;
    }
    if (tasks_.empty()) break;  // stopping, nothing left to run
    std::function<void()> task = std::move(tasks_.front());
    tasks_.pop_front();
    mu_.Unlock();
    task();  // may block: on the sync server it runs the handler
    mu_.Lock();
  }
  mu_.Unlock();
}

}  // namespace resilience
