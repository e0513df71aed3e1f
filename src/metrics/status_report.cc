// StatusReport's rates and JSON (include/grpc_resilience/status_report.h);
// the HTML page is in status_html.cc.

#include "grpc_resilience/status_report.h"

#include <cmath>
#include <string>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "src/metrics/status_json.h"

namespace resilience {
namespace {

// Per second over `seconds`; nullopt when the counter went backwards (a new
// channel or server under the same name) or no time passed.
std::optional<double> Rate(int64_t now, int64_t before, double seconds) {
  if (seconds <= 0 || now < before) return std::nullopt;
  return static_cast<double>(now - before) / seconds;
}

// state, mode, time_in_state_seconds, calls_in_window, failure_rate,
// slow_call_rate, drop_probability: the members of a breaker's object.
void BreakerMembers(const BreakerSnapshot& b, JsonWriter& w) {
  w.Key("state").String(BreakerStateName(b.state));
  w.Key("mode").String(BreakerModeName(b.mode));
  w.Key("time_in_state_seconds").Number(absl::ToDoubleSeconds(b.time_in_state));
  w.Key("calls_in_window").Number(b.counts.completed());
  w.Key("failure_rate").Number(b.failure_rate);
  w.Key("slow_call_rate").Number(b.slow_call_rate);
  w.Key("drop_probability").Number(b.drop_probability);
}

std::string Key(absl::string_view owner, absl::string_view method) {
  return absl::StrCat(owner.size(), ":", owner, method);
}

}  // namespace

void StatusReport::RatesSince(const StatusReport& previous) {
  const double seconds = absl::ToDoubleSeconds(generated_at - previous.generated_at);
  absl::flat_hash_map<std::string, const ClientMethodStatus*> clients;
  for (const ClientMethodStatus& c : previous.client_methods) {
    clients[Key(c.channel, c.method)] = &c;
  }
  const ClientMethodStatus no_client;
  for (ClientMethodStatus& c : client_methods) {
    auto it = clients.find(Key(c.channel, c.method));
    const ClientMethodStatus& before = it == clients.end() ? no_client : *it->second;
    c.calls_per_second = Rate(c.calls, before.calls, seconds);
    c.rejections_per_second = Rate(c.rejected_locally, before.rejected_locally, seconds);
  }
  absl::flat_hash_map<std::string, const ServerMethodStatus*> servers;
  for (const ServerMethodStatus& s : previous.server_methods) {
    servers[Key(s.server, s.method)] = &s;
  }
  const ServerMethodStatus no_server;
  for (ServerMethodStatus& s : server_methods) {
    auto it = servers.find(Key(s.server, s.method));
    const ServerMethodStatus& before = it == servers.end() ? no_server : *it->second;
    s.calls_per_second = Rate(s.admitted + s.rejected, before.admitted + before.rejected, seconds);
    s.rejections_per_second = Rate(s.rejected, before.rejected, seconds);
  }
}

std::string StatusReport::ToJson() const {
  JsonWriter w;
  w.BeginObject();
  w.Key("generated_at").String(absl::FormatTime(absl::RFC3339_full, generated_at,
                                                absl::UTCTimeZone()));
  w.Key("client_methods").BeginArray();
  for (const ClientMethodStatus& c : client_methods) {
    w.BeginObject();
    w.Key("channel").String(c.channel);
    w.Key("method").String(c.method);
    w.Key("breaker");
    if (c.breaker.has_value()) {
      w.BeginObject();
      w.Key("kind").String(c.breaker_kind);
      BreakerMembers(*c.breaker, w);
      w.EndObject();
    } else {
      w.Null();
    }
    w.Key("endpoints").BeginArray();
    for (const EndpointStatus& e : c.endpoints) {
      w.BeginObject();
      w.Key("endpoint").String(e.endpoint);
      w.Key("breaker").BeginObject();
      BreakerMembers(e.breaker, w);
      w.EndObject();
      w.Key("outcomes").Number(e.outcomes);
      w.Key("refused").Number(e.refused);
      w.EndObject();
    }
    w.EndArray();
    w.Key("calls").Number(c.calls);
    w.Key("attempts").Number(c.attempts);
    w.Key("retries").Number(c.retries);
    w.Key("rejected_locally").Number(c.rejected_locally);
    w.Key("calls_per_second").Optional(c.calls_per_second);
    w.Key("rejections_per_second").Optional(c.rejections_per_second);
    w.Key("breaker_enforcement").String(c.breaker_enforcement);
    w.Key("bulkhead_enforcement").String(c.bulkhead_enforcement);
    w.Key("shadow_rejected").Number(c.shadow_rejected);
    w.EndObject();
  }
  w.EndArray();
  w.Key("server_methods").BeginArray();
  for (const ServerMethodStatus& s : server_methods) {
    w.BeginObject();
    w.Key("server").String(s.server);
    w.Key("method").String(s.method);
    w.Key("admitted").Number(s.admitted);
    w.Key("rejected").Number(s.rejected);
    w.Key("rejected_retries").Number(s.rejected_retries);
    w.Key("in_flight").Number(s.in_flight);
    w.Key("concurrency_limit").Number(s.concurrency_limit);
    w.Key("adaptive_limit").Bool(s.adaptive_limit);
    w.Key("rate_limit").Number(s.rate_limit);
    w.Key("rate_burst").Number(s.rate_burst);
    w.Key("enforcement").String(s.enforcement);
    w.Key("shadow_rejected").Number(s.shadow_rejected);
    w.Key("calls_per_second").Optional(s.calls_per_second);
    w.Key("rejections_per_second").Optional(s.rejections_per_second);
    w.EndObject();
  }
  w.EndArray();
  w.Key("retry_throttles").BeginArray();
  for (const RetryThrottleStatus& t : retry_throttles) {
    w.BeginObject();
    w.Key("channel").String(t.channel);
    w.Key("tokens").Number(t.tokens);
    w.Key("max_tokens").Number(t.max_tokens);
    w.EndObject();
  }
  w.EndArray();
  w.Key("health_checks").BeginArray();
  for (const HealthCheckStatus& h : health_checks) {
    w.BeginObject();
    w.Key("channel").String(h.channel);
    w.Key("endpoint").String(h.endpoint);
    w.Key("service").String(h.service);
    w.Key("problem").String(h.problem);
    w.EndObject();
  }
  w.EndArray();
  w.Key("routed_endpoints").BeginArray();
  for (const RoutedEndpointStatus& e : routed_endpoints) {
    w.BeginObject();
    w.Key("channel").String(e.channel);
    w.Key("method").String(e.method);
    w.Key("endpoint").String(e.endpoint);
    w.Key("picks").Number(e.picks);
    w.Key("retries_here").Number(e.retries_here);
    w.Key("in_flight").Number(e.in_flight);
    w.Key("latency_seconds").Number(absl::ToDoubleSeconds(e.latency));
    w.Key("error_share").Number(e.error_share);
    w.Key("load").Optional(e.load);
    w.Key("weight").Number(e.weight);
    w.Key("out").String(e.out);
    w.EndObject();
  }
  w.EndArray();
  w.Key("recent_events").BeginArray();
  for (const StatusEvent& e : recent_events) {
    w.BeginObject();
    w.Key("at").String(absl::FormatTime(absl::RFC3339_full, e.at, absl::UTCTimeZone()));
    w.Key("text").String(e.text);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return w.Take();
}

}  // namespace resilience
