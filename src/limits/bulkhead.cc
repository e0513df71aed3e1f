#include "src/limits/bulkhead.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace resilience {

absl::Status Bulkhead::Validate(const Options& options) {
  if (options.max_concurrency < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_concurrency: must be >= 1, got ", options.max_concurrency));
  }
  if (options.max_queue < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_queue: must be >= 0, got ", options.max_queue));
  }
  if (options.max_wait < absl::ZeroDuration() || options.max_wait == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(absl::StrCat("max_wait: must be >= 0 and finite, got ",
                                                   absl::FormatDuration(options.max_wait)));
  }
  return absl::OkStatus();
}

Bulkhead::Bulkhead(const Options& options, Clock& clock) : options_(options), clock_(clock) {}

Bulkhead::Entry Bulkhead::Enter(Waiter& waiter, absl::Duration time_left) {
  MutexLock lock(&mu_);
  if (in_use_ < options_.max_concurrency) {
    // Only with an empty queue: Leave() hands a freed slot to the queue's
    // head before it counts as free.
    ++in_use_;
    ++counts_.admitted;
    return Entry::kAdmitted;
  }
  if (queued_ >= options_.max_queue) {
    ++counts_.rejected_full;
    return Entry::kQueueFull;
  }
  const absl::Duration wait = std::min(options_.max_wait, time_left);
  if (wait <= absl::ZeroDuration()) {
    ++counts_.rejected_full;
    return Entry::kNoTimeToWait;
  }
  waiter.state_ = Waiter::State::kQueued;
  waiter.wait_until_ = clock_.Now() + wait;
  waiter.next_ = nullptr;
  waiter.prev_ = tail_;
  if (tail_ != nullptr) {
    tail_->next_ = &waiter;
  } else {
    head_ = &waiter;
  }
  tail_ = &waiter;
  ++queued_;
  return Entry::kQueued;
}

void Bulkhead::Unlink(Waiter& waiter) {
  if (waiter.prev_ != nullptr) {
    waiter.prev_->next_ = waiter.next_;
  } else {
    head_ = waiter.next_;
  }
  if (waiter.next_ != nullptr) {
    waiter.next_->prev_ = waiter.prev_;
  } else {
    tail_ = waiter.prev_;
  }
  waiter.next_ = waiter.prev_ = nullptr;
  --queued_;
}

bool Bulkhead::EndWait(Waiter& waiter) {
  MutexLock lock(&mu_);
  switch (waiter.state_) {
    case Waiter::State::kGranted:
      return false;
    case Waiter::State::kQueued:
      Unlink(waiter);
      waiter.state_ = Waiter::State::kEnded;
      ++counts_.expired;
      return true;
    case Waiter::State::kIdle:  // never queued: nothing held
    case Waiter::State::kEnded:
      return true;
  }
  return true;
}

void Bulkhead::Leave() {
  Waiter* granted = nullptr;
  {
    MutexLock lock(&mu_);
    const absl::Time now = clock_.Now();
    while (head_ != nullptr) {
      Waiter& first = *head_;
      Unlink(first);
      if (first.wait_until_ <= now) {
        // Its wait is over: it gets no slot (its own EndWait() says so).
        first.state_ = Waiter::State::kEnded;
        ++counts_.expired;
        continue;
      }
      first.state_ = Waiter::State::kGranted;
      ++counts_.granted;
      granted = &first;
      break;
    }
    if (granted == nullptr) --in_use_;  // else the slot passes on
  }
  if (granted != nullptr) granted->SlotGranted();
}

Bulkhead::Stats Bulkhead::stats() const {
  MutexLock lock(&mu_);
  Stats s = counts_;
  s.in_use = in_use_;
  s.queued = queued_;
  return s;
}

}  // namespace resilience
