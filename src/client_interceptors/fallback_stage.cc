#include "src/client_interceptors/fallback_stage.h"

#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/impl/codegen/proto_utils.h"
#include "src/client_interceptors/client_resilience_impl.h"
#include "src/grpc_common/metadata_keys.h"

namespace resilience {
namespace {

// The value of the kFallbackKey trailer. Its address is the proof that the
// trailer was written here (as for RejectedLocally()).
constexpr char kFallbackValue[] = "1";

grpc::StatusCode ToGrpc(absl::StatusCode code) { return static_cast<grpc::StatusCode>(code); }

}  // namespace

const char* FallbackCauseName(FallbackCause cause) {
  switch (cause) {
    case FallbackCause::kBreaker:
      return "breaker";
    case FallbackCause::kBulkhead:
      return "bulkhead";
    case FallbackCause::kRetryBudget:
      return "retry_budget";
    case FallbackCause::kFailed:
      break;
  }
  return "failed";
}

void FallbackRegistry::Set(absl::string_view method, Fallback fallback, FallbackOptions options) {
  MutexLock lock(&mu_);
  if (fallback == nullptr) {
    entries_.erase(method);
  } else {
    entries_[method] = std::make_shared<const Entry>(Entry{std::move(fallback), std::move(options)});
  }
  size_.store(entries_.size(), std::memory_order_release);
}

std::shared_ptr<const FallbackRegistry::Entry> FallbackRegistry::Find(
    absl::string_view method) const {
  MutexLock lock(&mu_);
  auto it = entries_.find(method);
  return it == entries_.end() ? nullptr : it->second;
}

absl::Status SetFallback(ClientResilience& resilience, absl::string_view method, Fallback fallback,
                         FallbackOptions options) {
  // "/pkg.Service/Method": a leading slash, a service, a slash, a method.
  const size_t slash = method.rfind('/');
  if (method.size() < 4 || method[0] != '/' || slash == 0 || slash + 1 == method.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("SetFallback: method \"", method, "\" on channel \"", resilience.name(),
                     "\" is not of the form \"/pkg.Service/Method\""));
  }
  resilience.impl()->fallbacks().Set(method, std::move(fallback), std::move(options));
  return absl::OkStatus();
}

bool FellBack(const grpc::ClientContext& context) {
  const auto& trailers = context.GetServerTrailingMetadata();
  const auto [begin, end] =
      trailers.equal_range(grpc::string_ref(kFallbackKey, sizeof(kFallbackKey) - 1));
  for (auto it = begin; it != end; ++it) {
    if (it->second.data() == kFallbackValue) return true;
  }
  return false;
}

void FallbackStage::MarkFellBack(std::multimap<grpc::string_ref, grpc::string_ref>* trailers) {
  trailers->emplace(grpc::string_ref(kFallbackKey, sizeof(kFallbackKey) - 1),
                    grpc::string_ref(kFallbackValue, sizeof(kFallbackValue) - 1));
}

bool FallbackStage::Available() const {
  if (state_.policy != nullptr && state_.policy->fallback.has_value()) return true;
  return registry_ != nullptr && !registry_->empty() && registry_->Find(state_.method) != nullptr;
}

bool FallbackStage::Covers(const std::vector<grpc::StatusCode>& codes,
                           grpc::StatusCode code) const {
  if (!codes.empty()) {
    for (grpc::StatusCode c : codes) {
      if (c == code) return true;
    }
    return false;
  }
  // The method's retryable codes.
  if (state_.policy == nullptr) return false;
  if (state_.policy->retry.has_value()) {
    for (absl::StatusCode c : state_.policy->retry->retryable_status_codes) {
      if (ToGrpc(c) == code) return true;
    }
  }
  if (state_.policy->hedging.has_value()) {
    for (absl::StatusCode c : state_.policy->hedging->non_fatal_status_codes) {
      if (ToGrpc(c) == code) return true;
    }
  }
  return false;
}

bool FallbackStage::Run(std::optional<FallbackCause> refused, const grpc::ByteBuffer& request,
                        const grpc::Status& original, bool cancelled_by_caller) {
  if (original.ok() || cancelled_by_caller) return false;
  std::shared_ptr<const FallbackRegistry::Entry> entry =
      registry_ != nullptr && !registry_->empty() ? registry_->Find(state_.method) : nullptr;
  const StaticFallback* file =
      entry == nullptr && state_.policy != nullptr && state_.policy->fallback.has_value()
          ? &*state_.policy->fallback
          : nullptr;
  if (entry == nullptr && file == nullptr) return false;
  const bool local_rejections =
      entry != nullptr ? entry->options.local_rejections : file->local_rejections;
  if (refused.has_value() && local_rejections) {
    cause_ = *refused;
  } else {
    std::vector<grpc::StatusCode> codes;
    if (entry != nullptr) {
      codes = entry->options.codes;
    } else {
      for (absl::StatusCode c : file->codes) codes.push_back(ToGrpc(c));
    }
    if (!Covers(codes, original.error_code())) return false;
    cause_ = refused.value_or(FallbackCause::kFailed);
  }
  response_.Clear();
  if (entry != nullptr) {
    status_ = entry->fallback(request, original, &response_);
    // The fallback gave the failure back: the call stays as it was.
    if (!status_.ok() && status_.error_code() == original.error_code() &&
        status_.error_message() == original.error_message()) {
      return false;
    }
  } else if (file->code == absl::StatusCode::kOk) {
    status_ = grpc::Status::OK;
    grpc::Slice slice(file->response);
    response_ = grpc::ByteBuffer(&slice, 1);
  } else {
    status_ = grpc::Status(ToGrpc(file->code), file->message);
  }
  fell_back_ = true;
  return true;
}

bool FallbackStage::ParseInto(void* message) {
  grpc::ByteBuffer copy = response_;  // Deserialize() consumes it
  grpc::Status parsed = grpc::SerializationTraits<grpc::protobuf::MessageLite>::Deserialize(
      &copy, static_cast<grpc::protobuf::MessageLite*>(message));
  if (parsed.ok()) return true;
  status_ = grpc::Status(grpc::StatusCode::INTERNAL,
                         absl::StrCat(state_.method, ": the fallback's response does not parse as "
                                      "the method's response message: ",
                                      parsed.error_message()));
  return false;
}

void AppendFallbackSamples(PrometheusText::Family& family, const ClientMethodState& state,
                           const FallbackRegistry& registry, absl::Span<const MetricLabel> base) {
  const int64_t by_cause[] = {state.fallbacks_breaker.load(std::memory_order_relaxed),
                              state.fallbacks_bulkhead.load(std::memory_order_relaxed),
                              state.fallbacks_retry_budget.load(std::memory_order_relaxed),
                              state.fallbacks_failed.load(std::memory_order_relaxed)};
  if (by_cause[0] + by_cause[1] + by_cause[2] + by_cause[3] == 0 &&
      !FallbackStage(&registry, state).Available()) {
    return;
  }
  std::vector<MetricLabel> labels(base.begin(), base.end());
  labels.push_back({"cause", ""});
  for (int cause = 0; cause < 4; ++cause) {
    labels.back().value = FallbackCauseName(static_cast<FallbackCause>(cause));
    family.Sample(labels, by_cause[cause]);
  }
}

}  // namespace resilience
