// File: src/client_interceptors/reconnect_watch.h
//
// Keeps a channel's reconnection going while its calls fail without
// reaching a server.

#ifndef GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_RECONNECT_WATCH_H_
#define GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_RECONNECT_WATCH_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include "absl/time/time.h"
#include "grpcpp/channel.h"
#include "grpcpp/impl/channel_interface.h"
#include "grpcpp/support/status.h"
#include "src/core/clock.h"

namespace resilience {

// ReconnectWatch
//
// Why: gRPC 1.51 moves a channel from TRANSIENT_FAILURE to READY only while
// some thread polls it (its reconnect timer fires on gRPC's timer thread,
// but the connection attempt it starts completes through polling). A
// blocking caller's attempts complete on a queue of their own, polled only
// while the caller waits (grpc_internals.h), and a busy client whose calls all
// fail fast (our breaker's local rejections never enter gRPC; a call on a
// channel in TRANSIENT_FAILURE fails at once) polls nothing: the channel
// then waits for gRPC's backup poller (every 5 s) at each step, and a
// restarted backend saw no successful call for ~9 s.
//
// What: Poke() is told of every call (or attempt) that ended UNAVAILABLE,
// our breaker's rejections included. While the channel is CONNECTING or in
// TRANSIENT_FAILURE (not READY, and not IDLE: a channel that never had to
// connect is not made to by our rejections), it starts one thread for the channel (at most one at a time) that watches
// its connectivity with GetState(true) / NotifyOnStateChange() on a
// completion queue of its own: polling that queue drives the reconnection
// at gRPC's own reconnect backoff. The thread ends when the channel is READY
// or shut down, or when no Poke() came for kIdle (nobody is calling); it
// holds a reference to the channel meanwhile, and may be the one to release
// it. A READY channel costs a Poke() one GetState(false).
//
// Hurry() is for a breaker that waits for the channel (BreakerStage): gRPC's
// reconnect backoff grows to minutes (1 s, 1.6 s, 2.6 s, ...), so a backend
// back after a 3 s outage was connected again only ~2.2 s later; while a
// breaker waits, the channel tries again at least every kHurryEvery.
//
// Thread-safe. The destructor does not wait for the thread (it holds what it
// uses).
class ReconnectWatch {
 public:
  // How long the thread keeps watching without a Poke(); and the longest
  // wait of one watch (how often it looks at the pokes).
  static constexpr absl::Duration kIdle = absl::Seconds(1);
  static constexpr absl::Duration kTurn = absl::Milliseconds(200);
  // Hurry()'s least time between two resets of the reconnect backoff:
  // gRPC's own first step.
  static constexpr absl::Duration kHurryEvery = absl::Seconds(1);

  explicit ReconnectWatch(Clock& clock = Clock::Real()) { shared_->clock = &clock; }

  // Poke()
  //
  // A call of `channel` (a grpc::Channel; others are ignored) ended with
  // `code`: anything but UNAVAILABLE is ignored.
  void Poke(grpc::ChannelInterface* channel, grpc::StatusCode code) {
    if (code == grpc::StatusCode::UNAVAILABLE) Poke(channel);
  }
  void Poke(grpc::ChannelInterface* channel);

  // Hurry()
  //
  // A breaker of `channel` (a grpc::Channel; others are ignored) is open
  // or waits to probe while the channel is not connected: at most once per
  // kHurryEvery, its reconnect backoff is reset
  // (grpc::experimental::ChannelResetConnectionBackoff), so that it tries to
  // connect now; and it is Poke()d.
  void Hurry(grpc::ChannelInterface* channel);

  // Whether the thread is watching now (for tests).
  bool watching() const { return shared_->running.load(std::memory_order_acquire); }
  // Threads started so far (for tests).
  int64_t watches_started() const { return shared_->started.load(std::memory_order_relaxed); }
  // Backoff resets Hurry() made so far (for tests).
  int64_t hurried() const { return shared_->hurried.load(std::memory_order_relaxed); }

 private:
  struct Shared {
    Clock* clock = &Clock::Real();  // must outlive every watch
    std::atomic<bool> running{false};
    std::atomic<int64_t> last_poke_ns{0};
    std::atomic<int64_t> started{0};
    std::atomic<int64_t> last_hurry_ns{0};
    std::atomic<int64_t> hurried{0};
  };

  static void Run(std::shared_ptr<Shared> shared, std::shared_ptr<grpc::Channel> channel);

  const std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_RECONNECT_WATCH_H_
