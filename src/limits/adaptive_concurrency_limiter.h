// File: src/limits/adaptive_concurrency_limiter.h
//
// The machinery shared by the concurrency limits that move on their own
// (GradientConcurrencyLimiter, AimdConcurrencyLimiter): a lock-free admit
// path against an atomic limit, and the measurements of finished calls
// gathered into sample windows, after each of which a subclass decides the
// next limit. docs/adaptive-concurrency.md explains the design.

#ifndef GRPC_RESILIENCE_SRC_LIMITS_ADAPTIVE_CONCURRENCY_LIMITER_H_
#define GRPC_RESILIENCE_SRC_LIMITS_ADAPTIVE_CONCURRENCY_LIMITER_H_

#include <atomic>
#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "src/core/clock.h"
#include "src/core/mutex.h"
#include "src/limits/atomic_latency_histogram.h"
#include "src/limits/concurrency_limiter.h"

namespace resilience {

// AdaptiveConcurrencyLimiter
//
// Hot path: TryAcquire() is one compare-and-swap loop on the in-flight count
// against the current limit (both atomics), as in FixedConcurrencyLimiter.
// Release() gives the slot back and adds the call to the current sample
// window with a few relaxed atomic additions (count, latency histogram,
// drops, the highest in-flight count seen). The first Release() that finds
// the window over (its time passed and it holds enough samples, or enough
// drops) closes it: an atomic
// flag elects that one thread, which takes `mu_` (uncontended: nobody else
// locks it on the call path), reads and resets the window, lets the subclass
// decide (OnWindow()) and publishes the new limit and the next window. The
// other threads never wait for it. Samples added while a window closes may
// land in either window, which only blurs the boundary.
//
// What a Release() adds:
//   - kNeutral (a call its client cancelled): no sample, whatever the
//     latency (it is only how long the call ran before its client went
//     away, which says nothing about how long calls take); an unanswered
//     call for a window that gives up (Decision::give_up_after);
//   - otherwise: a latency sample, and a drop when the outcome is kFailure
//     or the latency reaches `drop_latency` (the subclass's choice).
// What a ReleaseExpired(ran) adds: a drop, and `ran` as a latency sample
// only if it is at least the subclass's `censored_floor` (Decision): the
// call's latency is known to be at least `ran`, so a long `ran` is evidence
// of slow calls, but a short one (a client's deadline shorter than the
// calls) would make calls look faster than they are; otherwise an
// unanswered call, as above.
// ReleaseUnused() (a call that never ran) adds nothing.
// Latencies are clamped to [0, 1h].
//
// The limit moves in [min_limit, max_limit]; the in-flight count may be
// above the limit for a while after the limit drops (calls admitted before
// keep their slots). This class is thread-safe.
class AdaptiveConcurrencyLimiter : public ConcurrencyLimiter {
 public:
  // The settings every adaptive limit has.
  struct Options {
    // The limit never goes below / above these. min_limit in [1, 1e6],
    // max_limit in [min_limit, 1e6].
    int64_t min_limit = 3;
    int64_t max_limit = 1000;
    // The limit until the first windows have spoken. In [min_limit,
    // max_limit].
    int64_t initial_limit = 20;
    // How often the limit is reconsidered: a window closes once this long
    // has passed since it opened AND it holds min_samples finished calls.
    // sample_window in [1ms, 1h], min_samples in [1, 1e6].
    absl::Duration sample_window = absl::Milliseconds(50);
    int64_t min_samples = 10;
  };

  static constexpr int64_t kMaxLimit = 1'000'000;
  static constexpr int64_t kMaxSamples = 1'000'000;

  // Validate()
  //
  // OK when the options are within the bounds above; otherwise
  // InvalidArgument naming the field and the value
  // ("min_limit: must be in [1, 1000000], got 0").
  static absl::Status Validate(const Options& options);

