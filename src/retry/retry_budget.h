// File: src/retry/retry_budget.h
//
// A retry budget, as gRPC's retryThrottling: retries stop while too many
// recent calls failed, so that retries cannot multiply the load on a backend
// that is down (the SRE book's "retries < 10% of requests" in another form).

#ifndef GRPC_RESILIENCE_SRC_RETRY_RETRY_BUDGET_H_
#define GRPC_RESILIENCE_SRC_RETRY_RETRY_BUDGET_H_

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace resilience {

// RetryBudget
//
// The algorithm (gRFC A6, "Throttling retry attempts"): a bucket of
// `max_tokens` tokens, full at start. Each failed attempt takes 1 token, each
// success gives back `token_ratio`; retries are allowed while tokens >
// max_tokens / 2. Counted in integer milli-tokens in one atomic, like gRPC
// core's RetryThrottler, so every operation is one lock-free read-modify-
// write. This class is thread-safe.
class RetryBudget {
 public:
  // Largest max_tokens Validate() accepts (gRPC's own bound).
  static constexpr int kMaxTokens = 1000;

  // gRPC's retryThrottling, under its names. The defaults written here are
  // the library's only ones (a policy file without retryThrottling gets
  // them).
  struct Options {
    // Size of the bucket. In [1, kMaxTokens].
    int max_tokens = 10;
    // Tokens a success gives back. In (0, 1]; kept to three decimals, as
    // gRPC does (at least 0.001).
    double token_ratio = 0.1;
  };

  // Validate()
  //
  // OK when Create() would accept `options`; otherwise InvalidArgument
  // naming the field and the value, e.g. "retry_budget.max_tokens: must be
  // in [1, 1000], got 0". NaN fails.
  static absl::Status Validate(const Options& options) {
    if (options.max_tokens < 1 || options.max_tokens > kMaxTokens) {
      return absl::InvalidArgumentError(absl::StrCat(
          "retry_budget.max_tokens: must be in [1, ", kMaxTokens, "], got ", options.max_tokens));
    }
    return ValidateTokenRatio(options.token_ratio);
  }

  // ValidateTokenRatio()
  //
  // The token ratio's rule, shared with WindowedRetryBudget: OK in (0, 1];
  // "retry_budget.token_ratio: must be in (0, 1], got 0" otherwise. NaN fails.
  static absl::Status ValidateTokenRatio(double token_ratio) {
    if (!(token_ratio > 0.0 && token_ratio <= 1.0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("retry_budget.token_ratio: must be in (0, 1], got ", token_ratio));
    }
    return absl::OkStatus();
  }

  // RatioMilli()
  //
  // A token ratio in milli-tokens, as gRPC keeps it: three decimals, at
  // least 0.001 (NaN too), at most 1.
  static int64_t RatioMilli(double token_ratio) {
    if (!(token_ratio > 0.0)) return 1;
    return std::clamp<int64_t>(std::llround(std::min(token_ratio, 1.0) * 1000), 1, 1000);
  }

  // Create()
  //
  // A full budget for options Validate() accepts; its error otherwise.
  static absl::StatusOr<std::unique_ptr<RetryBudget>> Create(const Options& options) {
    if (absl::Status s = Validate(options); !s.ok()) return s;
    return std::make_unique<RetryBudget>(options.max_tokens, options.token_ratio);
  }

  // Builds a full budget without validation, for callers that validated the
  // settings already (the policy loader does, through Validate()).
  // Out-of-range values are clamped into Validate()'s ranges (NaN to the
  // smallest ratio), so no value can overflow the arithmetic.
  RetryBudget(int max_tokens, double token_ratio)
      : max_milli_(int64_t{std::clamp(max_tokens, 1, kMaxTokens)} * 1000),
        ratio_milli_(RatioMilli(token_ratio)),
        milli_tokens_(max_milli_) {}

  RetryBudget(const RetryBudget&) = delete;
  RetryBudget& operator=(const RetryBudget&) = delete;

  // A failure costs 1 token (1000 milli-tokens), never below 0.
  void RecordFailure() {
    int64_t t = milli_tokens_.load(std::memory_order_relaxed);
    while (!milli_tokens_.compare_exchange_weak(t, std::max<int64_t>(0, t - 1000),
                                                std::memory_order_relaxed)) {
    }
  }

  // A success gives back token_ratio tokens, never above max_tokens.
  void RecordSuccess() {
    int64_t t = milli_tokens_.load(std::memory_order_relaxed);
    while (!milli_tokens_.compare_exchange_weak(t, std::min(max_milli_, t + ratio_milli_),
                                                std::memory_order_relaxed)) {
    }
  }

  // TrySpend()
  //
  // One token for an attempt that no failure paid for (a hedge sent because
  // its delay passed, hedging_decider.h): taken, and true, only while
  // AllowRetry() holds, in one atomic step.
  bool TrySpend() {
    int64_t t = milli_tokens_.load(std::memory_order_relaxed);
    do {
      if (t * 2 <= max_milli_) return false;
    } while (!milli_tokens_.compare_exchange_weak(t, std::max<int64_t>(0, t - 1000),
                                                  std::memory_order_relaxed));
    return true;
  }

  // Retries are allowed while more than half the bucket is left.
  bool AllowRetry() const { return milli_tokens_.load(std::memory_order_relaxed) * 2 > max_milli_; }

  double tokens() const { return milli_tokens_.load(std::memory_order_relaxed) / 1000.0; }

 private:
  const int64_t max_milli_;
  const int64_t ratio_milli_;
  std::atomic<int64_t> milli_tokens_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_RETRY_RETRY_BUDGET_H_
