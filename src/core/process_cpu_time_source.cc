// File: src/core/process_cpu_time_source.cc

#include "src/core/process_cpu_time_source.h"

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace resilience {
namespace {

// The CPUs this process may run on; a mask sized for the machine's CPUs
// (a cpu_set_t holds 1024: on a larger machine sched_getaffinity() fails
// with it). 1 when it cannot be read.
double AffinityCores() {
  const long configured = sysconf(_SC_NPROCESSORS_CONF);
  const int cpus = static_cast<int>(std::max(1024L, configured > 0 ? configured : 1L));
  cpu_set_t* set = CPU_ALLOC(cpus);
  if (set == nullptr) return 1.0;
  const size_t size = CPU_ALLOC_SIZE(cpus);
  CPU_ZERO_S(size, set);
  const int count = sched_getaffinity(0, size, set) == 0 ? CPU_COUNT_S(size, set) : 1;
  CPU_FREE(set);
  return std::max(1, count);
}

// The lower of two quotas in cores, where 0 is none.
double LowerQuota(double a, double b) { return a > 0 && (b == 0 || a < b) ? a : b; }

// The lowest quota `quota_of(folder)` gives for `path` and every folder
// above it, under `root` (a quota holds every cgroup under it); a folder
// not visible from here (no cgroup namespace) ends at `root`'s own. 0 when
// none has one.
template <typename QuotaOf>
double LowestQuotaUpwards(absl::string_view root, std::string path, const QuotaOf& quota_of) {
  double lowest = 0;
  while (true) {
    lowest = LowerQuota(quota_of(absl::StrCat(root, path)), lowest);
    if (path.empty() || path == "/") break;
    const size_t slash = path.rfind('/');
    path.resize(slash == std::string::npos ? 0 : slash);
  }
  return lowest;
}

std::string FirstLine(const std::string& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  return line;
}

// The lowest quota of the cgroup this process is in or of one above it,
// cgroup v2 (mounted at /sys/fs/cgroup) or v1 (its cpu controller at
// /sys/fs/cgroup/cpu); 0 when neither has one.
double CgroupCores() {
  std::ifstream file("/proc/self/cgroup");
  std::stringstream text;
  text << file.rdbuf();
  return LowerQuota(
      ProcessCpuTimeSource::CgroupQuotaCoresUnder("/sys/fs/cgroup", text.str()),
      ProcessCpuTimeSource::CgroupV1QuotaCoresUnder("/sys/fs/cgroup/cpu", text.str()));
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
  return LowestQuotaUpwards(root, std::move(path), [](const std::string& folder) {
    return CgroupQuotaCores(FirstLine(folder + "/cpu.max"));
  });
}

double ProcessCpuTimeSource::CgroupV1QuotaCores(absl::string_view cfs_quota_us,
                                                absl::string_view cfs_period_us) {
  // v2's "QUOTA PERIOD" line, in two files (-1, no quota, is refused there).
  return CgroupQuotaCores(absl::StrCat(absl::StripAsciiWhitespace(cfs_quota_us), " ",
                                       absl::StripAsciiWhitespace(cfs_period_us)));
}

double ProcessCpuTimeSource::CgroupV1QuotaCoresUnder(absl::string_view cpu_root,
                                                     absl::string_view proc_self_cgroup) {
  // "ID:CONTROLLERS:PATH", the cpu controller alone or with others
  // ("2:cpu,cpuacct:/a").
  std::optional<std::string> path;
  for (absl::string_view line : absl::StrSplit(proc_self_cgroup, '\n')) {
    std::vector<absl::string_view> fields = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (fields.size() != 3) continue;
    for (absl::string_view controller : absl::StrSplit(fields[1], ',')) {
      if (controller == "cpu") path = std::string(fields[2]);
    }
  }
  if (!path.has_value()) return 0;
  return LowestQuotaUpwards(cpu_root, *std::move(path), [](const std::string& folder) {
    return CgroupV1QuotaCores(FirstLine(folder + "/cpu.cfs_quota_us"),
                              FirstLine(folder + "/cpu.cfs_period_us"));
  });
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
