// File: src/core/random_source.h
//
// Injectable randomness for probabilistic decisions (SRE drops, jitter, fault
// injection). Every user takes a seed or a RandomSource, never a global
// generator, so that experiments and tests are reproducible.

#ifndef GRPC_RESILIENCE_SRC_CORE_RANDOM_SOURCE_H_
#define GRPC_RESILIENCE_SRC_CORE_RANDOM_SOURCE_H_

#include <atomic>
#include <cstdint>

namespace resilience {

// RandomSource
//
// A source of uniform doubles in [0, 1). Implementations must be thread-safe.
class RandomSource {
 public:
  virtual ~RandomSource() = default;
  virtual double NextUniform() = 0;
};

// SplitMixRandom
//
// SplitMix64 over an atomic counter: the n-th draw is a fixed function of the
// seed and n, so a single-threaded sequence of draws is fully determined by
// the seed, and concurrent draws need no lock (one relaxed fetch_add). Good
// statistical quality for decisions, not for cryptography. This class is
// thread-safe.
class SplitMixRandom final : public RandomSource {
 public:
  explicit SplitMixRandom(uint64_t seed) : state_(seed) {}

  double NextUniform() override {
    // 0x9E3779B97F4A7C15 is 2^64 / golden ratio, SplitMix64's increment.
    uint64_t z = state_.fetch_add(0x9E3779B97F4A7C15ULL, std::memory_order_relaxed) +
                 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    // The top 53 bits make a double in [0, 1) with every value equally likely.
    return static_cast<double>(z >> 11) * 0x1.0p-53;
  }

 private:
  std::atomic<uint64_t> state_;
};

}  // namespace resilience

#endif  // GRPC_RESILIENCE_SRC_CORE_RANDOM_SOURCE_H_
