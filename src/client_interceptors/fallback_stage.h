// File: src/client_interceptors/fallback_stage.h
//
// The fallback of one call: whether its end falls back, the answer the
// caller then gets, and the trailer FellBack() recognises.

#ifndef GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_FALLBACK_STAGE_H_
#define GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_FALLBACK_STAGE_H_

#include <map>
#include <optional>

#include "absl/types/span.h"
#include "grpc_resilience/fallback.h"
#include "grpc_resilience/prometheus_text.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/status.h"
#include "grpcpp/support/string_ref.h"
#include "src/client_interceptors/client_method_state.h"
#include "src/client_interceptors/fallback_registry.h"

namespace resilience {

// FallbackStage
//
// Used by both call objects after the call was decided: a RetriedUnaryCall
// in the re-entry after its Hijack(), a SingleAttemptCall in its rejection's
// hijack or at POST_RECV_STATUS. The method's fallback is the one registered
// from code (FallbackRegistry), else the policy's static `fallback`. It is
// looked up only for a call that did not succeed. A call falls back when
//   - the chain refused it (`refused`: breaker, bulkhead, spent retry
//     budget) and the fallback takes local rejections, or
//   - it failed with one of the fallback's codes (by default the method's
//     retryable codes: retryPolicy's, or hedgingPolicy's non-fatal ones),
// never when the caller cancelled it, and only when the fallback's answer
// differs from the original failure (a fallback that returns `original`
// leaves the call as it was). Not thread-safe: one call's, used by one
// thread at a time.
class FallbackStage {
 public:
  // `registry` may be null (no fallback from code).
  FallbackStage(const FallbackRegistry* registry, const ClientMethodState& state)
      : registry_(registry), state_(state) {}

  // Whether the method has a fallback now; cheap while none is registered
  // from code and the policy has none.
  bool Available() const;

  // Runs the method's fallback, if the call's end calls for one. True when
  // the caller gets its answer: status() and, when that is OK, the
  // response (ParseInto()). The cause is counted by the caller's
  // CallCounters (FellBack()).
  bool Run(std::optional<FallbackCause> refused, const grpc::ByteBuffer& request,
           const grpc::Status& original, bool cancelled_by_caller);

  bool fell_back() const { return fell_back_; }
  FallbackCause cause() const { return cause_; }
  const grpc::Status& status() const { return status_; }
  // Parses the answer into a generated stub's receive buffer (gRPC 1.51's
  // unary stubs receive into a protobuf::MessageLite; grpc_internals.h).
  // False, with status() then INTERNAL, when it does not parse.
  bool ParseInto(void* message);

  // Adds the kFallbackKey trailer FellBack() recognises.
  static void MarkFellBack(std::multimap<grpc::string_ref, grpc::string_ref>* trailers);

 private:
  // The codes a failure must have: the options', or the method's retryable
  // ones.
  bool Covers(const std::vector<grpc::StatusCode>& codes, grpc::StatusCode code) const;

  const FallbackRegistry* const registry_;
  const ClientMethodState& state_;
  bool fell_back_ = false;
  FallbackCause cause_ = FallbackCause::kFailed;
  grpc::Status status_;
  grpc::ByteBuffer response_;
};

// AppendFallbackSamples()
//
// grpc_resilience_client_fallbacks_total of `state`'s method, one sample per
// cause, labelled `base` (grpc_method, channel) + cause: for a method with a
// fallback now, or that fell back before.
void AppendFallbackSamples(PrometheusText::Family& family, const ClientMethodState& state,
                           const FallbackRegistry& registry, absl::Span<const MetricLabel> base);

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CLIENT_INTERCEPTORS_FALLBACK_STAGE_H_
