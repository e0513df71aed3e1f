#include "src/limits/bulkhead.h"

#include <algorithm>
#include <functional>

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
  Waiter* notify = nullptr;
  Entry entry;
  {
    MutexLock lock(&mu_);
    if (!deferred_.empty()) ReleaseDue(clock_.Now(), notify);
    entry = EnterLocked(waiter, time_left);
  }
  Notify(notify);
  return entry;
}

Bulkhead::Entry Bulkhead::EnterLocked(Waiter& waiter, absl::Duration time_left) {
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
  waiter.entered_ = clock_.Now();
  waiter.wait_until_ = waiter.entered_ + wait;
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

void Bulkhead::Release(absl::Time at, Waiter*& notify) {
  while (head_ != nullptr) {
    Waiter& first = *head_;
    Unlink(first);
    if (first.wait_until_ <= at) {
      // Its wait was over: it gets no slot (its own EndWait() says so).
      first.state_ = Waiter::State::kEnded;
      ++counts_.expired;
      continue;
    }
    first.state_ = Waiter::State::kGranted;
    first.granted_at_ = at;
    ++counts_.granted;
    // The slot passes on. A shadow call runs already: it only takes it.
    if (!first.shadow_) {
      first.next_ = notify;
      notify = &first;
    }
    return;
  }
  --in_use_;
}

void Bulkhead::ReleaseDue(absl::Time now, Waiter*& notify) {
  while (!deferred_.empty() && deferred_.front() <= now) {
    std::pop_heap(deferred_.begin(), deferred_.end(), std::greater<absl::Time>());
    const absl::Time at = deferred_.back();
    deferred_.pop_back();
    Release(at, notify);
  }
}

void Bulkhead::Notify(Waiter* granted) {
  while (granted != nullptr) {
    Waiter* const next = granted->next_;
    granted->next_ = nullptr;
    granted->SlotGranted();  // may end the waiter's call: `granted` is not used after
    granted = next;
  }
}

bool Bulkhead::EndWait(Waiter& waiter) {
  Waiter* notify = nullptr;
  bool no_slot = true;
  {
    MutexLock lock(&mu_);
    // A slot freed before now may have been this waiter's.
    if (!deferred_.empty()) ReleaseDue(clock_.Now(), notify);
    switch (waiter.state_) {
      case Waiter::State::kGranted:
        no_slot = false;
        break;
      case Waiter::State::kQueued:
        Unlink(waiter);
        waiter.state_ = Waiter::State::kEnded;
        ++counts_.expired;
        break;
      case Waiter::State::kIdle:  // never queued: nothing held
      case Waiter::State::kEnded:
        break;
    }
  }
  Notify(notify);
  return no_slot;
}

void Bulkhead::Leave() {
  Waiter* notify = nullptr;
  {
    MutexLock lock(&mu_);
    const absl::Time now = clock_.Now();
    if (!deferred_.empty()) ReleaseDue(now, notify);
    Release(now, notify);
  }
  Notify(notify);
}

Bulkhead::Entry Bulkhead::EnterShadow(Waiter& waiter, absl::Duration time_left) {
  waiter.shadow_ = true;  // the waiter is the call's own, not shared yet
  return Enter(waiter, time_left);
}

Bulkhead::ShadowEnd Bulkhead::EndShadow(Waiter& waiter) {
  Waiter* notify = nullptr;
  ShadowEnd end = ShadowEnd::kExpired;
  {
    MutexLock lock(&mu_);
    const absl::Time now = clock_.Now();
    if (!deferred_.empty()) ReleaseDue(now, notify);
    switch (waiter.state_) {
      case Waiter::State::kGranted: {
        // Enforced, the call would have started at the grant and held the
        // slot as long as it ran: it gives the slot back that much later.
        waiter.state_ = Waiter::State::kEnded;
        end = ShadowEnd::kGranted;
        const absl::Time virtual_end = now + (waiter.granted_at_ - waiter.entered_);
        if (virtual_end <= now) {
          Release(now, notify);
        } else {
          deferred_.push_back(virtual_end);
          std::push_heap(deferred_.begin(), deferred_.end(), std::greater<absl::Time>());
        }
        break;
      }
      case Waiter::State::kQueued:
        Unlink(waiter);
        waiter.state_ = Waiter::State::kEnded;
        if (waiter.wait_until_ > now) {
          end = ShadowEnd::kWaiting;
        } else {
          ++counts_.expired;
        }
        break;
      case Waiter::State::kIdle:
      case Waiter::State::kEnded:  // dropped by a release: its wait was over
        break;
    }
  }
  Notify(notify);
  return end;
}

Bulkhead::Stats Bulkhead::stats() const {
  MutexLock lock(&mu_);
  Stats s = counts_;
  s.in_use = in_use_;
  s.queued = queued_;
  return s;
}

}  // namespace resilience
