// File: src/server_interceptors/shadow_log.h
//
// The log of a scope's shadow decisions: "would have rejected", aggregated
// to one line per kInterval at most.

#ifndef GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_SHADOW_LOG_H_
#define GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_SHADOW_LOG_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace resilience {

// ShadowLog
//
// Counts the calls a scope's shadow policies would have rejected; the first
// one, and then the first after each kInterval, writes one line to `sink`
// (stderr, "grpc_resilience: " in front, by default) naming the call's
// method, the policy, why, and how many calls were counted since the
// previous line. Thread-safe, lock-free: a call that does not write is two
// atomic operations.
class ShadowLog {
 public:
  static constexpr absl::Duration kInterval = absl::Seconds(10);
  using Sink = std::function<void(const std::string& line)>;

  explicit ShadowLog(Sink sink = nullptr);
  ShadowLog(const ShadowLog&) = delete;
  ShadowLog& operator=(const ShadowLog&) = delete;

  // One call `method` would have been rejected by `policy` ("throttle",
  // "cpu", ...) for `cause` ("concurrency", "rate", ...) at `now`.
  void Note(absl::Time now, absl::string_view method, absl::string_view policy,
            absl::string_view cause);

 private:
  const Sink sink_;
  std::atomic<int64_t> pending_{0};
  // When the last line was written (Unix ns); INT64_MIN: never.
  std::atomic<int64_t> last_ns_{INT64_MIN};
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_SHADOW_LOG_H_
