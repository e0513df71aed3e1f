// Allow() + Record() on one shared breaker, for both algorithms, beside a
// floor measured in the same run: one clock read plus two relaxed atomic
// increments on a shared counter (what any per-call accounting must at least
// do). Run with 1 and 2 threads; bench/run_breaker_bench.sh prints the ratios.

#include <atomic>
#include <memory>

#include "benchmark/benchmark.h"
#include "src/breaker/clock.h"
#include "src/breaker/sre_breaker.h"
#include "src/breaker/three_state_breaker.h"

namespace resilience {
namespace {

void BM_Floor(benchmark::State& state) {
  static std::atomic<int64_t> calls{0};
  static std::atomic<int64_t> successes{0};
  Clock& clock = Clock::Real();
  for (auto _ : state) {
    benchmark::DoNotOptimize(clock.Now());
    calls.fetch_add(1, std::memory_order_relaxed);
    successes.fetch_add(1, std::memory_order_relaxed);
  }
  state.SetItemsProcessed(state.iterations());
}

template <typename B>
void RunBreaker(benchmark::State& state, B& breaker) {
  for (auto _ : state) {
    Admission admission = breaker.Allow();
    benchmark::DoNotOptimize(admission.admitted());
    admission.Record(Outcome::kSuccess, absl::Microseconds(100));
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_SreBreaker(benchmark::State& state) {
  static SreBreaker* const breaker =
      SreBreaker::Create(SreBreaker::Options(), Clock::Real())->release();
  RunBreaker(state, *breaker);
}

void BM_ThreeStateBreaker(benchmark::State& state) {
  static ThreeStateBreaker* const breaker =
      ThreeStateBreaker::Create(ThreeStateBreaker::Options(), Clock::Real())->release();
  RunBreaker(state, *breaker);
}

// The path while an SRE breaker is dropping: p_drop > 0 is computed (with
// recovery acceleration) and a random draw made on every call.
void BM_SreBreakerDropping(benchmark::State& state) {
  static SreBreaker* const breaker = [] {
    SreBreaker* b = SreBreaker::Create(SreBreaker::Options(), Clock::Real())->release();
    for (int i = 0; i < 1000; ++i) b->Allow().Record(Outcome::kFailure, absl::ZeroDuration());
    return b;
  }();
  for (auto _ : state) {
    Admission admission = breaker->Allow();
    benchmark::DoNotOptimize(admission.admitted());
  }
  state.SetItemsProcessed(state.iterations());
}

BENCHMARK(BM_Floor)->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(BM_SreBreaker)->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(BM_ThreeStateBreaker)->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(BM_SreBreakerDropping)->Threads(1)->UseRealTime();

}  // namespace
}  // namespace resilience

BENCHMARK_MAIN();
