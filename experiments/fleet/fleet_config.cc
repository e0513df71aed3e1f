#include "experiments/fleet/fleet_config.h"

#include "absl/strings/str_cat.h"

namespace fleet {

std::string TriggerName(TriggerKind kind) {
  switch (kind) {
    case TriggerKind::kNone:
      return "none";
    case TriggerKind::kLatencySpike:
      return "latency_spike";
    case TriggerKind::kCapacityHalf:
      return "capacity_half";
    case TriggerKind::kOutage:
      return "outage";
    case TriggerKind::kColdCache:
      return "cold_cache";
  }
  return "unknown";
}

std::vector<Trigger> StandardTriggers() {
  Trigger spike{TriggerKind::kLatencySpike, absl::Seconds(5)};
  Trigger half{TriggerKind::kCapacityHalf, absl::Seconds(10)};
  Trigger outage{TriggerKind::kOutage, absl::Seconds(5)};
  Trigger cold{TriggerKind::kColdCache, absl::Seconds(10)};
  return {spike, half, outage, cold};
}

double Capacity(const Config& c) {
  return c.servers * c.workers / absl::ToDoubleSeconds(c.service_time);
}

absl::Duration RunLength(const Config& c) { return c.warmup + c.trigger.length + c.after; }

absl::Status Validate(const Config& c) {
  const auto bad = [](absl::string_view field, auto value) {
    return absl::InvalidArgumentError(absl::StrCat("fleet config: ", field, " must be positive, got ", value));
  };
  if (c.clients < 1) return bad("clients", c.clients);
  if (c.servers < 1) return bad("servers", c.servers);
  if (c.workers < 1) return bad("workers", c.workers);
  if (c.service_time <= absl::ZeroDuration()) return bad("service_time", absl::FormatDuration(c.service_time));
  if (!(c.load > 0)) return bad("load", c.load);
  if (c.bin <= absl::ZeroDuration()) return bad("bin", absl::FormatDuration(c.bin));
  if (c.warmup < absl::Seconds(5)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "fleet config: warmup must be >= 5s (the baseline is 2s to warmup - 2.5s), got ",
        absl::FormatDuration(c.warmup)));
  }
  if (c.after < absl::Seconds(10)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "fleet config: after must be >= 10s (recovery must hold that long), got ",
        absl::FormatDuration(c.after)));
  }
  if (c.network_delay < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat("fleet config: network_delay must be >= 0, got ",
                                                   absl::FormatDuration(c.network_delay)));
  }
  if (c.trigger.length < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat("fleet config: trigger.length must be >= 0, got ",
                                                   absl::FormatDuration(c.trigger.length)));
  }
  return absl::OkStatus();
}

}  // namespace fleet
