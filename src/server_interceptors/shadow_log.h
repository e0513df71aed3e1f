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
#include "grpc_resilience/enforcement_mode.h"

namespace resilience {

// ShadowLog
//
// Counts the calls a scope's shadow policies would have rejected; the first
// one, and then the first after each kInterval, is reported to `sink` with
// the call's method, the policy, why, and how many calls were counted since
// the previous report. The default sink writes Text() to stderr
// ("grpc_resilience: " in front); a server with a ResilienceEvents listener
// sets one that posts a ShadowDecisionEvent (ServerResilienceImpl::
// LimitsFor()). Thread-safe, lock-free: a call that does not report is
// three atomic operations.
class ShadowLog {
 public:
  static constexpr absl::Duration kInterval = absl::Seconds(10);
  // One report: valid during the sink's call.
  struct Report {
    absl::string_view method;  // the latest call's
    EnforcedPolicy policy = EnforcedPolicy::kThrottle;
    absl::string_view cause;   // "concurrency", "rate", ...
    int64_t counted = 0;       // calls since the previous report
    int64_t total = 0;         // calls since the log was made
    absl::Time since;          // the previous report, or `at` the first time
    absl::Time at;             // the latest call
  };
  using Sink = std::function<void(const Report& report)>;

  explicit ShadowLog(Sink sink = nullptr);
  ShadowLog(const ShadowLog&) = delete;
  ShadowLog& operator=(const ShadowLog&) = delete;

  // Replaces the sink: only before the log is shared with calls.
  void SetSink(Sink sink);

  // One call `method` would have been rejected by `policy` for `cause`
  // ("concurrency", "rate", ...) at `now`.
  void Note(absl::Time now, absl::string_view method, EnforcedPolicy policy,
            absl::string_view cause);

  // The report as one line of text (the default sink's, without its prefix).
  static std::string Text(const Report& report);

 private:
  Sink sink_;
  std::atomic<int64_t> pending_{0};
  std::atomic<int64_t> total_{0};
  // When the last report was made (Unix ns); INT64_MIN: never.
  std::atomic<int64_t> last_ns_{INT64_MIN};
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_SERVER_INTERCEPTORS_SHADOW_LOG_H_
