/// \file include/grpc_resilience/policy_update.h
///
/// What a live policy update did: ClientResilience::Update() and
/// ServerResilience::Update() (and their ReloadFile()) return one.
///
/// \code
///   absl::StatusOr<resilience::PolicyUpdate> done = channel.resilience->Update(*policies);
///   if (done.ok()) std::cerr << done->Summary() << "\n";  // "2 methods changed, 1 added"
/// \endcode
///
/// Implemented in src/grpc_common (library grpc_resilience::grpc_common).

#ifndef GRPC_RESILIENCE_POLICY_UPDATE_H_
#define GRPC_RESILIENCE_POLICY_UPDATE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "grpc_resilience/export.h"

namespace resilience {

/// PolicyUpdate
///
/// The methods an update touched, by full name ("/pkg.Service/Method"),
/// sorted: those called so far and those the old or the new policies name
/// exactly. A method is `changed` when its policy is not the same in both
/// (compared in a canonical form: its entry's settings, not the entry's
/// place in the file), `added` when only the new policies cover it, `removed`
/// when only the old ones did. What each keeps of its state:
/// docs/operations.md, "Reloading policies".
struct GRPC_RESILIENCE_EXPORT PolicyUpdate {
  /// The generation now in force: 1 for the policies given at construction,
  /// one more per update.
  int64_t generation = 0;
  std::vector<std::string> changed;  ///< methods whose policy changed
  std::vector<std::string> added;    ///< methods only the new policies cover
  std::vector<std::string> removed;  ///< methods only the old policies covered
  /// Methods with the same policy before and after: all their state kept.
  int64_t unchanged = 0;
  /// Settings the update could not apply, one line each (e.g. the channel's
  /// waitForReady and load balancing are set when it is created). The
  /// policy file's own warnings are in PolicySet::warnings().
  std::vector<std::string> warnings;

  /// "2 methods changed, 1 added", "1 method removed", "no method changed".
  std::string Summary() const;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_POLICY_UPDATE_H_
