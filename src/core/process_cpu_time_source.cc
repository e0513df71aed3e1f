// File: src/core/process_cpu_time_source.cc

#include "src/core/process_cpu_time_source.h"

#include <sched.h>
#include <sys/resource.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace resilience {
namespace {

double AffinityCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1.0;
  return std::max(1, CPU_COUNT(&set));
}

// The quota of the cgroup this process is in, when the v2 hierarchy is
// mounted at /sys/fs/cgroup and that cgroup's folder is visible (as it is in
// a container); 0 otherwise.
double CgroupCores() {
  std::ifstream cgroup("/proc/self/cgroup");
  std::string line;
  std::string path;
  while (std::getline(cgroup, line)) {
    absl::string_view rest = line;
    if (absl::ConsumePrefix(&rest, "0::")) path = std::string(rest);
  }
  for (const std::string& dir : {"/sys/fs/cgroup" + path, std::string("/sys/fs/cgroup")}) {
    std::ifstream max(dir + "/cpu.max");
    if (std::getline(max, line)) return ProcessCpuTimeSource::CgroupQuotaCores(line);
  }
  return 0;
}

}  // namespace

double ProcessCpuTimeSource::CgroupQuotaCores(absl::string_view cpu_max) {
  std::vector<absl::string_view> parts =
      absl::StrSplit(absl::StripAsciiWhitespace(cpu_max), ' ', absl::SkipEmpty());
  double quota = 0;
  double period = 0;
  if (parts.size() != 2 || !absl::SimpleAtod(parts[0], &quota) ||
      !absl::SimpleAtod(parts[1], &period) || !(quota > 0) || !(period > 0)) {
    return 0;
  }
  return quota / period;
}

ProcessCpuTimeSource::ProcessCpuTimeSource() : cores_(AffinityCores()) {
  const double quota = CgroupCores();
  if (quota > 0) cores_ = std::min(cores_, quota);
}

absl::Duration ProcessCpuTimeSource::ProcessCpuTime() {
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return absl::ZeroDuration();
  return absl::DurationFromTimeval(usage.ru_utime) + absl::DurationFromTimeval(usage.ru_stime);
}

ProcessCpuTimeSource& ProcessCpuTimeSource::Get() {
  static auto* source = new ProcessCpuTimeSource();
  return *source;
}

}  // namespace resilience
