// File: src/engine/method_registry.h
//
// The methods of a client or a server and the generation of policies they
// were resolved under: the part of ClientResilience::Update() and
// ServerResilience::Update() that does not depend on the side.

#ifndef GRPC_RESILIENCE_SRC_ENGINE_METHOD_REGISTRY_H_
#define GRPC_RESILIENCE_SRC_ENGINE_METHOD_REGISTRY_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "src/core/method_cache.h"
#include "src/core/mutex.h"
#include "src/policy/policy_diff.h"
#include "src/policy/policy_set_access.h"

namespace resilience {

// MethodRegistry
//
// Each method's `State`, resolved on its first call under the `Generation`
// in force (a struct holding at least `PolicySet policies` and `int64_t
// number`, and whatever a side makes once per set of policies), and kept in
// a MethodCache (lock-free lookups). A `State` holds the `PolicySet
// policies` it was made from.
//
// Update() puts the next generation in force, then gives every method
// resolved so far its state under it: the same object when the side's
// "what is kept" hook says so, else a new one from the resolver, which gets
// the old state to continue (counters, and the parts whose settings did not
// change: breakers, limiters, meters...). A call keeps the state it found
// until it ends.
//
// Thread-safe; Update()s must not run concurrently (the side serializes
// them).
template <typename State, typename Generation>
class MethodRegistry {
 public:
  using Resolution = typename MethodCache<State>::Resolution;
  // The state of `method` under `generation`; `previous` (may be null): the
  // method's state so far.
  using Resolver = std::function<Resolution(const char* method, const Generation& generation,
                                            const State* previous)>;

  // `first`: the generation in force until the first Update().
  MethodRegistry(std::shared_ptr<const Generation> first, Resolver resolve)
      : resolve_(std::move(resolve)), generation_(std::move(first)) {}

  // The generation in force.
  std::shared_ptr<const Generation> Current() const ABSL_LOCKS_EXCLUDED(generation_mu_) {
    MutexLock lock(&generation_mu_);
    return generation_;
  }

  // The state of `method`, a name gRPC passes (MethodCache::Find()), or
  // any other (FindByName()); resolved under the current generation the
  // first time. Null: nothing to do for the method.
  std::shared_ptr<State> Find(const char* method) {
    return methods_.Find(method, [this](const char* name) { return Resolve(name); });
  }
  std::shared_ptr<State> FindByName(absl::string_view method) {
    return methods_.FindByName(method, [this](const char* name) { return Resolve(name); });
  }
  // The state of `method` if it was made, else null.
  std::shared_ptr<State> Get(absl::string_view method) { return methods_.Get(method); }
  // Every state there is now, in no particular order.
  std::vector<std::shared_ptr<State>> States() { return methods_.States(); }

  // What Update() did: the generations before and after, and what changed
  // for the methods resolved so far and those either set names.
  struct Swap {
    std::shared_ptr<const Generation> before;
    std::shared_ptr<const Generation> after;
    PolicyDiff diff;
  };

  // Update()
  //
  // Puts `next` in force (its number: the current one's plus one): a method
  // resolved for the first time from now on gets it. Then each method
  // resolved before keeps its state when it was made under `next` already,
  // or when `keep(name, state, *next)` says so (the side's hook: the same
  // policy, nothing of the side's generation changed; it may also switch
  // parts of the state in place); else it gets a new one, made from the old.
  // `policy_of` and `form`: the side's part of a policy, for the diff.
  template <typename Keep>
  Swap Update(std::shared_ptr<Generation> next, Keep&& keep, SidePolicy policy_of, SideForm form) {
    Swap swap;
    swap.before = Current();
    next->number = swap.before->number + 1;
    {
      MutexLock lock(&generation_mu_);
      generation_ = next;
    }
    swap.after = next;
    const PolicyTable& after = PolicySetAccess::Table(next->policies);
    std::set<std::string> names;
    methods_.Replace([&](const std::string& name, std::shared_ptr<State> current) {
      names.insert(name);
      if (current == nullptr) return resolve_(name.c_str(), *next, nullptr).state;
      // Resolved since the swap above: already the new policies'.
      if (&PolicySetAccess::Table(current->policies) == &after) return current;
      if (keep(name, static_cast<const State&>(*current), static_cast<const Generation&>(*next))) {
        return current;
      }
      return resolve_(name.c_str(), *next, current.get()).state;
    });
    swap.diff = PolicyDiff::Of(PolicySetAccess::Table(swap.before->policies), after,
                               std::move(names), policy_of, form);
    return swap;
  }

  // `update` (a PolicyUpdate) with the generation and the diff of `swap`.
  template <typename Update>
  static Update UpdateOf(Swap swap) {
    Update update;
    update.generation = swap.after->number;
    update.changed = std::move(swap.diff.changed);
    update.added = std::move(swap.diff.added);
    update.removed = std::move(swap.diff.removed);
    update.unchanged = swap.diff.unchanged;
    return update;
  }

 private:
  Resolution Resolve(const char* method) { return resolve_(method, *Current(), nullptr); }

  const Resolver resolve_;
  mutable Mutex generation_mu_;
  std::shared_ptr<const Generation> generation_ ABSL_GUARDED_BY(generation_mu_);
  // After generation_: destroyed first (the states point into it).
  MethodCache<State> methods_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_ENGINE_METHOD_REGISTRY_H_
