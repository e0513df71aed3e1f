#include "src/client_interceptors/events_thread.h"

#include <utility>

namespace resilience {

EventsThread& EventsThread::Global() {
  static EventsThread* const thread = new EventsThread();  // never destroyed
  return *thread;
}

EventsThread::EventsThread() : thread_([this] { Run(); }) { thread_.detach(); }

void EventsThread::Post(std::function<void()> job) {
  {
    MutexLock lock(&mu_);
    jobs_.push_back(std::move(job));
  }
  wake_.Signal();
}

void EventsThread::Run() {
  for (;;) {
    std::function<void()> job;
    {
      MutexLock lock(&mu_);
      while (jobs_.empty()) wake_.Wait(&mu_);
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job();  // outside the lock
  }
}

}  // namespace resilience
