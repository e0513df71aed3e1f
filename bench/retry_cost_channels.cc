#include "bench/retry_cost_channels.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"

namespace retry_cost {

// The retry both retries do. gRPC 1.51's retry filter multiplies each
// backoff by a uniform draw in [0.8, 1.2] (RETRY_BACKOFF_JITTER 0.2, not
// the full jitter gRFC A6 describes): our "jitter": 0.2, added below.
constexpr char kBackoff[] = R"("maxAttempts": 3, "initialBackoff": "0.02s", "maxBackoff": "0.2s", )"
                            R"("backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"])";
// The same with a per-attempt timeout (0.2 s x the scale), whose ends are
// retried too (without DEADLINE_EXCEEDED the loader warns, and strict mode
// refuses the policy).
constexpr char kBackoffWithTimeout[] =
    R"("maxAttempts": 3, "initialBackoff": "0.02s", "maxBackoff": "0.2s", )"
    R"("backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE", "DEADLINE_EXCEEDED"], )"
    R"("perAttemptTimeout": )";
static_assert(kMaxAttempts == 3, "kBackoff and kBackoffWithTimeout say maxAttempts 3");

namespace {
int timeout_scale = 1;
}  // namespace

void SetTimeoutScale(int scale) { timeout_scale = scale; }

std::chrono::system_clock::time_point CallDeadlineFromNow() {
  return std::chrono::system_clock::now() + timeout_scale * kCallDeadline;
}

std::string BuiltInRetryServiceConfig() {
  return absl::StrCat(R"({"methodConfig": [{"name": [)", kGetName, R"(], "retryPolicy": {)",
                      kBackoff, "}}]}");
}

std::string ChainPolicyJson(const ChainSpec& chain) {
  std::vector<std::string> fields;
  if (chain.timeout) fields.push_back(absl::StrCat(R"("timeout": ")", 2 * timeout_scale, "s\""));
  if (chain.retry) {
    fields.push_back(absl::StrCat(
        R"("retryPolicy": {)",
        chain.per_attempt_timeout
            ? absl::StrCat(kBackoffWithTimeout, "\"", 0.2 * timeout_scale, "s\"")
            : kBackoff,
        R"(, "jitter": 0.2})"));
  }
  if (!chain.breaker.empty()) fields.push_back(absl::StrCat(R"("breaker": )", chain.breaker));
  if (!chain.bulkhead.empty()) fields.push_back(absl::StrCat(R"("bulkhead": )", chain.bulkhead));
  std::string json = absl::StrCat(R"({"methodConfig": [{"name": [)", kGetName, "], ",
                                  absl::StrJoin(fields, ", "), "}]");
  // gRPC's built-in retry has no retry budget unless the service config sets
  // retryThrottling; ours defaults to 10 tokens, which a steady 20% failure
  // rate spends. One that never runs dry keeps the comparison like for like.
  if (chain.retry)
    absl::StrAppend(&json, R"(, "retryThrottling": {"maxTokens": 1000, "tokenRatio": 1})");
  // The library's endpoint picker: each attempt on the endpoint it picks.
  if (chain.routed) {
    absl::StrAppend(&json,
                    R"(, "loadBalancingConfig": [{"resilience_p2c": {}}, {"round_robin": {}}])");
  }
  return json + "}";
}

absl::StatusOr<Client> MakeClient(const ChannelSpec& spec, const std::string& target,
                                  bool round_robin) {
  grpc::ChannelArguments args;
  if (round_robin) args.SetLoadBalancingPolicyName("round_robin");
  // A connection of its own per configuration, as an application's channel
  // would have.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  Client client;
  client.name = spec.name;
  switch (spec.kind) {
    case ChannelSpec::Kind::kBare:
      args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
      [[fallthrough]];
    case ChannelSpec::Kind::kBareRetryFilter:
      client.channel = grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
      break;
    case ChannelSpec::Kind::kBuiltinRetry:
      args.SetServiceConfigJSON(BuiltInRetryServiceConfig());
      client.channel = grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
      break;
    case ChannelSpec::Kind::kHijackFloor: {
      // gRPC's retry filter stays on (for transparent retries), as on the
      // channels CreateResilientChannel() makes: the floor of our chain.
      std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>> hijack;
      hijack.push_back(std::make_unique<resilience::bench::HijackOnceFactory>(spec.floor));
      client.channel = grpc::experimental::CreateCustomChannelWithInterceptors(
          target, grpc::InsecureChannelCredentials(), args, std::move(hijack));
      break;
    }
    case ChannelSpec::Kind::kPassthroughFloor: {
      // As kHijackFloor: gRPC's retry filter stays on, as on our channels.
      std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>> pass;
      pass.push_back(std::make_unique<resilience::bench::PassthroughInterceptor::Factory>());
      client.channel = grpc::experimental::CreateCustomChannelWithInterceptors(
          target, grpc::InsecureChannelCredentials(), args, std::move(pass));
      break;
    }
    case ChannelSpec::Kind::kOurChain: {
      resilience::PolicySet::LoadOptions load;
      load.strict = true;  // a field we got wrong should not be silently ignored
      absl::StatusOr<resilience::PolicySet> policies =
          resilience::PolicySet::FromJsonString(ChainPolicyJson(spec.chain), load);
      if (!policies.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(spec.name, ": ", policies.status().message()));
      }
      resilience::ResilientChannelOptions options;
      options.args = args;
      resilience::ResilientChannel channel = resilience::CreateResilientChannel(
          target, grpc::InsecureChannelCredentials(), *policies, std::move(options));
      for (const std::string& w : channel.warnings) {
        std::fprintf(stderr, "%s: warning: %s\n", spec.name.c_str(), w.c_str());
      }
      client.channel = std::move(channel.channel);
      client.resilience = std::move(channel.resilience);
      break;
    }
  }
  client.stub = cache::v1::CacheService::NewStub(client.channel);
  client.caller = spec.caller;
  return client;
}

