// File: src/policy/builtin_retry_config.h
//
// The gRPC service config (GRPC_ARG_SERVICE_CONFIG) that a channel built for
// a policy set carries, so that gRPC's own retry and waitForReady do what
// our interceptors cannot:
//
//  - Streaming calls (client-, server-streaming, bidi) are retried by gRPC's
//    built-in retry: the RetryInterceptor retries unary calls only. Each
//    linked streaming method whose policy has a retryPolicy with
//    maxAttempts > 1 gets an exact {service, method} entry with gRPC's
//    retryPolicy. gRPC retries a stream only until it commits it: when the
//    first response (headers or message) arrives, or the messages sent
//    exceed its replay buffer (GRPC_ARG_PER_RPC_RETRY_BUFFER_SIZE, 256 KiB).
//  - No unary method ever gets a retryPolicy, so no unary call is retried by
//    both layers: the config has no {service} or {} entry with one, and a
//    method is known to be streaming only from its generated code
//    (MethodCatalog). Names of methods that are not linked get only their
//    unary calls retried; the loader warns about such names once, as names
//    that match nothing linked (UnlinkedNameWarnings(), with a "did you
//    mean"), not here again.
//  - waitForReady of a policy goes to gRPC for every name of the policy, so
//    that it applies to every call and every attempt (the RetryInterceptor's
//    attempts go through the same channel under the same method name).
//
// gRPC picks one entry per call, the most specific, exactly as PolicyTable
// does (exact > service > default). So that it picks the same policy, an
// exact entry added for a stream carries the waitForReady its own policy
// has, and a name whose policy sets no waitForReady gets an empty entry when
// a less specific name that would otherwise match its methods sets one.
// gRPC 1.51 accepts every field written here, applies the default name {}
// and takes an entry with a name only as one that sets nothing
// (tests/client_interceptors/streaming_retry_test.cc checks channels with
// them).
//
// Example:
//   resilience::BuiltInRetryConfig config = resilience::BuiltInRetryConfig::Build(
//       *policies, resilience::MethodCatalog::Linked());
//   if (!config.service_config().empty()) {
//     args.SetServiceConfigJSON(config.service_config());
//   }
//   for (const std::string& w : config.warnings()) std::cerr << w << "\n";

#ifndef GRPC_RESILIENCE_SRC_POLICY_BUILTIN_RETRY_CONFIG_H_
#define GRPC_RESILIENCE_SRC_POLICY_BUILTIN_RETRY_CONFIG_H_

#include <string>
#include <vector>

#include "src/policy/method_catalog.h"
#include "src/policy/policy_table.h"

namespace resilience {

// BuiltInRetryConfig
//
// Immutable; built once per channel.
class BuiltInRetryConfig {
 public:
  // gRPC caps maxAttempts at 5; a policy's larger value is capped (with a
  // warning) for its streams, while its unary calls keep it.
  static constexpr int kMaxGrpcAttempts = 5;
  // The jitter gRPC C++ puts on its retry backoff (each backoff times a
  // uniform draw in [0.8, 1.2]), whatever the policy's.
  static constexpr double kGrpcJitter = 0.2;
  // The smallest tokenRatio gRPC takes (it keeps three decimals).
  static constexpr double kMinGrpcTokenRatio = 0.001;

  // Build()
  //
  // The config for `policies` on a channel of a process whose generated code
  // `catalog` lists (normally MethodCatalog::Linked()).
  //
  // retryThrottling: gRPC's retry of streams is throttled with the file's
  // retryThrottling (maxTokens, tokenRatio), or our defaults when the file
  // has none, written whenever a stream is retried. gRPC keeps one bucket
  // per target for all its methods and channels, where our unary retries
  // keep one per channel and method.
  static BuiltInRetryConfig Build(const PolicyTable& policies, const MethodCatalog& catalog);

  // The service config JSON; empty when gRPC needs none (no stream is retried
  // and no policy sets waitForReady).
  const std::string& service_config() const { return service_config_; }
  // The same without its braces ("\"methodConfig\": [...], ..."), for a
  // service config that has more (ChannelServiceConfig); empty likewise.
  const std::string& members() const { return members_; }

  // Full names of the streaming methods gRPC retries, sorted.
  const std::vector<std::string>& retried_streams() const { return retried_streams_; }

  // Settings gRPC's retry of streams does not apply as the policy says
  // (maxAttempts above 5, jitter other than 0.2 or fullJitter,
  // perAttemptTimeout); one line each, starting with the JSON path. The
  // loader adds them to PolicyTable::warnings().
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  std::string service_config_;
  std::string members_;
  std::vector<std::string> retried_streams_;
  std::vector<std::string> warnings_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_POLICY_BUILTIN_RETRY_CONFIG_H_
