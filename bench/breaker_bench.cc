// The per-attempt decisions of the client chain beside a floor measured in
// the same run: one clock read plus two relaxed atomic increments on a
// shared counter (what any per-call accounting must at least do).
//
//   BM_SreBreaker, BM_ThreeStateBreaker   Allow() + Record() on one shared
//                                         breaker
//   BM_EndpointPicker                     Pick() + Started() + Ended() on one
//                                         shared EndpointPicker of 3 endpoints
//
// Run with 1 and 2 threads; bench/run_breaker_bench.sh prints the ratios.
// The "/iterations:200000" variants run a fixed count, for instructions per
// operation under callgrind (bench/run_breaker_bench.sh --callgrind).
//
//   breaker_bench [--benchmark_...]
//
// Google Benchmark's flags; --help (or -h, --helpfull) lists them and exits
// 0; an unknown flag or a bad value exits 2 with one line naming it.

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "benchmark/benchmark.h"
#include "examples/common/command_line.h"
#include "src/core/clock.h"
#include "src/breaker/sre_breaker.h"
#include "src/breaker/three_state_breaker.h"
#include "src/routing/endpoint_picker.h"

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

// What the picker costs every attempt of a channel with three endpoints,
// every one usable and none tried yet: the common path.
void BM_EndpointPicker(benchmark::State& state) {
  static EndpointPicker* const picker = [] {
    auto* p = new EndpointPicker(EndpointPicker::Options(), Clock::Real());
    p->SetEndpoints({"ipv4:10.0.0.1:443", "ipv4:10.0.0.2:443", "ipv4:10.0.0.3:443"});
    return p;
  }();
  for (auto _ : state) {
    std::shared_ptr<EndpointPicker::Endpoint> endpoint =
        picker->Pick([](const EndpointPicker::Endpoint&) { return true; }, {}, false);
    picker->Started(*endpoint);
    picker->Ended(*endpoint, absl::Microseconds(100), EndpointPicker::Result::kSuccess,
                  std::nullopt);
  }
  state.SetItemsProcessed(state.iterations());
}

BENCHMARK(BM_Floor)->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(BM_SreBreaker)->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(BM_ThreeStateBreaker)->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(BM_SreBreakerDropping)->Threads(1)->UseRealTime();
BENCHMARK(BM_EndpointPicker)->Threads(1)->Threads(2)->UseRealTime();
// Fixed counts for callgrind.
constexpr int kCountedIterations = 200000;
BENCHMARK(BM_Floor)->Iterations(kCountedIterations);
BENCHMARK(BM_ThreeStateBreaker)->Iterations(kCountedIterations);
BENCHMARK(BM_EndpointPicker)->Iterations(kCountedIterations);

}  // namespace
}  // namespace resilience

namespace {

void PrintHelp() {
  std::printf(
      "Allow() + Record() on one shared breaker, for both algorithms, and Pick() + "
      "Started() +\nEnded() on an EndpointPicker of 3 endpoints, beside a floor measured in "
      "the same\nrun (bench/run_breaker_bench.sh prints the ratios).\n\n"
      "  breaker_bench [--benchmark_...]\n\nGoogle Benchmark's flags:\n");
  benchmark::PrintDefaultHelp();
}

// Whether `arg` is `--name=VALUE` (or `-name=VALUE`); then sets `value`.
bool FlagValue(absl::string_view arg, absl::string_view name, absl::string_view* value) {
  absl::ConsumePrefix(&arg, "-");
  absl::ConsumePrefix(&arg, "-");
  if (!absl::ConsumePrefix(&arg, name) || !absl::ConsumePrefix(&arg, "=")) return false;
  *value = arg;
  return true;
}

// Google Benchmark's flags, with the conventions of the other binaries
// (examples/common/command_line.h): Benchmark 1.7 exits 1 with two lines for a
// bad number, 0 with its usage for a bad --benchmark_format, and knows no -h.
void InitializeOrExit(int* argc, char** argv) {
  example_cli::SetProgramName(argv[0]);
  for (int i = 1; i < *argc; ++i) {
    const absl::string_view arg = argv[i];
    if (arg == "-h" || arg == "--help" || arg == "-help" || arg == "--helpfull" ||
        arg == "--helpshort") {
      PrintHelp();
      std::exit(0);
    }
    // Values Benchmark would answer with its usage and exit 0.
    absl::string_view value;
    for (const char* name : {"benchmark_format", "benchmark_out_format"}) {
      if (FlagValue(arg, name, &value) && value != "console" && value != "json" &&
          value != "csv") {
        std::exit(example_cli::UsageError(absl::StrCat(
            "--", name, ": must be console, json or csv, got \"", value, "\"")));
      }
    }
    if (FlagValue(arg, "benchmark_time_unit", &value) && value != "ns" && value != "us" &&
        value != "ms" && value != "s") {
      std::exit(example_cli::UsageError(
          absl::StrCat("--benchmark_time_unit: must be ns, us, ms or s, got \"", value, "\"")));
    }
    if (FlagValue(arg, "benchmark_color", &value) && value.empty()) {
      std::exit(example_cli::UsageError("--benchmark_color: must be auto, true or false"));
    }
  }
  // Benchmark explains a bad number on stderr and then leaves the argument
  // unparsed; hold what it prints, to say it in one line instead.
  std::fflush(stderr);
  FILE* held = std::tmpfile();
  const int saved_stderr = held != nullptr ? dup(STDERR_FILENO) : -1;
  if (saved_stderr >= 0) dup2(fileno(held), STDERR_FILENO);
  benchmark::Initialize(argc, argv, &PrintHelp);
  std::fflush(stderr);
  std::string held_text;
  if (saved_stderr >= 0) {
    dup2(saved_stderr, STDERR_FILENO);
    close(saved_stderr);
    std::rewind(held);
    char buffer[4096];
    for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, held)) > 0;) {
      held_text.append(buffer, n);
    }
  }
  if (held != nullptr) std::fclose(held);
  if (*argc > 1) {  // what Benchmark did not take
    absl::string_view arg = argv[1];
    if (!absl::StartsWith(arg, "-")) {
      std::exit(example_cli::UsageError(absl::StrCat("unexpected argument \"", arg, "\"")));
    }
    const absl::string_view name = arg.substr(0, arg.find('='));
    const absl::string_view bare = absl::StripPrefix(absl::StripPrefix(name, "-"), "-");
    bool known = false;  // Benchmark 1.7's flags
    for (const char* flag :
         {"benchmark_list_tests", "benchmark_filter", "benchmark_min_time",
          "benchmark_min_warmup_time", "benchmark_repetitions",
          "benchmark_enable_random_interleaving", "benchmark_report_aggregates_only",
          "benchmark_display_aggregates_only", "benchmark_format", "benchmark_out",
          "benchmark_out_format", "benchmark_color", "benchmark_counters_tabular",
          "benchmark_context", "benchmark_time_unit", "benchmark_perf_counters", "v"}) {
      known = known || bare == flag;
    }
    std::exit(example_cli::UsageError(absl::StrCat(
        name, known ? ": invalid or missing value" : ": unknown flag", " (--help lists them)")));
  }
  std::fputs(held_text.c_str(), stderr);
}

}  // namespace

int main(int argc, char** argv) {
  InitializeOrExit(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
