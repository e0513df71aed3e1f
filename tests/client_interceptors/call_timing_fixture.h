// The fixture of the client chain's timing tests on simulated time
// (call_timing_test.cc, attempt_deadline_timing_test.cc).

#ifndef GRPC_RESILIENCE_TESTS_CLIENT_INTERCEPTORS_CALL_TIMING_FIXTURE_H_
#define GRPC_RESILIENCE_TESTS_CLIENT_INTERCEPTORS_CALL_TIMING_FIXTURE_H_

#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "src/client_interceptors/client_resilience_impl.h"
#include "src/client_interceptors/resilient_call_factory.h"
#include "src/core/simulated_clock.h"
#include "src/core/timeout_scheduler.h"
#include "tests/client_interceptors/all_call_types.h"
#include "tests/client_interceptors/attempt_deadline_recorder.h"
#include "tests/client_interceptors/scripted_service.h"
#include "tests/client_interceptors/simulated_call_timers.h"
#include "tests/testing/test_server.h"

namespace resilience::testing {

inline constexpr char kUnary[] = "/resilience.test.TestService/Unary";

// CallTimingTest
//
// A TestServer with a ScriptedService, and channels whose one
// ResilientCallFactory runs on a SimulatedClock: its backoff and hedging
// timers are SimulatedCallTimers (`timers_`), its single-attempt timeouts a
// TimeoutScheduler on the same clock (`scheduler_`), and an
// AttemptDeadlineRecorder after it records each attempt's deadline
// (`attempts_`).
class CallTimingTest : public ::testing::Test {
 protected:
  // The simulated clock starts at the real wall time, so that the deadlines
  // gRPC enforces (real) and the chain's (simulated) stay close.
  CallTimingTest() : clock_(absl::Now()), timers_(clock_), scheduler_(clock_) {}

  void SetUp() override {
    TestServer::Options options;
    options.services.push_back(&service_);
    server_ = TestServer::Start(std::move(options));
    ASSERT_NE(server_, nullptr);
  }

  void Connect(const std::string& policy_json) {
    absl::StatusOr<PolicySet> policies = PolicySet::FromJsonString(policy_json);
    ASSERT_TRUE(policies.ok()) << policies.status();
    ClientResilience::Options options;
    options.seed = 7;
    resilience_ = std::make_shared<ClientResilienceImpl>(*std::move(policies), options, clock_);
    std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>> chain;
    chain.push_back(
        std::make_unique<ResilientCallFactory>(resilience_, clock_, &scheduler_, &timers_));
    auto recorder = std::make_unique<AttemptDeadlineRecorder>();
    attempts_ = recorder.get();
    chain.push_back(std::move(recorder));
    channel_ = server_->NewChannel(std::move(chain));
    stub_ = resilience::test::TestService::NewStub(channel_);
  }

  // A unary call of `flavour` on another thread, with `deadline` (default:
  // 20 s of real time from now).
  std::thread Start(Flavour flavour, grpc::Status* status,
                    absl::Time deadline = absl::InfiniteFuture()) {
    if (deadline == absl::InfiniteFuture()) deadline = absl::Now() + absl::Seconds(20);
    return std::thread([this, flavour, status, deadline] {
      grpc::ClientContext context;
      context.set_deadline(absl::ToChronoTime(deadline));
      *status = UnaryCall(*stub_, flavour, &context);
    });
  }

  SimulatedClock clock_;
  SimulatedCallTimers timers_;
  TimeoutScheduler scheduler_;
  ScriptedService service_;
  std::unique_ptr<TestServer> server_;
  std::shared_ptr<ClientResilienceImpl> resilience_;
  std::shared_ptr<grpc::Channel> channel_;
  AttemptDeadlineRecorder* attempts_ = nullptr;  // owned by channel_
  std::unique_ptr<resilience::test::TestService::Stub> stub_;
};

}  // namespace resilience::testing

#endif  // GRPC_RESILIENCE_TESTS_CLIENT_INTERCEPTORS_CALL_TIMING_FIXTURE_H_
