#include "src/policy/fallback_settings.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/type_resolver.h"
#include "google/protobuf/util/type_resolver_util.h"
#include "src/policy/json_text.h"
#include "src/policy/status_codes.h"

namespace resilience {
namespace {

using internal::Printable;

constexpr char kTypeUrlPrefix[] = "type.googleapis.com";

absl::StatusOr<absl::StatusCode> CodeAt(const std::string& path, const std::string& name) {
  absl::StatusOr<absl::StatusCode> code = ParseStatusCodeName(name);
  if (!code.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", ParseStatusCodeName(Printable(name, 64)).status().message()));
  }
  return code;
}

// The serialized response of `fallback.response()` for the methods `entry`
// names: nullopt when one is not linked (a warning says so).
absl::StatusOr<std::optional<std::string>> ReadResponse(const v1::MethodConfig& entry,
                                                        const std::string& path,
                                                        std::vector<std::string>& warnings) {
  const google::protobuf::DescriptorPool* pool = google::protobuf::DescriptorPool::generated_pool();
  const google::protobuf::Descriptor* type = nullptr;
  std::string type_method;
  for (const v1::MethodName& name : entry.name()) {
    if (name.service().empty() || name.method().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ".response: the entry names ",
          name.service().empty()
              ? std::string("the default ({})")
              : absl::StrCat("the whole service \"", Printable(name.service(), 64), "\""),
          "; a static response needs each name to name one method (its response type)"));
    }
    const std::string full = absl::StrCat(name.service(), ".", name.method());
    const google::protobuf::MethodDescriptor* method = pool->FindMethodByName(full);
    if (method == nullptr) {
      warnings.push_back(absl::StrCat(
          path, ": ignored: method /", Printable(name.service(), 64), "/",
          Printable(name.method(), 64),
          " is not linked into this process, so its response type is unknown here"));
      return std::optional<std::string>();
    }
    if (type != nullptr && method->output_type() != type) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ".response: the entry's methods answer different types (", type_method, ": ",
          type->full_name(), ", ", full, ": ", method->output_type()->full_name(),
          "); give each its own entry"));
    }
    type = method->output_type();
    type_method = full;
  }
  std::string json;
  if (!google::protobuf::util::MessageToJsonString(entry.fallback().response(), &json).ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ".response: not a JSON object"));
  }
  std::unique_ptr<google::protobuf::util::TypeResolver> resolver(
      google::protobuf::util::NewTypeResolverForDescriptorPool(kTypeUrlPrefix, pool));
  std::string binary;
  const auto converted = google::protobuf::util::JsonToBinaryString(
      resolver.get(), absl::StrCat(kTypeUrlPrefix, "/", type->full_name()), json, &binary);
  if (!converted.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ".response: ", Printable(json, 200),
                                                   " is not a ", type->full_name(), ": ",
                                                   converted.message().as_string()));
  }
  return std::optional<std::string>(std::move(binary));
}

}  // namespace

absl::StatusOr<std::optional<StaticFallback>> ReadFallback(const v1::MethodConfig& entry,
                                                           const std::string& path,
                                                           std::vector<std::string>& warnings) {
  const v1::FallbackPolicy& p = entry.fallback();
  StaticFallback fallback;
  if (p.has_response() == !p.status().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": needs exactly one of `response` (the response message as JSON) and `status`",
        p.has_response() ? ", got both" : ", got neither"));
  }
  if (p.has_response()) {
    absl::StatusOr<std::optional<std::string>> response = ReadResponse(entry, path, warnings);
    if (!response.ok()) return response.status();
    if (!response->has_value()) return std::optional<StaticFallback>();
    fallback.response = **std::move(response);
    if (!p.message().empty()) {
      warnings.push_back(absl::StrCat(path, ".message: ignored: it goes with `status`, and the "
                                            "fallback answers a response with OK"));
    }
  } else {
    absl::StatusOr<absl::StatusCode> code = CodeAt(path + ".status", p.status());
    if (!code.ok()) return code.status();
    if (*code == absl::StatusCode::kOk) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ".status: \"OK\" needs a message: give `response` instead"));
    }
    fallback.code = *code;
    fallback.message = p.message();
  }
  for (int i = 0; i < p.on_codes_size(); ++i) {
    absl::StatusOr<absl::StatusCode> code =
        CodeAt(absl::StrCat(path, ".onCodes[", i, "]"), p.on_codes(i));
    if (!code.ok()) return code.status();
    fallback.codes.push_back(*code);
  }
  fallback.local_rejections = !p.has_on_local_rejections() || p.on_local_rejections();
  const bool retryable_codes = entry.has_retry_policy() || entry.has_hedging_policy();
  if (fallback.codes.empty() && !retryable_codes && !entry.has_breaker() &&
      !entry.has_bulkhead()) {
    warnings.push_back(absl::StrCat(
        path, ": answers nothing: the entry has no retryable codes (onCodes is empty and it "
              "neither retries nor hedges) and no breaker or bulkhead to refuse a call"));
  } else if (fallback.codes.empty() && !retryable_codes && !fallback.local_rejections) {
    warnings.push_back(absl::StrCat(path, ": answers nothing: onLocalRejections is false and "
                                          "there are no codes (onCodes empty, no retryPolicy)"));
  }
  return std::optional<StaticFallback>(std::move(fallback));
}

}  // namespace resilience
