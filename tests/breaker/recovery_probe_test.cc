// RecoveryProbe and ThreeStateBreaker::OnHealth(), on a simulated clock: when
// probes are wanted and spaced, and what each answer does to the breaker.

#include "src/breaker/recovery_probe.h"

#include <memory>

#include "gtest/gtest.h"
#include "src/core/simulated_clock.h"

namespace resilience {
namespace {

class RecoveryProbeTest : public ::testing::Test {
 protected:
  RecoveryProbeTest() {
    breaker_options_.min_requests = 5;
    breaker_options_.failure_rate_threshold = 0.5;
    breaker_options_.open_duration = absl::Seconds(1);
    breaker_options_.health_gated = true;
    breaker_options_.listener = [this](const BreakerTransition& t) { causes_.push_back(t.cause); };
    breaker_ = *ThreeStateBreaker::Create(breaker_options_, clock_);
    probe_options_.interval = absl::Milliseconds(250);
    probe_ = std::make_unique<RecoveryProbe>(probe_options_, *breaker_, clock_);
  }

  void Fail(int n) {
    for (int i = 0; i < n; ++i) {
      Admission a = breaker_->Allow();
      ASSERT_TRUE(a.admitted());
      a.Record(Outcome::kFailure, absl::ZeroDuration());
      probe_->OnCallFailed();
    }
  }
  void TripByCalls() {
    // Failures with no probe answered yet: the window trips the breaker.
    Fail(5);
    ASSERT_EQ(breaker_->state(), BreakerState::kOpen);
  }

