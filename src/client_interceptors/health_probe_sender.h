// File: src/client_interceptors/health_probe_sender.h
//
// The gRPC half of breaker.recoveryProbe (src/breaker/recovery_probe.h makes
// every decision): sends one grpc.health.v1.Health/Check and turns its
// result into a RecoveryProbe::Answer. Probes for a method's breaker go to
// the channel's target on a channel of their own (the same target,
// credentials and arguments, none of our interceptors, so a probe is never
// a call of the method); probes for an endpoint's breaker go to that
// endpoint's address on a channel to it alone: gRPC 1.51's public API
// cannot pin a call of the shared channel to one subchannel.

#ifndef GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_HEALTH_PROBE_SENDER_H_
#define GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_HEALTH_PROBE_SENDER_H_

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "grpcpp/channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/channel_arguments.h"
#include "grpcpp/support/status.h"
#include "src/breaker/recovery_probe.h"
#include "src/core/clock.h"
#include "src/core/mutex.h"

namespace resilience {

// HealthProbeSender
//
// One per ClientResilience made by CreateResilientChannel() (which knows the
// target and credentials). The destructor cancels the probes in flight and
// waits for their callbacks. Thread-safe.
class HealthProbeSender {
 public:
  using Done = std::function<void(RecoveryProbe::Answer)>;
  // The Check's own status too (NOT_FOUND and UNIMPLEMENTED are both
  // kUnknown, which HealthNameCheck tells apart).
  using StatusDone = std::function<void(const grpc::Status&, RecoveryProbe::Answer)>;

  // Endpoint channels kept at most; past it, the oldest is dropped.
  static constexpr size_t kMaxEndpointChannels = 64;

  // `after_answer` runs after each `done` (e.g. to deliver breaker events).
  HealthProbeSender(std::string target, std::shared_ptr<grpc::ChannelCredentials> credentials,
                    grpc::ChannelArguments args, Clock& clock, std::function<void()> after_answer);
  ~HealthProbeSender();
  HealthProbeSender(const HealthProbeSender&) = delete;
  HealthProbeSender& operator=(const HealthProbeSender&) = delete;

  // Check()
  //
  // Asks about `service` ("" the server as a whole) at `endpoint` (a
  // resolved address, "ipv4:10.0.0.1:443"; empty: the channel's target),
  // with `timeout`; `done` gets the answer on a gRPC thread.
  void Check(const std::string& endpoint, const std::string& service, absl::Duration timeout,
             Done done) ABSL_LOCKS_EXCLUDED(mu_);
  void Check(const std::string& endpoint, const std::string& service, absl::Duration timeout,
             StatusDone done) ABSL_LOCKS_EXCLUDED(mu_);

  // The HealthCheckRequest for `service`, serialized; the answer a Check's
  // status and response mean: OK with SERVING -> kServing, OK otherwise
  // (UNKNOWN, NOT_SERVING, SERVICE_UNKNOWN) -> kNotServing, UNIMPLEMENTED
  // or NOT_FOUND (no health service, or not for this name) -> kUnknown,
  // any other status (UNAVAILABLE, DEADLINE_EXCEEDED, ...) -> kUnreachable.
  static grpc::ByteBuffer Request(const std::string& service);
  static RecoveryProbe::Answer AnswerOf(const grpc::Status& status, const grpc::ByteBuffer& response);

  inline static constexpr char kMethod[] = "/grpc.health.v1.Health/Check";

 private:
  struct Probe;
  std::shared_ptr<grpc::Channel> ChannelFor(const std::string& endpoint)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Finished(Probe* probe, const grpc::Status& status) ABSL_LOCKS_EXCLUDED(mu_);

  const std::string target_;
  const std::shared_ptr<grpc::ChannelCredentials> credentials_;
  const grpc::ChannelArguments args_;
  Clock& clock_;
  const std::function<void()> after_answer_;

  Mutex mu_;
  CondVar idle_;
  std::shared_ptr<grpc::Channel> target_channel_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::shared_ptr<grpc::Channel>> endpoint_channels_ ABSL_GUARDED_BY(mu_);
  std::map<Probe*, std::unique_ptr<Probe>> in_flight_ ABSL_GUARDED_BY(mu_);
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_HEALTH_PROBE_SENDER_H_