absl::StatusOr<std::vector<Client>> MakeClients(const std::vector<ChannelSpec>& specs,
                                                const std::string& target) {
  std::vector<Client> clients;
  for (const ChannelSpec& spec : specs) {
    absl::StatusOr<Client> client = MakeClient(spec, target);
    if (!client.ok()) return client.status();
    clients.push_back(*std::move(client));
  }
  return clients;
}

ChannelSpec Bare() { return {"bare", ChannelSpec::Kind::kBare, {}, {}}; }
ChannelSpec BareRetryFilter() {
  return {"bare_retry_filter", ChannelSpec::Kind::kBareRetryFilter, {}, {}};
}
ChannelSpec BuiltinRetry() { return {"builtin_retry", ChannelSpec::Kind::kBuiltinRetry, {}, {}}; }

namespace {

ChannelSpec Floor(std::string name, bool reissue, int max_attempts, bool reuse_cq) {
  resilience::bench::HijackFloorOptions floor;
  floor.reissue = reissue;
  floor.max_attempts = max_attempts;
  floor.reuse_cq = reuse_cq;
  return {std::move(name), ChannelSpec::Kind::kHijackFloor, {}, floor};
}

}  // namespace

ChannelSpec HijackFloor() { return Floor("hijack_floor", true, 1, false); }
ChannelSpec HijackFloorReusedCq() { return Floor("hijack_floor_reused_cq", true, 1, true); }
ChannelSpec RetryFloor() { return Floor("retry_floor", true, kMaxAttempts, false); }
ChannelSpec RetryFloorReusedCq() {
  return Floor("retry_floor_reused_cq", true, kMaxAttempts, true);
}
ChannelSpec HijackRejectFloor() { return Floor("hijack_reject_floor", false, 1, false); }
ChannelSpec PassthroughFloor() {
  return {"passthrough_floor", ChannelSpec::Kind::kPassthroughFloor, {}, {}};
}

namespace {

using Completion = resilience::bench::HijackFloorOptions::Completion;

const char* CompletionSuffix(Completion completion) {
  return completion == Completion::kCallbackApi ? "_callback_api" : "_own_cq_thread";
}

}  // namespace

ChannelSpec HijackFloorNonBlocking(Completion completion) {
  ChannelSpec spec = Floor(absl::StrCat("hijack_floor", CompletionSuffix(completion)), true, 1,
                           false);
  spec.floor.completion = completion;
  return spec;
}
ChannelSpec RetryFloorNonBlocking(Completion completion) {
  ChannelSpec spec = Floor(absl::StrCat("retry_floor", CompletionSuffix(completion)), true,
                           kMaxAttempts, false);
  spec.floor.completion = completion;
  return spec;
}

ChannelSpec OurChain(std::string name, ChainSpec chain) {
  return {std::move(name), ChannelSpec::Kind::kOurChain, std::move(chain), {}};
}
ChainSpec BreakerOnly(std::string breaker) {
  ChainSpec chain;
  chain.breaker = std::move(breaker);
  return chain;
}
ChainSpec BreakerTimeout(std::string breaker) {
  ChainSpec chain = BreakerOnly(std::move(breaker));
  chain.timeout = true;
  return chain;
}
ChainSpec RetryOnly() {
  ChainSpec chain;
  chain.retry = true;
  return chain;
}
ChainSpec FullChain(std::string breaker) {
  ChainSpec chain = BreakerTimeout(std::move(breaker));
  chain.retry = true;
  chain.per_attempt_timeout = true;
  return chain;
}

ChainSpec FullChainRouted(std::string breaker) {
  ChainSpec chain = FullChain(std::move(breaker));
  chain.routed = true;
  return chain;
}

ChainSpec BulkheadOnly() {
  ChainSpec chain;
  chain.bulkhead = kNonBindingBulkhead;
  return chain;
}
ChainSpec FullChainBulkhead(std::string breaker) {
  ChainSpec chain = FullChain(std::move(breaker));
  chain.bulkhead = kNonBindingBulkhead;
  return chain;
}

