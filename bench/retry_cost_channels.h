// retry_cost_bench's configurations: the channels it compares (a bare one,
// gRPC's built-in retry, the hijack floors, our chain with parts of a
// policy), and the Get every caller makes on them.

#ifndef GRPC_RESILIENCE_BENCH_RETRY_COST_CHANNELS_H_
#define GRPC_RESILIENCE_BENCH_RETRY_COST_CHANNELS_H_

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "bench/hijack_once_interceptor.h"
#include "bench/passthrough_interceptor.h"
#include "cache/v1/cache.grpc.pb.h"
#include "grpc_resilience/client.h"
#include "grpcpp/channel.h"

namespace retry_cost {

using Stub = cache::v1::CacheService::Stub;

inline constexpr char kGetMethod[] = "/cache.v1.CacheService/Get";
inline constexpr char kGetName[] = R"({"service": "cache.v1.CacheService", "method": "Get"})";
// Every Get's deadline: far beyond any policy timeout (2 s), so that the
// policy's timeout is the one armed.
inline constexpr auto kCallDeadline = std::chrono::seconds(5);

// Multiplies every deadline and timeout of the Gets (kCallDeadline, the
// policies' timeout and perAttemptTimeout; not the backoffs): under
// callgrind, 30-100x slower and more on a loaded machine, a stall must not
// end an attempt (a retry, or a failed call, would be counted as the
// chain's cost). The code path is the same: the same deadlines are armed.
// Set before any client is made.
void SetTimeoutScale(int scale);
std::chrono::system_clock::time_point CallDeadlineFromNow();
// Keys stored before the load; each caller cycles through them.
inline constexpr int kKeys = 100;
inline constexpr size_t kValueBytes = 100;

// Our chain on Get: which of retry / timeout / breaker the policy has.
struct ChainSpec {
  bool retry = false;
  bool per_attempt_timeout = false;  // retryPolicy.perAttemptTimeout 0.2s
  bool timeout = false;              // timeout 2s
  std::string breaker;               // the "breaker" object; "" for none
  std::string bulkhead;              // the "bulkhead" object; "" for none
  bool routed = false;  // loadBalancingConfig: resilience_p2c (the library picks)
};

// A bulkhead that never binds with one caller: what its bookkeeping costs.
inline constexpr char kNonBindingBulkhead[] =
    R"({"maxConcurrency": 1000, "maxQueue": 100, "maxWait": "1s"})";

// How the application calls Get: a sync stub (blocking), an async one
// (its own CompletionQueue per caller thread, StartCall + Finish + Next), or
// the callback API (stub->async()->Get, the caller waiting for the callback).
enum class CallerKind { kSync, kAsync, kCallback };

struct ChannelSpec {
  enum class Kind {
    kBare,
    kBareRetryFilter,
    kBuiltinRetry,
    kHijackFloor,
    kPassthroughFloor,
    kOurChain
  };
  std::string name;
  Kind kind;
  ChainSpec chain;                             // kOurChain only
  resilience::bench::HijackFloorOptions floor;  // kHijackFloor only
  CallerKind caller = CallerKind::kSync;
};

// An SRE breaker that does not drop at a 20% failure rate (it drops once
// requests exceed k x accepts).
inline constexpr char kSreBreaker[] = R"({"sre": {"k": 2}})";

// A breaker that, once tripped (5 failures in a row), stays open for the
// whole run.
inline constexpr char kLatchingBreaker[] =
    R"({"threeState": {"consecutiveFailures": 5, "openDuration": "3600s", )"
    R"("openDurationMultiplier": 1}})";

// How many attempts the retries make at most (our chain's, gRPC's, the
// retry floors').
inline constexpr int kMaxAttempts = 3;


// One configuration's channel and stub, created once and used for every
// round.
struct Client {
  std::string name;
  std::shared_ptr<grpc::Channel> channel;
  std::shared_ptr<resilience::ClientResilience> resilience;  // null: a plain channel
  std::unique_ptr<Stub> stub;
  CallerKind caller = CallerKind::kSync;
};

// `round_robin`: the channel balances over the target's addresses
// (GRPC_ARG_LB_POLICY_NAME; the bench's policies set no load balancing).
absl::StatusOr<Client> MakeClient(const ChannelSpec& spec, const std::string& target,
                                  bool round_robin = false);
absl::StatusOr<std::vector<Client>> MakeClients(const std::vector<ChannelSpec>& specs,
                                                const std::string& target);

ChannelSpec Bare();
// A channel as gRPC makes it by default: no interceptor, gRPC's retry filter
// on (GRPC_ARG_ENABLE_RETRIES left alone, no retry policy), as it is on the
// channels CreateResilientChannel() makes; bare switches it off.
ChannelSpec BareRetryFilter();
ChannelSpec BuiltinRetry();
// What any hijack-and-re-issue retry costs at least, on a channel set up as
// ours are (hijack_once_interceptor.h): re-issued once, on a new completion
// queue per attempt (hijack_floor) or on the caller thread's own
// (hijack_floor_reused_cq).
ChannelSpec HijackFloor();
ChannelSpec HijackFloorReusedCq();
// What any retry that re-issues a failed attempt at once costs at least: up
// to kMaxAttempts attempts, each attempt that ended UNAVAILABLE re-issued,
// no backoff, no decision; a new queue per attempt or one per caller thread.
ChannelSpec RetryFloor();
ChannelSpec RetryFloorReusedCq();
// What any interceptor that answers a call itself costs at least.
ChannelSpec HijackRejectFloor();
// What any client interceptor costs at least: the only one on the channel
// calls Proceed() at every hook (passthrough_interceptor.h); the channel is
// made as CreateResilientChannel() makes ours (gRPC's retry filter on).
ChannelSpec PassthroughFloor();
// The floors of a caller that must not be blocked (async, callback): the
// attempts complete on gRPC's callback threads (..._callback_api) or on a
// completion queue with a thread of its own (..._own_cq_thread), which then
// ends the caller's call (hijack_once_interceptor.h).
ChannelSpec HijackFloorNonBlocking(resilience::bench::HijackFloorOptions::Completion completion);
ChannelSpec RetryFloorNonBlocking(resilience::bench::HijackFloorOptions::Completion completion);
ChannelSpec OurChain(std::string name, ChainSpec chain);
ChainSpec BreakerOnly(std::string breaker);
ChainSpec BreakerTimeout(std::string breaker);
ChainSpec RetryOnly();
ChainSpec FullChain(std::string breaker);
ChainSpec FullChainRouted(std::string breaker);
// A bulkhead alone; a full chain with a bulkhead.
ChainSpec BulkheadOnly();
ChainSpec FullChainBulkhead(std::string breaker);

// The configurations of the success-path comparison, and of the failure
// comparison (its floors re-issue failed attempts).
std::vector<ChannelSpec> SuccessPathSpecs();
std::vector<ChannelSpec> FailureSpecs();
// The same comparisons for an async or a callback caller: each config named
// "async_..." or "callback_...", the floors non-blocking ones.
std::vector<ChannelSpec> NonBlockingSuccessSpecs(CallerKind caller);
std::vector<ChannelSpec> NonBlockingFailureSpecs(CallerKind caller);
// Every success-path (failure) config of any caller, for --only.
std::vector<ChannelSpec> AllSuccessSpecs();
std::vector<ChannelSpec> AllFailureSpecs();
// "async_" / "callback_" ("" for a sync caller).
const char* CallerPrefix(CallerKind caller);

// The keys the server stores before the load.
const std::vector<std::string>& Keys();
absl::Status StoreKeys(const std::string& target);

enum class Outcome { kOk, kRejectedLocally, kFailed };

// One Get as an application makes it, 5 s deadline: with a sync stub, or
// as `caller` says (retry_cost_callers.cc).
Outcome GetOnce(Stub& stub, const std::string& key);
Outcome GetOnce(Stub& stub, const std::string& key, CallerKind caller);
Outcome AsyncGetOnce(Stub& stub, const std::string& key);
Outcome CallbackGetOnce(Stub& stub, const std::string& key);

}  // namespace retry_cost

#endif  // GRPC_RESILIENCE_BENCH_RETRY_COST_CHANNELS_H_
