// A RandomSource that returns a value the test sets.

#ifndef GRPC_RESILIENCE_TESTS_CORE_FAKE_RANDOM_H_
#define GRPC_RESILIENCE_TESTS_CORE_FAKE_RANDOM_H_

#include <atomic>

#include "src/core/random_source.h"

namespace resilience::testing {

class FakeRandom final : public RandomSource {
 public:
  explicit FakeRandom(double value) : value_(value) {}
  double NextUniform() override { return value_.load(); }
  void Set(double value) { value_.store(value); }

 private:
  std::atomic<double> value_;
};

}  // namespace resilience::testing

#endif  // GRPC_RESILIENCE_TESTS_CORE_FAKE_RANDOM_H_
