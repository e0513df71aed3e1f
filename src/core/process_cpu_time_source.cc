// File: src/core/process_cpu_time_source.cc

#include "src/core/process_cpu_time_source.h"

#include <sched.h>
#include <sys/resource.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
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

// The quota of the cgroup this process is in, or of one above it, when the
// v2 hierarchy is mounted at /sys/fs/cgroup (CgroupQuotaCoresUnder()); 0
// otherwise.
double CgroupCores() {
  std::ifstream file("/proc/self/cgroup");
  std::stringstream text;
  text << file.rdbuf();
  return ProcessCpuTimeSource::CgroupQuotaCoresUnder("/sys/fs/cgroup", text.str());
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

double ProcessCpuTimeSource::CgroupQuotaCoresUnder(absl::string_view root,
                                                   absl::string_view proc_self_cgroup) {
  std::string path;
  for (absl::string_view line : absl::StrSplit(proc_self_cgroup, '\n')) {
    if (absl::ConsumePrefix(&line, "0::")) path = std::string(line);
  }
  // A quota holds every cgroup under it: the lowest on the way up.
  double lowest = 0;
  while (true) {
    std::ifstream max(absl::StrCat(root, path, "/cpu.max"));
    std::string line;
    if (std::getline(max, line)) {
      const double quota = CgroupQuotaCores(line);
      if (quota > 0 && (lowest == 0 || quota < lowest)) lowest = quota;
    }
    if (path.empty() || path == "/") break;
    const size_t slash = path.rfind('/');
    path.resize(slash == std::string::npos ? 0 : slash);
  }
  return lowest;
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
