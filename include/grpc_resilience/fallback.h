/// \file include/grpc_resilience/fallback.h
///
/// Fallbacks: what a unary call answers when the client chain refused it
/// (breaker, bulkhead, retry budget) or it failed after its retries.
///
/// \code
///   resilience::SetFallback<cache::v1::GetRequest, cache::v1::GetResponse>(
///       *made.resilience, "/cache.v1.CacheService/Get",
///       [&](const cache::v1::GetRequest& request, const grpc::Status& original,
///           cache::v1::GetResponse* response) -> grpc::Status {
///         std::optional<std::string> stale = copy.Find(request.key());
///         if (!stale.has_value()) return original;  // a miss stays the failure
///         response->set_value(*stale);
///         return grpc::Status::OK;
///       });
///   ...
///   grpc::Status status = stub->Get(&context, request, &response);
///   if (status.ok() && resilience::FellBack(context)) { /* a stale answer */ }
/// \endcode
///
/// How a fallback is chosen and counted: docs/fallbacks.md.

#ifndef GRPC_RESILIENCE_FALLBACK_H_
#define GRPC_RESILIENCE_FALLBACK_H_

#include <functional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "grpc_resilience/export.h"
#include "grpc_resilience/client_resilience.h"
#include "grpcpp/client_context.h"
#include "grpcpp/impl/codegen/proto_utils.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/status.h"

namespace resilience {

/// Why a call fell back: the label `cause` of
/// grpc_resilience_client_fallbacks_total.
enum class FallbackCause {
  kBreaker,      ///< the circuit breaker refused it (an attempt rejected locally)
  kBulkhead,     ///< the bulkhead refused it (its queue full, or no slot in time)
  kRetryBudget,  ///< it failed and its retry was refused: the retry budget or throttle is spent
  kFailed,       ///< it failed after its retries with one of the fallback's codes
};

/// The cause's name as metrics and docs spell it: "breaker", "bulkhead",
/// "retry_budget", "failed".
GRPC_RESILIENCE_EXPORT const char* FallbackCauseName(FallbackCause cause);

/// A fallback, type-erased: given the call's serialized `request` and the
/// status the call would have ended with (`original`), it writes the
/// serialized response into `*response` and returns the status the caller
/// gets (its response is used only when that status is OK). Returning
/// `original` leaves the call failed as it was (FellBack() is then false).
/// Runs once per call that falls back, on the thread that completes the
/// call (a sync caller's own thread; for async and callback stubs the thread
/// polling the caller's queue or one of gRPC's callback threads), without
/// any of the library's locks held; it must not block for long.
using Fallback = std::function<grpc::Status(const grpc::ByteBuffer& request,
                                            const grpc::Status& original,
                                            grpc::ByteBuffer* response)>;

/// Which ends a fallback answers.
struct GRPC_RESILIENCE_EXPORT FallbackOptions {
  /// Failures (after the call's retries) it answers, by code. Empty: the
  /// method's retryPolicy.retryableStatusCodes (none when it has no
  /// retryPolicy). A call the caller cancelled never falls back.
  std::vector<grpc::StatusCode> codes;
  /// Calls the chain refused (breaker, bulkhead, spent retry budget), whatever
  /// their code.
  bool local_rejections = true;
};

/// SetFallback()
///
/// Registers `fallback` for the unary calls of `method` ("/pkg.Service/Method")
/// on the channel of `resilience`, replacing the one it had (a policy file's
/// static `fallback` included); a null `fallback` removes it. Calls that start
/// afterwards use it. Only calls from protobuf generated stubs (sync, async and
/// callback) fall back. InvalidArgument when `method` is not of that form.
/// Thread-safe.
GRPC_RESILIENCE_EXPORT absl::Status SetFallback(ClientResilience& resilience,
                                                absl::string_view method, Fallback fallback,
                                                FallbackOptions options = {});

/// SetFallback<Request, Response>()
///
/// The same for a generated stub's types: `fallback(request, original,
/// &response)` returns the status the caller gets, with `response` when OK.
/// A request that does not parse as `Request` leaves the call failed.
template <typename Request, typename Response, typename Function>
absl::Status SetFallback(ClientResilience& resilience, absl::string_view method,
                         Function fallback, FallbackOptions options = {}) {
  return SetFallback(
      resilience, method,
      Fallback([fallback = std::move(fallback)](const grpc::ByteBuffer& serialized,
                                                const grpc::Status& original,
                                                grpc::ByteBuffer* out) -> grpc::Status {
        grpc::ByteBuffer copy = serialized;  // Deserialize() consumes its buffer
        Request request;
        if (!grpc::SerializationTraits<Request>::Deserialize(&copy, &request).ok()) return original;
        Response response;
        grpc::Status status = fallback(static_cast<const Request&>(request), original, &response);
        if (!status.ok()) return status;
        bool own_buffer = false;
        grpc::Status serialized_ok =
            grpc::SerializationTraits<Response>::Serialize(response, out, &own_buffer);
        return serialized_ok.ok() ? status : original;
      }),
      std::move(options));
}

/// FellBack()
///
/// True when the call of `context`, which has ended, was answered by its
/// method's fallback (SetFallback(), or the policy file's `fallback`)
/// instead of the failure it met. Decided from local state only, like
/// RejectedLocally(): a server's trailer cannot make a call look so.
GRPC_RESILIENCE_EXPORT bool FellBack(const grpc::ClientContext& context);

}  // namespace resilience

#endif  // GRPC_RESILIENCE_FALLBACK_H_
