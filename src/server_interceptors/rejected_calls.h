// File: src/server_interceptors/rejected_calls.h
//
// The hand-over from the server interceptors, which decide to reject a call,
// to the GuardedService, which then answers it without running the user's
// handler. Nothing a client sends takes part in it.

#ifndef GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_REJECTED_CALLS_H_
#define GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_REJECTED_CALLS_H_

#include <array>
#include <atomic>
#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "src/breaker/mutex.h"

namespace resilience {

// RejectedCalls
//
// The set of calls, each named by its server context (one per call while the
// call lives), that an interceptor has rejected and whose handler has not
// been reached yet.
//
// Protocol: an interceptor that rejects a call Add()s its context at
// POST_RECV_INITIAL_METADATA, and Remove()s it when the interceptor is
// destroyed (gRPC destroys interceptors with the call's context, after the
// handler, so a context address is never reused while it is in the set).
// The guard Take()s it when the handler would run.
//
// Cost: while the set is empty (every call admitted) Take() is one relaxed
// atomic load; otherwise a lock of one of 16 shards.
//
// This class is thread-safe.
class RejectedCalls {
 public:
  RejectedCalls() = default;
  RejectedCalls(const RejectedCalls&) = delete;
  RejectedCalls& operator=(const RejectedCalls&) = delete;

  // Add()
  //
  // Marks `call` as rejected. Adding a call twice is the same as once.
  void Add(const void* call);

  // Contains()
  //
  // Whether `call` is marked (an interceptor that decides later skips it).
  bool Contains(const void* call) const;

  // Take()
  //
  // Whether `call` is marked; removes the mark.
  bool Take(const void* call);

  // Remove()
  //
  // Removes the mark of `call`, if any.
  void Remove(const void* call) { (void)Take(call); }

  // The number of marked calls.
  int64_t size() const { return size_.load(std::memory_order_acquire); }

 private:
  struct Shard {
    mutable Mutex mu;
    absl::flat_hash_set<const void*> calls ABSL_GUARDED_BY(mu);
  };
  Shard& ShardOf(const void* call) const;

  std::atomic<int64_t> size_{0};
  mutable std::array<Shard, 16> shards_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_REJECTED_CALLS_H_