std::vector<ChannelSpec> SuccessPathSpecs() {
  return {Bare(),
          BuiltinRetry(),
          HijackFloor(),
          HijackFloorReusedCq(),
          OurChain("breaker", BreakerOnly(kSreBreaker)),
          OurChain("breaker_timeout", BreakerTimeout(kSreBreaker)),
          OurChain("full_chain", FullChain(kSreBreaker)),
          OurChain("full_chain_routed", FullChainRouted(kSreBreaker)),
          BareRetryFilter(),
          PassthroughFloor(),
          OurChain("bulkhead", BulkheadOnly()),
          OurChain("full_chain_bulkhead", FullChainBulkhead(kSreBreaker))};
}

std::vector<ChannelSpec> FailureSpecs() {
  return {BuiltinRetry(), RetryFloor(), RetryFloorReusedCq(), OurChain("retry_only", RetryOnly()),
          OurChain("full_chain", FullChain(kSreBreaker))};
}

const char* CallerPrefix(CallerKind caller) {
  switch (caller) {
    case CallerKind::kSync:
      return "";
    case CallerKind::kAsync:
      return "async_";
    case CallerKind::kCallback:
      return "callback_";
  }
  return "";
}

namespace {

std::vector<ChannelSpec> ForCaller(CallerKind caller, std::vector<ChannelSpec> specs) {
  for (ChannelSpec& spec : specs) {
    spec.name = absl::StrCat(CallerPrefix(caller), spec.name);
    spec.caller = caller;
  }
  return specs;
}

std::vector<ChannelSpec> Concat(std::vector<std::vector<ChannelSpec>> lists) {
  std::vector<ChannelSpec> all;
  for (std::vector<ChannelSpec>& list : lists) {
    for (ChannelSpec& spec : list) all.push_back(std::move(spec));
  }
  return all;
}

}  // namespace

std::vector<ChannelSpec> NonBlockingSuccessSpecs(CallerKind caller) {
  return ForCaller(caller, {Bare(), HijackFloorNonBlocking(Completion::kCallbackApi),
                            HijackFloorNonBlocking(Completion::kOwnCqThread),
                            OurChain("full_chain", FullChain(kSreBreaker)),
                            BareRetryFilter(), PassthroughFloor(),
                            OurChain("bulkhead", BulkheadOnly()),
                            OurChain("full_chain_bulkhead", FullChainBulkhead(kSreBreaker))});
}

std::vector<ChannelSpec> NonBlockingFailureSpecs(CallerKind caller) {
  return ForCaller(caller, {BuiltinRetry(), RetryFloorNonBlocking(Completion::kCallbackApi),
                            RetryFloorNonBlocking(Completion::kOwnCqThread),
                            OurChain("full_chain", FullChain(kSreBreaker))});
}

std::vector<ChannelSpec> AllSuccessSpecs() {
  return Concat({SuccessPathSpecs(), NonBlockingSuccessSpecs(CallerKind::kAsync),
                 NonBlockingSuccessSpecs(CallerKind::kCallback)});
}

std::vector<ChannelSpec> AllFailureSpecs() {
  return Concat({FailureSpecs(), NonBlockingFailureSpecs(CallerKind::kAsync),
                 NonBlockingFailureSpecs(CallerKind::kCallback)});
}

const std::vector<std::string>& Keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k;
    for (int i = 0; i < kKeys; ++i) k.push_back(absl::StrCat("key-", i));
    return k;
  }();
  return keys;
}

absl::Status StoreKeys(const std::string& target) {
  auto stub = cache::v1::CacheService::NewStub(
      grpc::CreateChannel(target, grpc::InsecureChannelCredentials()));
  const std::string value(kValueBytes, 'v');
  for (const std::string& key : Keys()) {
    grpc::ClientContext context;
    context.set_deadline(CallDeadlineFromNow());
    cache::v1::StoreReq request;
    request.set_key(key);
    request.set_value(value);
    cache::v1::StoreResp response;
    if (grpc::Status s = stub->Store(&context, request, &response); !s.ok()) {
      return absl::UnavailableError(absl::StrCat("Store ", key, ": ", s.error_message()));
    }
  }
  return absl::OkStatus();
}

Outcome GetOnce(Stub& stub, const std::string& key) {
  grpc::ClientContext context;
  context.set_deadline(CallDeadlineFromNow());
  cache::v1::GetReq request;
  request.set_key(key);
  cache::v1::GetResp response;
  const grpc::Status status = stub.Get(&context, request, &response);
  if (status.ok()) return Outcome::kOk;
  return resilience::RejectedLocally(context) ? Outcome::kRejectedLocally : Outcome::kFailed;
}

Outcome GetOnce(Stub& stub, const std::string& key, CallerKind caller) {
  switch (caller) {
    case CallerKind::kSync:
      break;
    case CallerKind::kAsync:
      return AsyncGetOnce(stub, key);
    case CallerKind::kCallback:
      return CallbackGetOnce(stub, key);
  }
  return GetOnce(stub, key);
}

}  // namespace retry_cost
