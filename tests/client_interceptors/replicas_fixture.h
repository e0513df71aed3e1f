// The fixture of the tests that run one channel against three in-process
// replicas of TestService (ipv4:a,b,c): replicas_test.cc (gRPC's load
// balancing and health) and routed_replicas_test.cc (the library's
// endpoint picker). Real time (gRPC's own timers), bounded loops.

#ifndef GRPC_RESILIENCE_TESTS_CLIENT_INTERCEPTORS_REPLICAS_FIXTURE_H_
#define GRPC_RESILIENCE_TESTS_CLIENT_INTERCEPTORS_REPLICAS_FIXTURE_H_

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client_interceptors/test_service.grpc.pb.h"
#include "grpc_resilience/client.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "tests/server_interceptors/echo_services.h"
#include "tests/testing/guarded_server.h"

namespace resilience {
namespace testing {

using resilience::test::Req;
using resilience::test::Resp;
using resilience::test::TestService;

inline constexpr char kUnary[] = "/resilience.test.TestService/Unary";

inline PolicySet MustLoad(const std::string& json) {
  absl::StatusOr<PolicySet> set = PolicySet::FromJsonString(json);
  EXPECT_TRUE(set.ok()) << set.status();
  return set.ok() ? *std::move(set) : PolicySet();
}

// Three replicas of TestService; `bad_policy` is the middle one's.
class ReplicasTest : public ::testing::Test {
 protected:
  // `bad_grace`: the middle one's ServerResilienceOptions::not_serving_grace;
  // `good_policy`: the other two's.
  void Start(const std::string& bad_policy = "{}",
             absl::Duration bad_grace = ServerResilienceOptions().not_serving_grace,
             const std::string& good_policy = "{}") {
    for (int i = 0; i < 3; ++i) {
      ServerResilienceOptions options;
      if (i == 1) options.not_serving_grace = bad_grace;
      replicas_[i] = StartGuardedServer<TestService>(MustLoad(i == 1 ? bad_policy : good_policy),
                                                      &services_[i], std::move(options));
      ASSERT_NE(replicas_[i].server, nullptr);
      ASSERT_TRUE(replicas_[i].resilience->SetServing(replicas_[i].server->server(), true));
    }
  }

  std::string Target() const {
    std::vector<std::string> addresses;
    for (const GuardedServer& r : replicas_) {
      addresses.push_back(absl::StrCat("127.0.0.1:", r.server->port()));
    }
    return absl::StrCat("ipv4:", absl::StrJoin(addresses, ","));
  }

  void Connect(const std::string& client_policy) {
    ResilientChannel made = CreateResilientChannel(Target(), grpc::InsecureChannelCredentials(),
                                                   MustLoad(client_policy));
    EXPECT_TRUE(made.warnings.empty()) << absl::StrJoin(made.warnings, "; ");
    channel_ = made;
    stub_ = TestService::NewStub(made.channel);
  }

  grpc::Status Call() {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(2)));
    Req request;
    request.set_text("x");
    Resp response;
    return stub_->Unary(&context, request, &response);
  }

  // Calls until `n` in a row are OK and leave `seen()` unchanged (the bad
  // replica got none of them), for at most `limit`; whether that happened.
  template <typename Seen>
  bool CallUntilQuiet(Seen seen, int n, absl::Duration limit) {
    const absl::Time end = absl::Now() + limit;
    int quiet = 0;
    while (quiet < n && absl::Now() < end) {
      const int before = seen();
      const bool ok = Call().ok();
      quiet = ok && seen() == before ? quiet + 1 : 0;
    }
    return quiet >= n;
  }

  // Calls of `kUnary` that reached replica `i`: let through, or answered by
  // its fault injection.
  int64_t Reached(int i) const {
    const ServerMethodStats stats = replicas_[i].resilience->Stats(kUnary);
    return stats.admitted + stats.faults_aborted;
  }

  std::array<HandlerRuns, 3> runs_;
  std::array<SyncEchoService, 3> services_{SyncEchoService(&runs_[0]), SyncEchoService(&runs_[1]),
                                           SyncEchoService(&runs_[2])};
  std::array<GuardedServer, 3> replicas_;
  ResilientChannel channel_;
  std::unique_ptr<TestService::Stub> stub_;
};

inline constexpr char kFailing[] = R"({"methodConfig": [{"name": [{"service": "resilience.test.TestService"}],
    "faultInjection": {"abortCode": "UNAVAILABLE", "abortFraction": 1}}]})";

}  // namespace testing
}  // namespace resilience

#endif  // GRPC_RESILIENCE_TESTS_CLIENT_INTERCEPTORS_REPLICAS_FIXTURE_H_