  SimulatedClock clock_;
  ThreeStateBreaker::Options breaker_options_;
  RecoveryProbe::Options probe_options_;
  std::unique_ptr<ThreeStateBreaker> breaker_;
  std::unique_ptr<RecoveryProbe> probe_;
  std::vector<TransitionCause> causes_;
};

TEST_F(RecoveryProbeTest, NoProbeWantedWhileClosedWithoutFailures) {
  EXPECT_FALSE(probe_->StartIfDue());
  EXPECT_EQ(probe_->TimeUntilDue(), absl::InfiniteDuration());
  Admission a = breaker_->Allow();
  a.Record(Outcome::kSuccess, absl::ZeroDuration());
  EXPECT_FALSE(probe_->StartIfDue());
  EXPECT_EQ(probe_->stats().probes, 0);
}

TEST_F(RecoveryProbeTest, AFailureThenNotServingTripsAtOnce) {
  Fail(1);
  EXPECT_EQ(breaker_->state(), BreakerState::kClosed);
  ASSERT_TRUE(probe_->StartIfDue());
  EXPECT_FALSE(probe_->StartIfDue()) << "one probe at a time";
  probe_->OnAnswer(RecoveryProbe::Answer::kNotServing);
  EXPECT_EQ(breaker_->state(), BreakerState::kOpen);
  ASSERT_EQ(causes_.size(), 1u);
  EXPECT_EQ(causes_[0], TransitionCause::kHealthNotServing);
}

TEST_F(RecoveryProbeTest, AFailureThenServingLeavesTheBreakerClosed) {
  Fail(1);
  ASSERT_TRUE(probe_->StartIfDue());
  probe_->OnAnswer(RecoveryProbe::Answer::kServing);
  EXPECT_EQ(breaker_->state(), BreakerState::kClosed);
  EXPECT_TRUE(causes_.empty());
  EXPECT_FALSE(probe_->StartIfDue()) << "nothing wanted until the next failure";
}

TEST_F(RecoveryProbeTest, ProbesAreSpacedByTheInterval) {
  Fail(1);
  ASSERT_TRUE(probe_->StartIfDue());
  probe_->OnAnswer(RecoveryProbe::Answer::kServing);
  clock_.AdvanceTime(absl::Milliseconds(100));
  Fail(1);
  EXPECT_FALSE(probe_->StartIfDue());
  EXPECT_EQ(probe_->TimeUntilDue(), absl::Milliseconds(150));
  clock_.AdvanceTime(absl::Milliseconds(150));
  EXPECT_EQ(probe_->TimeUntilDue(), absl::ZeroDuration());
  EXPECT_TRUE(probe_->StartIfDue());
  EXPECT_EQ(probe_->stats().probes, 2);
}

TEST_F(RecoveryProbeTest, OpenStaysOpenPastItsPeriodWhileNotServing) {
  TripByCalls();
  ASSERT_TRUE(probe_->StartIfDue());
  probe_->OnAnswer(RecoveryProbe::Answer::kUnreachable);
  // Far past the 1 s open period: no user call goes while the server is
  // known not to serve; probes go on every interval.
  for (int i = 0; i < 20; ++i) {
    clock_.AdvanceTime(absl::Milliseconds(250));
    EXPECT_FALSE(breaker_->Allow().admitted()) << i;
    ASSERT_TRUE(probe_->StartIfDue()) << i;
    probe_->OnAnswer(RecoveryProbe::Answer::kNotServing);
  }
  EXPECT_EQ(breaker_->state(), BreakerState::kOpen);
  const RecoveryProbe::Stats s = probe_->stats();
  EXPECT_EQ(s.probes, 21);
  EXPECT_EQ(s.unreachable, 1);
  EXPECT_EQ(s.not_serving, 20);
  // Probes are not calls: the window holds the 5 failures and the rejections.
  EXPECT_EQ(breaker_->Snapshot().counts.completed(), 5);
}

TEST_F(RecoveryProbeTest, ServingHalfOpensAndTheNextCallCloses) {
  TripByCalls();
  ASSERT_TRUE(probe_->StartIfDue());
  probe_->OnAnswer(RecoveryProbe::Answer::kServing);
  EXPECT_EQ(breaker_->state(), BreakerState::kHalfOpen) << "before the 1 s open period ended";
  Admission a = breaker_->Allow();
  ASSERT_TRUE(a.admitted());
  EXPECT_TRUE(a.probe());
  a.Record(Outcome::kSuccess, absl::ZeroDuration());
  EXPECT_EQ(breaker_->state(), BreakerState::kClosed);
  EXPECT_EQ(causes_.back(), TransitionCause::kProbesSucceeded);
  EXPECT_FALSE(probe_->StartIfDue());
}

TEST_F(RecoveryProbeTest, ServingButTheCallFailsReopensUntilTheNextServing) {
  TripByCalls();
  ASSERT_TRUE(probe_->StartIfDue());
  probe_->OnAnswer(RecoveryProbe::Answer::kServing);
  Admission a = breaker_->Allow();
  ASSERT_TRUE(a.admitted());
  a.Record(Outcome::kFailure, absl::ZeroDuration());
  EXPECT_EQ(breaker_->state(), BreakerState::kOpen);
  clock_.AdvanceTime(absl::Seconds(10));
  EXPECT_FALSE(breaker_->Allow().admitted()) << "the open period ends only by a SERVING answer";
  ASSERT_TRUE(probe_->StartIfDue());
  probe_->OnAnswer(RecoveryProbe::Answer::kServing);
  EXPECT_TRUE(breaker_->Allow().admitted());
}

TEST_F(RecoveryProbeTest, NotServingDuringHalfOpenReopens) {
  TripByCalls();
  ASSERT_TRUE(probe_->StartIfDue());
  probe_->OnAnswer(RecoveryProbe::Answer::kServing);
  ASSERT_EQ(breaker_->state(), BreakerState::kHalfOpen);
  // A user call's failure of another kind asks for a probe.
  probe_->OnCallFailed();
  clock_.AdvanceTime(absl::Milliseconds(250));
  ASSERT_TRUE(probe_->StartIfDue());
  probe_->OnAnswer(RecoveryProbe::Answer::kNotServing);
  EXPECT_EQ(breaker_->state(), BreakerState::kOpen);
  EXPECT_EQ(causes_.back(), TransitionCause::kHealthNotServing);
}

TEST_F(RecoveryProbeTest, WithoutAHealthServiceTheOpenPeriodEndsByItself) {
  TripByCalls();
  ASSERT_TRUE(probe_->StartIfDue());
  probe_->OnAnswer(RecoveryProbe::Answer::kUnknown);
  EXPECT_EQ(probe_->stats().unknown, 1);
  clock_.AdvanceTime(absl::Seconds(1));
  Admission a = breaker_->Allow();
  EXPECT_TRUE(a.admitted());
  EXPECT_TRUE(a.probe());
  EXPECT_EQ(causes_.back(), TransitionCause::kOpenPeriodEnded);
}

TEST_F(RecoveryProbeTest, AnAnswerWithoutAProbeIsIgnored) {
  probe_->OnAnswer(RecoveryProbe::Answer::kNotServing);
  EXPECT_EQ(breaker_->state(), BreakerState::kClosed);
  EXPECT_EQ(probe_->stats().not_serving, 0);
}

TEST(ThreeStateBreakerHealthTest, IgnoredWithoutHealthGated) {
  SimulatedClock clock;
  ThreeStateBreaker::Options o;
  auto breaker = *ThreeStateBreaker::Create(o, clock);
  breaker->OnHealth(ThreeStateBreaker::Health::kNotServing);
  EXPECT_EQ(breaker->state(), BreakerState::kClosed);
}

TEST(RecoveryProbeOptionsTest, ValidateNamesFieldAndValue) {
  RecoveryProbe::Options o;
  EXPECT_TRUE(RecoveryProbe::Validate(o).ok());
  o.interval = absl::ZeroDuration();
  EXPECT_EQ(RecoveryProbe::Validate(o).message(),
            "recovery_probe.interval: must be in [1ms, 1h], got 0");
  o.interval = absl::Seconds(1);
  o.timeout = absl::Hours(2);
  EXPECT_EQ(RecoveryProbe::Validate(o).message(),
            "recovery_probe.timeout: must be in [1ms, 1h], got 2h");
}

}  // namespace
}  // namespace resilience
