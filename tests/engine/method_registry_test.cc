// MethodRegistry on its own, without gRPC: methods resolved under the
// generation in force, Update() numbering generations, keeping what the
// side's hook keeps, rebuilding the rest from the old state, and the diff.

#include "src/engine/method_registry.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "grpc_resilience/policy.h"

namespace resilience {
namespace {

using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

// A side's state: its policies, and how many states of the method came
// before it.
struct State {
  PolicySet policies;
  int rebuilt = 0;
};

struct Generation {
  PolicySet policies;
  int64_t number = 1;
};

using Registry = MethodRegistry<State, Generation>;

// A policy naming s.S/Get with a bulkhead of `slots` and s.S/Put with a
// fixed one.
PolicySet Load(int slots) {
  absl::StatusOr<PolicySet> set = PolicySet::FromJsonString(absl::StrCat(
      R"({"methodConfig": [
        {"name": [{"service": "s.S", "method": "Get"}], "bulkhead": {"maxConcurrency": )",
      slots, R"(}},
        {"name": [{"service": "s.S", "method": "Put"}], "bulkhead": {"maxConcurrency": 3}}]})"));
  EXPECT_TRUE(set.ok()) << set.status();
  return set.ok() ? *set : PolicySet();
}

const MethodPolicy* Whole(const PolicyTable& table, absl::string_view method) {
  return table.Find(method).policy;
}

std::shared_ptr<Generation> GenerationOf(PolicySet policies) {
  auto generation = std::make_shared<Generation>();
  generation->policies = std::move(policies);
  return generation;
}

class MethodRegistryTest : public ::testing::Test {
 protected:
  Registry registry_{GenerationOf(Load(5)),
                     [](const char*, const Generation& generation, const State* previous) {
                       auto state = std::make_shared<State>();
                       state->policies = generation.policies;
                       state->rebuilt = previous != nullptr ? previous->rebuilt + 1 : 0;
                       return Registry::Resolution{state, true};
                     }};
};

TEST_F(MethodRegistryTest, ResolvesOnceUnderTheGenerationInForce) {
  const std::shared_ptr<State> get = registry_.Find("/s.S/Get");
  ASSERT_NE(get, nullptr);
  EXPECT_EQ(registry_.Find("/s.S/Get"), get);
  EXPECT_EQ(registry_.FindByName("/s.S/Get"), get);
  EXPECT_EQ(registry_.Get("/s.S/Put"), nullptr);
  EXPECT_EQ(registry_.Current()->number, 1);
}

// Put's policy is the same and the hook keeps it; Get's changed and is
// rebuilt from the old state; the numbers and the diff follow.
TEST_F(MethodRegistryTest, UpdateKeepsWhatTheHookKeepsAndRebuildsTheRest) {
  const std::shared_ptr<State> get = registry_.Find("/s.S/Get");
  const std::shared_ptr<State> put = registry_.Find("/s.S/Put");
  std::vector<std::string> asked;
  const auto keep = [&](const std::string& name, const State&, const Generation& next) {
    asked.push_back(name);
    EXPECT_EQ(next.number, 2);
    return name == "/s.S/Put";
  };
  Registry::Swap swap =
      registry_.Update(GenerationOf(Load(7)), keep, Whole, &MethodPolicy::CanonicalForms::client);
  EXPECT_THAT(asked, UnorderedElementsAre("/s.S/Get", "/s.S/Put"));
  EXPECT_EQ(swap.before->number, 1);
  EXPECT_EQ(swap.after->number, 2);
  EXPECT_EQ(registry_.Current(), swap.after);
  EXPECT_EQ(registry_.Get("/s.S/Put"), put);
  const std::shared_ptr<State> new_get = registry_.Get("/s.S/Get");
  ASSERT_NE(new_get, get);
  EXPECT_EQ(new_get->rebuilt, 1);
  EXPECT_THAT(swap.diff.changed, ElementsAre("/s.S/Get"));
  EXPECT_EQ(swap.diff.unchanged, 1);

  struct Update {
    int64_t generation = 0;
    std::vector<std::string> changed, added, removed;
    int64_t unchanged = 0;
  };
  const Update update = Registry::UpdateOf<Update>(std::move(swap));
  EXPECT_EQ(update.generation, 2);
  EXPECT_THAT(update.changed, ElementsAre("/s.S/Get"));
  EXPECT_EQ(update.unchanged, 1);
}

// A state made under the new generation already (resolved between the
// swap and the replacement) is neither asked about nor rebuilt.
TEST_F(MethodRegistryTest, AStateOfTheNewGenerationIsNotAskedAbout) {
  const std::shared_ptr<State> get = registry_.Find("/s.S/Get");
  std::shared_ptr<Generation> next = GenerationOf(get->policies);
  int asked = 0;
  registry_.Update(
      next, [&](const std::string&, const State&, const Generation&) { return ++asked > 0; },
      Whole, &MethodPolicy::CanonicalForms::client);
  EXPECT_EQ(asked, 0);
  EXPECT_EQ(registry_.Get("/s.S/Get"), get);
}

}  // namespace
}  // namespace resilience
