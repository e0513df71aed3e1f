#include "examples/cache_service/load_generator.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "examples/cache_service/status_text.h"
#include "grpcpp/client_context.h"

namespace cache_service {
namespace {

struct WorkerResult {
  std::array<int64_t, LoadReport::kNumCodes> by_code{};
  std::vector<absl::Duration> latencies;
};

std::string Millis(absl::Duration d) {
  return absl::StrFormat("%.3f ms", absl::ToDoubleMilliseconds(d));
}

}  // namespace

absl::Duration LoadReport::Percentile(double q) const {
  if (sorted_latencies.empty()) return absl::ZeroDuration();
  q = std::clamp(q, 0.0, 1.0);
  // Nearest rank: the smallest value with at least q of the samples <= it.
  size_t rank = static_cast<size_t>(std::ceil(q * sorted_latencies.size()));
  if (rank == 0) rank = 1;
  return sorted_latencies[rank - 1];
}

std::string LoadReport::Format() const {
  const double seconds = absl::ToDoubleSeconds(elapsed);
  std::string out = absl::StrFormat("calls: %d in %.3f s (%.0f calls/s)\n", calls, seconds,
                                    seconds > 0 ? calls / seconds : 0.0);
  for (int code = 0; code < kNumCodes; ++code) {
    if (by_code[code] == 0) continue;
    absl::StrAppendFormat(&out, "  %-20s %d\n",
                          StatusCodeName(static_cast<grpc::StatusCode>(code)),
                          by_code[code]);
  }
  absl::StrAppend(&out, "latency: p50 ", Millis(Percentile(0.5)), ", p90 ",
                  Millis(Percentile(0.9)), ", p99 ", Millis(Percentile(0.99)), ", max ",
                  Millis(Percentile(1.0)), "\n");
  return out;
}

absl::Status ValidateLoadOptions(const LoadOptions& o) {
  if (o.calls < 0) {
    return absl::InvalidArgumentError(absl::StrCat("calls: must be >= 0, got ", o.calls));
  }
  if (o.duration < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("duration: must be >= 0, got ", absl::FormatDuration(o.duration)));
  }
  if (o.calls == 0 && o.duration == absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "calls, duration: at least one must be set (calls > 0 or duration > 0)");
  }
  if (o.concurrency < 1 || o.concurrency > 1024) {
    return absl::InvalidArgumentError(
        absl::StrCat("concurrency: must be in [1, 1024], got ", o.concurrency));
  }
  if (o.key_space < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("key_space: must be >= 1, got ", o.key_space));
  }
  if (o.value_size < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("value_size: must be >= 0, got ", o.value_size));
  }
  if (!(o.get_fraction >= 0.0 && o.get_fraction <= 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("get_fraction: must be in [0, 1], got ", o.get_fraction));
  }
  if (o.call_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "call_timeout: must be > 0, got ", absl::FormatDuration(o.call_timeout)));
  }
  return absl::OkStatus();
}

LoadReport RunLoad(cache::v1::CacheService::StubInterface& stub, const LoadOptions& options,
                   const std::function<void(const LoadProgress&)>& on_progress) {
  const absl::Time start = absl::Now();
  const absl::Time end = options.duration > absl::ZeroDuration()
                             ? start + options.duration
                             : absl::InfiniteFuture();
  std::atomic<int64_t> next_call{0};
  std::atomic<int64_t> done{0};
  std::atomic<int64_t> ok{0};
  const std::string value(static_cast<size_t>(options.value_size), 'v');

  std::vector<WorkerResult> results(options.concurrency);
  auto worker = [&](int index) {
    WorkerResult& result = results[index];
    // std::mt19937_64, not absl::BitGen: absl salts seeds per process, and a
    // seeded run must repeat.
    std::mt19937_64 random(options.seed * 1000003 + static_cast<uint64_t>(index));
    auto uniform = [&random] { return (random() >> 11) * 0x1.0p-53; };
    while (true) {
      if (options.calls > 0 && next_call.fetch_add(1) >= options.calls) break;
      const absl::Time call_start = absl::Now();
      if (call_start >= end) break;
      const std::string key = absl::StrCat(
          "key-", static_cast<int64_t>(uniform() * static_cast<double>(options.key_space)));
      grpc::ClientContext context;
      if (options.call_timeout != absl::InfiniteDuration()) {
        context.set_deadline(absl::ToChronoTime(call_start + options.call_timeout));
      }
      grpc::Status status;
      if (uniform() < options.get_fraction) {
        cache::v1::GetReq request;
        request.set_key(key);
        cache::v1::GetResp response;
        status = stub.Get(&context, request, &response);
      } else {
        cache::v1::StoreReq request;
        request.set_key(key);
        request.set_value(value);
        cache::v1::StoreResp response;
        status = stub.Store(&context, request, &response);
      }
      result.latencies.push_back(absl::Now() - call_start);
      const int code = static_cast<int>(status.error_code());
      ++result.by_code[code >= 0 && code < LoadReport::kNumCodes ? code : 2 /*UNKNOWN*/];
      done.fetch_add(1, std::memory_order_relaxed);
      if (status.ok()) ok.fetch_add(1, std::memory_order_relaxed);
    }
  };

  absl::Notification finished;
  std::thread progress_thread;
  if (on_progress) {
    progress_thread = std::thread([&] {
      while (!finished.WaitForNotificationWithTimeout(absl::Milliseconds(200))) {
        on_progress(LoadProgress{done.load(), ok.load(), absl::Now() - start});
      }
    });
  }
  std::vector<std::thread> workers;
  workers.reserve(options.concurrency);
  for (int i = 0; i < options.concurrency; ++i) workers.emplace_back(worker, i);
  for (std::thread& t : workers) t.join();
  finished.Notify();
  if (progress_thread.joinable()) progress_thread.join();

  LoadReport report;
  report.elapsed = absl::Now() - start;
  for (WorkerResult& result : results) {
    for (int code = 0; code < LoadReport::kNumCodes; ++code) {
      report.by_code[code] += result.by_code[code];
    }
    report.sorted_latencies.insert(report.sorted_latencies.end(), result.latencies.begin(),
                                   result.latencies.end());
  }
  report.calls = static_cast<int64_t>(report.sorted_latencies.size());
  std::sort(report.sorted_latencies.begin(), report.sorted_latencies.end());
  return report;
}

}  // namespace cache_service