  bool TryAcquire() override {
    const int64_t limit = limit_.load(std::memory_order_relaxed);
    int64_t current = in_flight_.load(std::memory_order_relaxed);
    do {
      if (current >= limit) return false;
    } while (!in_flight_.compare_exchange_weak(current, current + 1, std::memory_order_acq_rel,
                                               std::memory_order_relaxed));
    return true;
  }

  void Release(Outcome outcome, absl::Duration latency) override;
  void ReleaseExpired(absl::Duration ran) override;
  void ReleaseUnused() override { in_flight_.fetch_sub(1, std::memory_order_acq_rel); }

  int64_t in_flight() const override { return in_flight_.load(std::memory_order_acquire); }
  int64_t limit() const override { return limit_.load(std::memory_order_relaxed); }

 protected:
  // What one closed window saw.
  struct Window {
    absl::Time now;             // when it closed
    int64_t samples = 0;        // latency samples (only those counted, see samples_since)
    absl::Duration median_latency;  // their median (within 3.2%); zero without samples
    int64_t drops = 0;          // failures and latencies >= drop_latency
    int64_t max_in_flight = 0;  // the highest in-flight count a Release() saw
    // Calls admitted at or after samples_since that ended without a sample
    // (cancelled, or expired too soon to be one); counted only in a window
    // that gives up (Decision::give_up_after), else 0.
    int64_t unanswered = 0;
  };
  // What the subclass wants next.
  struct Decision {
    int64_t limit;            // clamped to [min_limit, max_limit] by the caller
    absl::Time window_end;    // the next window closes no earlier than this
    int64_t min_samples;      // and not before it holds this many samples or drops
    // Only calls admitted at or after this time are sampled (a call that
    // finishes at `now` with latency `l` was admitted at `now - l`);
    // InfinitePast(): every call.
    absl::Time samples_since;
    // ReleaseExpired() latencies below this are no samples.
    absl::Duration censored_floor = absl::InfiniteDuration();
    // 0: an ordinary window, closed (once its time passed) by min_samples
    // samples or as many drops. Otherwise a window that must gather
    // min_samples samples (the gradient's baseline measurement): drops do
    // not close it, and it closes once this many unanswered calls (Window)
    // have ended, whatever it holds: the subclass then gives up.
    int64_t give_up_after = 0;
  };

  // `drop_latency`: a call this slow counts as a drop (InfiniteDuration():
  // only failures do). `first` is the first window's Decision. `clock` must
  // outlive the limiter.
  AdaptiveConcurrencyLimiter(const Options& options, absl::Duration drop_latency, Clock& clock,
                             const Decision& first);

  // OnWindow()
  //
  // A window closed: the next limit and window. Called with mu_ held, by one
  // thread at a time.
  virtual Decision OnWindow(const Window& window) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) = 0;

  const Options options_;
  Clock& clock_;
  // Held only by the thread closing a window (and by subclasses' readers of
  // their state, off the call path); guards the subclass's controller state.
  Mutex mu_;

 private:
  // A released call that ran `latency_ns`: a drop or not, a latency
  // sample or an unanswered call (a window that gives up counts those).
  void Record(bool drop, bool sample, int64_t latency_ns, int64_t before);
  void CloseWindow(int64_t now_ns);

  const int64_t drop_latency_ns_;
  std::atomic<int64_t> limit_;
  std::atomic<int64_t> in_flight_{0};
  // The current window.
  std::atomic<int64_t> window_end_ns_;
  std::atomic<int64_t> min_samples_;
  std::atomic<int64_t> samples_since_ns_;
  std::atomic<int64_t> censored_floor_ns_;
  std::atomic<int64_t> give_up_after_;
  std::atomic<int64_t> samples_{0};
  std::atomic<int64_t> unanswered_{0};
  AtomicLatencyHistogram latencies_;
  std::atomic<int64_t> drops_{0};
  std::atomic<int64_t> max_in_flight_{0};
  // Set by the thread that closes the window.
  std::atomic<bool> closing_{false};
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_LIMITS_ADAPTIVE_CONCURRENCY_LIMITER_H_
