// libFuzzer target for the policy loader: any bytes go in; the loader must
// return a status (never crash, hang or leak), and whatever it accepts must
// answer lookups. Built by scripts/fuzz.sh in its own clang configuration.

#include <cstddef>
#include <cstdint>
#include <string>

#include "src/policy/policy_set.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string json(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<resilience::PolicySet> set = resilience::PolicySet::FromJsonString(json);
  if (set.ok()) {
    for (const char* method : {"/cache.v1.CacheService/Get", "/s.S/M", "", "/", "//"}) {
      (void)set->Find(method);
    }
  } else if (set.status().message().empty()) {
    __builtin_trap();  // every error must say what was wrong
  }
  return 0;
}
