// File: src/server_interceptors/call_verdicts.h
//
// The hand-over from the server interceptors, which decide what happens to a
// call, to the GuardedService, which carries it out where the user's handler
// would run: reject the call without the handler, or hold it for a while
// before the handler. Nothing a client sends takes part in it.

#ifndef GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_CALL_VERDICTS_H_
#define GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_CALL_VERDICTS_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "src/core/mutex.h"

namespace resilience {

// What the guard is to do with a call.
struct Verdict {
  enum Kind { kRun, kReject, kHold };
  Kind kind = kRun;
  // kHold: run the handler at this time, unless the call ends before.
  absl::Time hold_until;
  // kHold: counted when the call's deadline passes or the call is cancelled
  // during the hold (its handler is then skipped). May be null.
  std::atomic<int64_t>* ended_while_held = nullptr;
  // kReject decided when the call arrived (CallVerdicts::RejectOnArrival(),
  // keyed by the core call):
  // the guard answers with this status (a grpc::StatusCode, its message)
  // and `grpc-retry-pushback-ms` = pushback_ms itself, since no interceptor
  // of ours is there to rewrite the status. false: a rejecting interceptor
  // rewrites it at PRE_SEND_STATUS.
  bool answer = false;
  int code = 0;
  std::string message;
  std::string pushback_ms;
  // With `answer`: the load report trailer's value (AddLoadReport()), if
  // the call's scope reports its load.
  std::optional<std::string> load_report;
};

// How a held call stands at a given time (CallVerdicts::EndOfHold()).
enum class HoldEnd {
  kHeld,            // still held
  kDeadlinePassed,  // its deadline passed: answer it without the handler
  kElapsed,         // the hold is over: on to the handler
  kHoldsEnded,      // holds were ended (EndHoldsAt(), a shutdown)
  kCancelled,       // the call was cancelled (by its client or a shutdown)
};

// CallVerdicts
//
// The verdicts on calls, each call named by its server context (one per call
// while the call lives), that an interceptor has decided and whose handler
// has not been reached yet.
//
// Protocol: an interceptor Reject()s or Hold()s a call at
// POST_RECV_INITIAL_METADATA, and Forget()s it when the interceptor is
// destroyed (gRPC destroys interceptors with the call's context, after the
// handler, so a context address is never reused while it is here). The
// guard Take()s the verdict when the handler would run. A rejection wins
// over a hold.
//
// Cost: while nothing is held or rejected, Take() is one atomic load;
// otherwise a lock of one of 16 shards.
//
// This class is thread-safe.
class CallVerdicts {
 public:
  CallVerdicts() = default;
  CallVerdicts(const CallVerdicts&) = delete;
  CallVerdicts& operator=(const CallVerdicts&) = delete;

  // Reject()
  //
  // The handler of `call` must not run.
  void Reject(const void* call);

  // RejectOnArrival()
  //
  // The call whose core call (grpc_call*) is `c_call` is rejected by a
  // decision taken when it arrived, in our interceptor factory, which then
  // makes no interceptor for it: the guard answers it with status `code`,
  // `message` and the pushback `pushback_ms` (milliseconds, the trailer's
  // value), and the load report `load_report` if any, itself. Named by the
  // core call, not the context: the guard's Deserialize(), which gRPC 1.51
  // runs before its handler and must take such a call's request into a
  // holder of its own, is given the core call only (AnsweredOnArrival()).
  // Only for calls whose guard is certain to run (a GuardedService of the
  // callback API): it takes the verdict (Take(c_call)), nothing else would.
  void RejectOnArrival(const void* c_call, int code, std::string message,
                       std::string pushback_ms,
                       std::optional<std::string> load_report = std::nullopt);

  // AnsweredOnArrival()
  //
  // Whether the core call `c_call` was rejected on arrival (its verdict is
  // kept for Take(c_call)).
  bool AnsweredOnArrival(const void* c_call) const;

  // Hold()
  //
  // The handler of `call` runs at `until`, not before (see Verdict).
  void Hold(const void* call, absl::Time until, std::atomic<int64_t>* ended_while_held);

  // IsRejected()
  //
  // Whether `call` is rejected (an interceptor that decides later skips it).
  bool IsRejected(const void* call) const;

  // Take()
  //
  // The verdict on `call` (kRun if none); removes it.
  Verdict Take(const void* call);

  // Forget()
  //
  // Removes the verdict on `call`, if any.
  void Forget(const void* call) { (void)Take(call); }

  // EndHoldsAt()
  //
  // Every hold ends at `when` at the latest: held calls are then answered
  // without their handler (for a shutdown's grace period). Defaults to never.
  void EndHoldsAt(absl::Time when) {
    holds_end_ns_.store(absl::ToUnixNanos(when), std::memory_order_release);
  }
  absl::Time holds_end() const {
    const int64_t ns = holds_end_ns_.load(std::memory_order_acquire);
    return ns == INT64_MAX ? absl::InfiniteFuture() : absl::FromUnixNanos(ns);
  }

  // EndOfHold()
  //
  // Whether a call held until `hold_until` is still held at `now`, and if
  // not, why, the first that applies of: its `deadline` passed, the hold is
  // over, holds were ended (EndHoldsAt()), it was `cancelled`. A passed
  // deadline comes first: the client has its answer, so the handler would
  // run for nobody. The one decision of both ways to hold a call: the
  // guard's wait on a sync handler thread (GuardedService) and the alarm of
  // FaultStage.
  HoldEnd EndOfHold(absl::Time now, absl::Time hold_until, absl::Time deadline,
                    bool cancelled = false) const;

  // The number of calls with a verdict.
  int64_t size() const { return size_.load(std::memory_order_acquire); }

 private:
  struct Shard {
    mutable Mutex mu;
    absl::flat_hash_map<const void*, Verdict> calls ABSL_GUARDED_BY(mu);
  };
  Shard& ShardOf(const void* call) const;
  void Put(const void* call, Verdict verdict);

  std::atomic<int64_t> size_{0};
  std::atomic<int64_t> holds_end_ns_{INT64_MAX};
  mutable std::array<Shard, 16> shards_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_CALL_VERDICTS_H_
