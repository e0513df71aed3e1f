// File: src/limits/retry_shedding.h
//
// How a server limit sheds retried attempts before first attempts of the
// same criticality (docs/criticality.md, "Retries shed first").

#ifndef GRPC_RESILIENCE_SRC_LIMITS_RETRY_SHEDDING_H_
#define GRPC_RESILIENCE_SRC_LIMITS_RETRY_SHEDDING_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "src/limits/criticality_shares.h"

namespace resilience {

// RetryShedding
//
// A retried attempt (one whose grpc-previous-rpc-attempts header, gRFC A6,
// counts one or more attempts before it) of level L is judged as if L's
// share were share(L) x retry_share: with CriticalityShares' rules, under a
// concurrency limit of 20 and the default retry share of 0.5, a retried
// CRITICAL attempt is refused once 10 slots are taken, while a first
// CRITICAL attempt is admitted up to 20; a rate limit's bucket holds half
// its burst for a retried attempt, so under overload the first attempts
// take every token and the retries find it empty. Every limit that takes
// CriticalityShares applies it the same way (concurrency fixed or adaptive,
// rate, fleet-wide, per caller).
//
// Off (the default-constructed value): a retried attempt is judged as a
// first attempt, exactly as without this class. `do_not_retry`: the
// scope's rejections tell the client not to retry (gRFC A6: a
// grpc-retry-pushback-ms that is not a non-negative integer), instead of a
// delay. This class is a value; copies are independent.
class RetryShedding {
 public:
  static constexpr double kDefaultRetryShare = 0.5;
  // The trailer value that means "do not retry" (gRFC A6).
  static constexpr absl::string_view kDoNotRetryPushback = "-1";

  struct Options {
    // Multiplies each level's share for a retried attempt. In [0, 1]; 1
    // judges retries as first attempts.
    double retry_share = kDefaultRetryShare;
    // Rejections carry A6's "do not retry" pushback.
    bool do_not_retry = false;
  };

  // Validate()
  //
  // OK when retry_share is in [0, 1]; InvalidArgument naming the field and
  // the value otherwise ("retry_share: must be in [0, 1], got 1.5").
  static absl::Status Validate(const Options& options);

  // Off: retries judged as first attempts, rejections with a delay.
  RetryShedding() = default;

  // On, over the scope's `shares`, with options Validate() accepted.
  RetryShedding(const CriticalityShares& shares, const Options& options);

  // IsRetry()
  //
  // Whether a grpc-previous-rpc-attempts value counts one or more previous
  // attempts: a decimal integer >= 1. Anything else (empty, "0", junk, a
  // sign) is a first attempt: a client cannot lower its own calls' standing
  // by sending a malformed value, only by saying it retries.
  static bool IsRetry(absl::string_view previous_attempts);

  // Whether retried attempts are judged by their own shares.
  bool sheds_retries() const { return sheds_retries_; }
  bool do_not_retry() const { return options_.do_not_retry; }
  double retry_share() const { return options_.retry_share; }

  // The shares a retried attempt is judged by (scaled by retry_share):
  // the shares given to the constructor with every level's share
  // multiplied by retry_share (still never larger for a less critical
  // level). Meaningful only when sheds_retries().
  const CriticalityShares& retry_shares() const { return retry_shares_; }

  // The shares a call is judged by: `shares` for a first attempt, or when
  // retries are not shed; retry_shares() for a retried one.
  const CriticalityShares& SharesFor(const CriticalityShares& shares, bool retry) const {
    return retry && sheds_retries_ ? retry_shares_ : shares;
  }

 private:
  Options options_;
  bool sheds_retries_ = false;
  CriticalityShares retry_shares_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_LIMITS_RETRY_SHEDDING_H_
