// File: src/core/counter_list.h
//
// Counters declared once. A list macro names a set of counters,
//
//   #define MY_COUNTERS(X) X(calls) X(retries)
//
// and the macros here make of it, one counter at a time, the atomic members
// that count, the plain fields of their snapshot, and the copy from one to
// the other, so that a counter added to the list is counted, read and
// copied with no other line to write (as Envoy declares its stats with one
// macro list):
//
//   struct State { MY_COUNTERS(GRPC_RESILIENCE_ATOMIC_COUNTER) };
//       // std::atomic<int64_t> calls{0}; std::atomic<int64_t> retries{0};
//   struct Stats { MY_COUNTERS(GRPC_RESILIENCE_COUNTER_FIELD) };
//       // int64_t calls = 0; int64_t retries = 0;
//   Stats Read(const State& from) {
//     Stats to;
//     MY_COUNTERS(GRPC_RESILIENCE_LOAD_COUNTER)
//         // to.calls = from.calls.load(std::memory_order_relaxed); ...
//     return to;
//   }
//
// Comments in a list macro must be /* */ comments: a // comment would take
// the line continuation with it.
//
// The counters are relaxed atomics: each is exact, a snapshot is not one
// instant (counters read one after the other).

#ifndef GRPC_RESILIENCE_SRC_CORE_COUNTER_LIST_H_
#define GRPC_RESILIENCE_SRC_CORE_COUNTER_LIST_H_

#include <atomic>
#include <cstdint>

// A counter of the state: std::atomic<int64_t> `name`, starting at 0.
#define GRPC_RESILIENCE_ATOMIC_COUNTER(name) std::atomic<int64_t> name{0};

// A field of the snapshot: int64_t `name`, 0 by default.
#define GRPC_RESILIENCE_COUNTER_FIELD(name) int64_t name = 0;

// The copy of one counter, in a scope where `from` is the state and `to` the
// snapshot.
#define GRPC_RESILIENCE_LOAD_COUNTER(name) to.name = from.name.load(std::memory_order_relaxed);

#endif  // GRPC_RESILIENCE_SRC_CORE_COUNTER_LIST_H_
