// File: src/policy/method_catalog.h
//
// The RPC methods linked into this process, as protobuf's generated code
// registered them: for each, its gRPC name ("/pkg.Service/Method") and its
// call type. Used to tell the streaming methods of a policy file from its
// unary ones (BuiltInRetryConfig) and to catch misspelt names in a policy
// file (UnlinkedNameWarnings).
//
// Example:
//   const resilience::MethodCatalog& linked = resilience::MethodCatalog::Linked();
//   if (const auto* m = linked.Find("/cache.v1.CacheService/Watch");
//       m != nullptr && m->streaming()) { ... }
//   for (const std::string& w : resilience::UnlinkedNameWarnings(*policies, linked)) {
//     std::cerr << "warning: " << w << "\n";
//   }

#ifndef GRPC_RESILIENCE_SRC_POLICY_METHOD_CATALOG_H_
#define GRPC_RESILIENCE_SRC_POLICY_METHOD_CATALOG_H_

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "src/policy/policy_table.h"

namespace google::protobuf {
class DescriptorPool;
class DescriptorDatabase;
}  // namespace google::protobuf

namespace resilience {

// MethodCatalog
//
// Immutable once built; const methods are thread-safe.
class MethodCatalog {
 public:
  struct Method {
    std::string service;  // "pkg.Service"
    std::string method;   // "Method"
    bool client_streaming = false;
    bool server_streaming = false;

    // gRPC's name of the method: "/pkg.Service/Method".
    std::string full_name() const { return "/" + service + "/" + method; }
    // Client-, server-streaming or bidi.
    bool streaming() const { return client_streaming || server_streaming; }
  };

  // Linked()
  //
  // Every method of every service in protobuf's generated pool: the .proto
  // files whose generated C++ is linked into the process. Built on the first
  // call (thread-safe), so call it from main() or later: code in a shared
  // object loaded afterwards (dlopen) is not seen.
  static const MethodCatalog& Linked();

  // FromGeneratedDatabase()
  //
  // The services of every file `database` lists, as built by `pool` (for
  // Linked(): protobuf's generated database and pool). Files that `pool`
  // cannot build are skipped.
  static MethodCatalog FromGeneratedDatabase(google::protobuf::DescriptorDatabase& database,
                                             const google::protobuf::DescriptorPool& pool);

  // An explicit catalog (tests). A method listed twice is kept once (the
  // first).
  explicit MethodCatalog(std::vector<Method> methods = {});

  // Find()
  //
  // The method named `full_name` ("/pkg.Service/Method"); null when not
  // linked.
  const Method* Find(absl::string_view full_name) const;

  // HasService()
  //
  // Whether a service named `service` ("pkg.Service") is linked.
  bool HasService(absl::string_view service) const;

  // NearestService()
  //
  // The linked service whose name is closest to `service` (a typo, a
  // different case, or a package left out or changed: "shop.Inventory" ->
  // "shop.v1.Inventory"); nullopt when none is reasonably close. Compares
  // case-insensitively, by edit distance of the full names and of the names
  // without their package.
  std::optional<std::string> NearestService(absl::string_view service) const;

  // NearestMethod()
  //
  // The method of the linked `service` whose name is closest to `method`
  // ("getItem" -> "GetItem"), as its full name "/pkg.Service/GetItem";
  // nullopt when `service` is not linked or no method is reasonably close.
  std::optional<std::string> NearestMethod(absl::string_view service,
                                           absl::string_view method) const;

  // Every method, sorted by full name.
  const std::vector<Method>& methods() const { return methods_; }

 private:
  std::vector<Method> methods_;
  // Full name -> index into methods_.
  absl::flat_hash_map<std::string, size_t> by_full_name_;
  // Service -> indexes into methods_ of its methods.
  absl::flat_hash_map<std::string, std::vector<size_t>> by_service_;
};

// UnlinkedNameWarnings()
//
// One warning per name of `policies` that can match no method of `catalog`,
// with the nearest linked name when one is close:
//   methodConfig[0].name[0]: service "shop.Inventory" is not linked into this
//   process (did you mean "shop.v1.Inventory"?)
//   methodConfig[1].name[0]: method "GetItm" is not in service
//   shop.v1.Inventory (did you mean "/shop.v1.Inventory/GetItem"?)
// The default name ({}) never warns. A process that calls methods it has no
// generated code for (generic stubs) gets warnings for them too.
std::vector<std::string> UnlinkedNameWarnings(const PolicyTable& policies,
                                              const MethodCatalog& catalog);

// HealthServiceNameWarning()
//
// A warning when `policies`' healthCheckConfig.serviceName is none of ""
// (the whole server), a service the file's names name and a service of
// `catalog`, with the nearest of those when one is close:
//   healthCheckConfig.serviceName: "cache.v1.CacheServce" is not a service
//   this file names or this process links, nor "" (the whole server) (did
//   you mean "cache.v1.CacheService"?): ...
// Any string is a valid health service name, but a server whose health
// service does not know it answers SERVICE_UNKNOWN, which gRPC 1.51 takes as
// NOT_SERVING: every call of the channel fails. Nothing without a
// healthCheckConfig.
std::optional<std::string> HealthServiceNameWarning(const PolicyTable& policies,
                                                    const MethodCatalog& catalog);

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_POLICY_METHOD_CATALOG_H_
