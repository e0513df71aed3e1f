// EndpointPicker on a SimulatedClock with fixed seeds: what a channel's
// calls rely on when the picker chooses their endpoints.

#include "src/routing/endpoint_picker.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "src/core/simulated_clock.h"

namespace resilience {
namespace {

using Endpoint = EndpointPicker::Endpoint;
using Result = EndpointPicker::Result;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class EndpointPickerTest : public ::testing::Test {
 protected:
  EndpointPickerTest() { Reset(EndpointPicker::Options()); }

  void Reset(EndpointPicker::Options options) {
    options.seed = 42;
    ASSERT_TRUE(EndpointPicker::Validate(options).ok());
    picker_ = std::make_unique<EndpointPicker>(options, clock_);
    picker_->SetEndpoints({"a", "b", "c"});
  }

  std::shared_ptr<Endpoint> Pick(std::vector<const Endpoint*> tried = {}) {
    return picker_->Pick([](const Endpoint&) { return true; }, tried, !tried.empty());
  }

  // One call at a time: picked, served in `latency[name]` (1 ms when not
  // named), ended as `result[name]` (success when not named). Returns the
  // picks per name.
  std::map<std::string, int> Serve(int calls, std::map<std::string, absl::Duration> latency,
                                   std::map<std::string, Result> result = {}) {
    std::map<std::string, int> picks;
    for (int i = 0; i < calls; ++i) {
      std::shared_ptr<Endpoint> endpoint = Pick();
      const std::string& name = endpoint->name();
      ++picks[name];
      const absl::Duration took =
          latency.count(name) ? latency[name] : absl::Milliseconds(1);
      picker_->Started(*endpoint);
      clock_.AdvanceTime(took);
      picker_->Ended(*endpoint, took, result.count(name) ? result[name] : Result::kSuccess,
                     std::nullopt);
    }
    return picks;
  }

  // Samples of `latency` for `name` (without a pick).
  void Feed(const std::string& name, absl::Duration latency, int n = 5,
            Result result = Result::kSuccess, std::optional<double> load = std::nullopt) {
    std::shared_ptr<Endpoint> endpoint = Find(name);
    for (int i = 0; i < n; ++i) {
      picker_->Started(*endpoint);
      picker_->Ended(*endpoint, latency, result, load);
    }
  }

  // A handle on `name` (picked with every other endpoint refused).
  std::shared_ptr<Endpoint> Find(const std::string& name) {
    return picker_->Pick([&](const Endpoint& e) { return e.name() == name; }, {}, false);
  }

  EndpointPicker::EndpointStats Stats(const std::string& name) {
    for (const EndpointPicker::EndpointStats& s : picker_->Snapshot()) {
      if (s.name == name) return s;
    }
    ADD_FAILURE() << "no endpoint " << name;
    return {};
  }

  SimulatedClock clock_;
  std::unique_ptr<EndpointPicker> picker_;
};

TEST_F(EndpointPickerTest, ValidateNamesTheFieldAndTheValue) {
  EXPECT_TRUE(EndpointPicker::Validate(EndpointPicker::Options()).ok());
  const auto message = [](auto change) {
    EndpointPicker::Options options;
    change(options);
    absl::Status status = EndpointPicker::Validate(options);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    return std::string(status.message());
  };
  EXPECT_EQ(message([](auto& o) { o.slow_start = absl::Minutes(11); }),
            "slow_start: must be in [0, 10m], got 11m");
  EXPECT_EQ(message([](auto& o) { o.slow_start = -absl::Seconds(1); }),
            "slow_start: must be in [0, 10m], got -1s");
  EXPECT_EQ(message([](auto& o) { o.latency_decay = absl::ZeroDuration(); }),
            "latency_decay: must be in [1ms, 1h], got 0");
  EXPECT_EQ(message([](auto& o) { o.error_decay = absl::Hours(2); }),
            "error_decay: must be in [1ms, 1h], got 2h");
  EXPECT_EQ(message([](auto& o) { o.failure_latency = -absl::Milliseconds(1); }),
            "failure_latency: must be in [0, 1h], got -1ms");
  EXPECT_EQ(message([](auto& o) { o.initial_latency = absl::ZeroDuration(); }),
            "initial_latency: must be in (0, 1h], got 0");
  EXPECT_THAT(message([](auto& o) { o.initial_latency = absl::InfiniteDuration(); }),
              HasSubstr("initial_latency: must be in (0, 1h], got inf"));
}

TEST_F(EndpointPickerTest, NullptrWhenNoEndpointIsUsable) {
  EXPECT_EQ(picker_->Pick([](const Endpoint&) { return false; }, {}, false), nullptr);
  picker_->SetEndpoints({});
  EXPECT_EQ(Pick(), nullptr);
}

TEST_F(EndpointPickerTest, NeverReturnsAnEndpointUsableRefuses) {
  Feed("b", absl::Microseconds(10));  // the cheapest by far
  for (int i = 0; i < 1000; ++i) {
    std::shared_ptr<Endpoint> endpoint =
        picker_->Pick([](const Endpoint& e) { return e.name() != "b"; }, {}, false);
    ASSERT_NE(endpoint, nullptr);
    EXPECT_NE(endpoint->name(), "b");
  }
  // Among tried ones too.
  std::shared_ptr<Endpoint> a = Find("a"), b = Find("b"), c = Find("c");
  for (int i = 0; i < 100; ++i) {
    std::shared_ptr<Endpoint> endpoint = picker_->Pick(
        [](const Endpoint& e) { return e.name() == "c"; }, {a.get(), b.get(), c.get()}, true);
    ASSERT_NE(endpoint, nullptr);
    EXPECT_EQ(endpoint->name(), "c");
  }
}

TEST_F(EndpointPickerTest, RetriesGoToAnEndpointNotTriedYet) {
  Feed("a", absl::Microseconds(100));  // a is the cheapest: a first attempt's choice
  Feed("b", absl::Milliseconds(5));
  Feed("c", absl::Milliseconds(5));
  std::shared_ptr<Endpoint> a = Find("a"), b = Find("b"), c = Find("c");
  std::map<std::string, int> second, third;
  for (int i = 0; i < 500; ++i) {
    ++second[Pick({a.get()})->name()];
    ++third[Pick({a.get(), b.get()})->name()];
  }
  EXPECT_EQ(second["a"], 0);
  EXPECT_GT(second["b"], 100);
  EXPECT_GT(second["c"], 100);
  EXPECT_EQ(third["c"], 500);
  // Every one tried: the pick is among them, by cost.
  EXPECT_NE(Pick({a.get(), b.get(), c.get()}), nullptr);
  EXPECT_EQ(Stats("a").retries_here + Stats("b").retries_here + Stats("c").retries_here, 1001);
}

TEST_F(EndpointPickerTest, AFastFailingEndpointLosesAgainstHealthyOnes) {
  Serve(300, {});  // estimates for all three
  // a and b have 3 calls in flight each (c none), and c answers every call
  // at once, failing: it must not look cheap.
  std::shared_ptr<Endpoint> a = Find("a"), b = Find("b");
  for (int i = 0; i < 3; ++i) {
    picker_->Started(*a);
    picker_->Started(*b);
  }
  std::map<std::string, int> picks =
      Serve(2000, {{"c", absl::Microseconds(100)}}, {{"c", Result::kFailure}});
  EXPECT_LE(picks["c"], 2) << "the first failure must already count";
  // With c failing for a while, even healthy endpoints with 50 calls in
  // flight each win every comparison.
  Feed("c", absl::Microseconds(100), 2000, Result::kFailure);
  EXPECT_GT(Stats("c").error_share, 0.95);
  for (int i = 0; i < 47; ++i) {
    picker_->Started(*a);
    picker_->Started(*b);
  }
  for (int i = 0; i < 1000; ++i) EXPECT_NE(Pick()->name(), "c");
}

TEST_F(EndpointPickerTest, TheErrorShareAloneKeepsAFailingEndpointOut) {
  EndpointPicker::Options options;
  options.failure_latency = absl::ZeroDuration();  // failures as fast as they are
  Reset(options);
  Feed("a", absl::Milliseconds(1));
  Feed("b", absl::Milliseconds(1));
  Feed("c", absl::Microseconds(100), 100, Result::kFailure);
  std::shared_ptr<Endpoint> a = Find("a"), b = Find("b");
  for (int i = 0; i < 20; ++i) {
    picker_->Started(*a);
    picker_->Started(*b);
  }
  for (int i = 0; i < 300; ++i) EXPECT_NE(Pick()->name(), "c");
}

TEST_F(EndpointPickerTest, ATenTimesSlowEndpointGetsFewCallsUntilTheOthersAreBusy) {
  const std::map<std::string, absl::Duration> latency = {{"c", absl::Milliseconds(10)}};
  std::map<std::string, int> picks = Serve(6000, latency);  // > 6 s, ageing included
  EXPECT_LT(picks["c"], 6000 * 5 / 100);
  EXPECT_GT(picks["c"], 0) << "ageing gives it a try now and then";
  // The fast ones with 20 calls in flight each: c gets calls, until it has
  // about as much waiting as they have.
  std::shared_ptr<Endpoint> a = Find("a"), b = Find("b");
  for (int i = 0; i < 20; ++i) {
    picker_->Started(*a);
    picker_->Started(*b);
  }
  std::map<std::string, int> busy;
  for (int i = 0; i < 30; ++i) {
    std::shared_ptr<Endpoint> endpoint = Pick();
    picker_->Started(*endpoint);
    ++busy[endpoint->name()];
  }
  EXPECT_GE(busy["c"], 2);
  EXPECT_LE(busy["c"], 10);
}

TEST_F(EndpointPickerTest, AJoiningEndpointRampsUpOverSlowStart) {
  EXPECT_EQ(Stats("a").weight, 1) << "a channel's first endpoints start with full weight";
  Serve(100, {});
  picker_->SetEndpoints({"a", "b", "c", "d"});
  EXPECT_DOUBLE_EQ(Stats("d").weight, 0.1);
  EXPECT_EQ(Stats("d").joined, clock_.Now());
  std::map<std::string, int> first = Serve(1000, {});  // the first second
  EXPECT_LT(first["d"], 10);
  clock_.AdvanceTime(absl::Seconds(4));
  EXPECT_NEAR(Stats("d").weight, 0.55, 0.01);
  clock_.AdvanceTime(absl::Seconds(5));
  EXPECT_EQ(Stats("d").weight, 1);
  std::map<std::string, int> later = Serve(2000, {});
  EXPECT_GT(later["d"], 2000 / 8);

  // No slow start configured: full weight at once.
  EndpointPicker::Options options;
  options.slow_start = absl::ZeroDuration();
  Reset(options);
  picker_->SetEndpoints({"a", "b", "c", "d"});
  EXPECT_EQ(Stats("d").weight, 1);
}

TEST_F(EndpointPickerTest, AgeingBringsBackAnEndpointThatWasSlowOnce) {
  const std::map<std::string, absl::Duration> before = {{"b", absl::Milliseconds(2)},
                                                        {"c", absl::Milliseconds(10)}};
  Serve(500, before);
  EXPECT_EQ(Stats("c").latency, absl::Milliseconds(10));
  // c is fast again, but not picked: nothing would say so without ageing.
  const std::map<std::string, absl::Duration> now = {{"b", absl::Milliseconds(2)}};
  std::map<std::string, int> first = Serve(1000, now);  // ~1.5 s
  EXPECT_EQ(first["c"], 0);
  std::map<std::string, int> then = Serve(4000, now);  // by 2 x latency_decay it is back
  EXPECT_GT(then["c"], 500);
  EXPECT_LT(Stats("c").latency, absl::Milliseconds(2));
}

TEST_F(EndpointPickerTest, RejoinStartsAfresh) {
  Feed("c", absl::Milliseconds(1), 100, Result::kFailure, 0.9);
  ASSERT_GT(Stats("c").error_share, 0.5);
  clock_.AdvanceTime(absl::Seconds(1));
  picker_->Rejoin("c");
  const EndpointPicker::EndpointStats c = Stats("c");
  EXPECT_EQ(c.error_share, 0);
  EXPECT_EQ(c.latency, absl::ZeroDuration());
  EXPECT_EQ(c.load, std::nullopt);
  EXPECT_DOUBLE_EQ(c.weight, 0.1);
  picker_->Rejoin("nobody");  // no effect
  EXPECT_THAT(picker_->Names(), ElementsAre("a", "b", "c"));
}

TEST_F(EndpointPickerTest, AReportedLoadShiftsCallsAway) {
  Feed("a", absl::Milliseconds(1));
  Feed("b", absl::Milliseconds(1));
  Feed("c", absl::Milliseconds(1), 5, Result::kSuccess, 0.9);
  EXPECT_EQ(Stats("c").load, 0.9);
  // a and b with 3 calls in flight each, c with none: c would win, but a
  // server at 90 % of its limit costs 10 times more.
  std::shared_ptr<Endpoint> a = Find("a"), b = Find("b");
  for (int i = 0; i < 3; ++i) {
    picker_->Started(*a);
    picker_->Started(*b);
  }
  for (int i = 0; i < 300; ++i) EXPECT_NE(Pick()->name(), "c");
  Feed("c", absl::Milliseconds(1), 1, Result::kSuccess, 0.5);  // half: twice the cost
  std::map<std::string, int> picks;
  for (int i = 0; i < 300; ++i) ++picks[Pick()->name()];
  EXPECT_GT(picks["c"], 150);
  Feed("c", absl::Milliseconds(1), 1, Result::kSuccess, 7.0);  // above 1: taken as 1
  EXPECT_EQ(Stats("c").load, 1.0);
}

TEST_F(EndpointPickerTest, SetEndpointsKeepsEstimatesAndHandlesStayValid) {
  Feed("c", absl::Milliseconds(10));
  std::shared_ptr<Endpoint> b = Find("b");
  picker_->Started(*b);
  picker_->SetEndpoints({"c", "a", "d", "a"});
  EXPECT_THAT(picker_->Names(), ElementsAre("c", "a", "d"));
  EXPECT_EQ(Stats("c").latency, absl::Milliseconds(10));
  EXPECT_EQ(Stats("c").weight, 1);
  EXPECT_DOUBLE_EQ(Stats("d").weight, 0.1);
  // b left: its call ends on the handle.
  picker_->Ended(*b, absl::Milliseconds(1), Result::kFailure, 0.5);
  EXPECT_EQ(b->name(), "b");
  for (int i = 0; i < 100; ++i) EXPECT_NE(Pick()->name(), "b");
  // b comes back: a new endpoint, slow start included.
  picker_->SetEndpoints({"a", "b", "c", "d"});
  EXPECT_EQ(Stats("b").latency, absl::ZeroDuration());
  EXPECT_EQ(Stats("b").in_flight, 0);
  EXPECT_DOUBLE_EQ(Stats("b").weight, 0.1);
}

TEST_F(EndpointPickerTest, FirstEndpointsJoinWithFullWeightEvenAfterAnEmptyResolution) {
  picker_ = std::make_unique<EndpointPicker>(EndpointPicker::Options(), clock_);
  picker_->SetEndpoints({});
  picker_->SetEndpoints({"a", "b"});
  EXPECT_EQ(Stats("a").weight, 1);
}

TEST_F(EndpointPickerTest, NeutralEndsOnlyLowerTheCallsInFlight) {
  std::shared_ptr<Endpoint> a = Find("a");
  picker_->Started(*a);
  EXPECT_EQ(Stats("a").in_flight, 1);
  picker_->Ended(*a, absl::Seconds(3), Result::kNeutral, 0.9);
  const EndpointPicker::EndpointStats stats = Stats("a");
  EXPECT_EQ(stats.in_flight, 0);
  EXPECT_EQ(stats.latency, absl::ZeroDuration());
  EXPECT_EQ(stats.error_share, 0);
  EXPECT_EQ(stats.load, std::nullopt);
}

TEST_F(EndpointPickerTest, ExcludeIsShownNotEnforced) {
  picker_->Exclude("b", EndpointPicker::Out::kForcedOpen);
  picker_->Exclude("nobody", EndpointPicker::Out::kConnecting);
  EXPECT_EQ(Stats("b").out, EndpointPicker::Out::kForcedOpen);
  EXPECT_EQ(Find("b")->name(), "b");
  picker_->Exclude("b", EndpointPicker::Out::kNo);
  EXPECT_EQ(Stats("b").out, EndpointPicker::Out::kNo);
}

TEST_F(EndpointPickerTest, TheSameSeedMakesTheSameChoices) {
  const auto run = [this](uint64_t seed) {
    EndpointPicker::Options options;
    options.seed = seed;
    EndpointPicker picker(options, clock_);
    picker.SetEndpoints({"a", "b", "c", "d", "e"});
    std::string names;
    for (int i = 0; i < 40; ++i) {
      names += picker.Pick([](const Endpoint&) { return true; }, {}, false)->name();
    }
    return names;
  };
  EXPECT_EQ(run(7), run(7));
  EXPECT_NE(run(7), run(8));
}

}  // namespace
}  // namespace resilience
