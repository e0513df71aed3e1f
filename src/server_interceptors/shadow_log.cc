#include "src/server_interceptors/shadow_log.h"

#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"

namespace resilience {
namespace {

void ToStderr(const ShadowLog::Report& report) {
  const std::string out = absl::StrCat("grpc_resilience: ", ShadowLog::Text(report), "\n");
  std::fwrite(out.data(), 1, out.size(), stderr);  // one write: lines do not interleave
}

}  // namespace

ShadowLog::ShadowLog(Sink sink) : sink_(sink != nullptr ? std::move(sink) : ToStderr) {}

void ShadowLog::SetSink(Sink sink) { sink_ = sink != nullptr ? std::move(sink) : ToStderr; }

void ShadowLog::Note(absl::Time now, absl::string_view method, EnforcedPolicy policy,
                     absl::string_view cause) {
  pending_.fetch_add(1, std::memory_order_relaxed);
  total_.fetch_add(1, std::memory_order_relaxed);
  const int64_t now_ns = absl::ToUnixNanos(now);
  int64_t last = last_ns_.load(std::memory_order_relaxed);
  if (last != INT64_MIN && now_ns - last < absl::ToInt64Nanoseconds(kInterval)) return;
  if (!last_ns_.compare_exchange_strong(last, now_ns, std::memory_order_relaxed)) return;
  Report report;
  report.method = method;
  report.policy = policy;
  report.cause = cause;
  report.counted = pending_.exchange(0, std::memory_order_relaxed);
  report.total = total_.load(std::memory_order_relaxed);
  report.since = last == INT64_MIN ? now : absl::FromUnixNanos(last);
  report.at = now;
  sink_(report);
}

std::string ShadowLog::Text(const Report& r) {
  return absl::StrCat("shadow: ", r.method, ": ", EnforcedPolicyName(r.policy), " would have rejected this call (",
                      r.cause, "); ", r.counted, r.counted == 1 ? " call" : " calls",
                      " would have been rejected in this scope since the last such line (at most "
                      "one per ",
                      absl::FormatDuration(kInterval), ")");
}

}  // namespace resilience
