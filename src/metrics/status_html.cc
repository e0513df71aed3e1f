// StatusReport::ToHtml() (include/grpc_resilience/status_report.h): one
// self-contained page, styled inline, no script.

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "grpc_resilience/status_report.h"
#include "src/metrics/printable_text.h"

namespace resilience {
namespace {

// HTML-escaped, after PrintableText::Escape(): the page stays valid UTF-8
// whatever a row's or an event's text holds.
std::string Escape(absl::string_view raw) {
  const std::string text = PrintableText::Escape(raw);
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string Cell(absl::string_view text) { return absl::StrCat("<td>", Escape(text), "</td>"); }

std::string RateCell(const std::optional<double>& rate) {
  return rate.has_value() ? absl::StrFormat("<td class=num>%.1f</td>", *rate)
                          : std::string("<td class=num>&ndash;</td>");
}

std::string Seconds(absl::Duration d) {
  const double s = absl::ToDoubleSeconds(d);
  if (s < 60) return absl::StrFormat("%.1f s", s);
  if (s < 3600) return absl::StrFormat("%.1f min", s / 60);
  return absl::StrFormat("%.1f h", s / 3600);
}

constexpr absl::string_view kStyle =
    "body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}"
    "h1{font-size:1.4em}h2{font-size:1.1em;margin-top:1.5em}"
    "table{border-collapse:collapse;font-size:.9em}"
    "th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left}"
    "th{background:#f0f0f0}td.num{text-align:right;font-variant-numeric:tabular-nums}"
    "tr.open td{background:#fbd5d5}tr.half_open td{background:#fdf0c8}"
    "tr.forced td{background:#e3d7fb}tr.binding td{background:#fdf0c8}"
    "tr.endpoint td{font-size:.92em}"
    ".state{font-weight:bold}.none{color:#888}"
    "ul.events{font-family:monospace;font-size:.85em}";

// The row's class: its breaker's state, or "forced" when an operator set it.
std::string RowClass(const BreakerSnapshot& b) {
  if (b.mode == BreakerMode::kForceOpen || b.mode == BreakerMode::kForceClosed) return "forced";
  std::string name(BreakerStateName(b.state));
  return name == "half-open" ? "half_open" : name;
}

// State, mode, time in state, window calls, failure rate. A forced breaker's
// state reads "forced open" (it rejects every call whatever its state
// machine says), and its mode cell says the state machine's state.
std::string BreakerCells(const BreakerSnapshot& b) {
  const bool forced = b.mode == BreakerMode::kForceOpen || b.mode == BreakerMode::kForceClosed;
  const std::string mode =
      forced ? absl::StrCat(BreakerModeName(b.mode), " (own state ", BreakerStateName(b.state), ")")
             : std::string(BreakerModeName(b.mode));
  return absl::StrCat("<td class=state>", Escape(EffectiveBreakerStateName(b.mode, b.state)),
                      "</td>", Cell(mode), Cell(Seconds(b.time_in_state)),
                      absl::StrFormat("<td class=num>%d</td><td class=num>%.2f</td>",
                                      b.counts.completed(), b.failure_rate));
}

// One row under its method per endpoint the method's breakers know.
void AppendEndpoints(const ClientMethodStatus& c, std::string& out) {
  for (const EndpointStatus& e : c.endpoints) {
    absl::StrAppend(&out, "<tr class=\"endpoint ", RowClass(e.breaker), "\" data-channel=\"",
                    Escape(c.channel), "\" data-method=\"", Escape(c.method),
                    "\" data-endpoint=\"", Escape(e.endpoint), "\"><td></td><td>&#8627; ",
                    Escape(e.endpoint), "</td>", Cell("endpoint"), BreakerCells(e.breaker),
                    absl::StrFormat("<td class=num colspan=2>%d attempts, %d not counted</td>",
                                    e.outcomes, e.refused),
                    "</tr>");
  }
}

void AppendClients(const StatusReport& r, std::string& out) {
  if (r.client_methods.empty()) return;
  absl::StrAppend(&out, "<h2>Client methods</h2>");
  absl::StrAppend(&out,
                  "<table id=client><tr><th>channel</th><th>method</th><th>breaker</th>"
                  "<th>state</th><th>mode</th><th>in state</th><th>window calls</th>"
                  "<th>failure rate</th><th>calls/s</th><th>rejected locally/s</th>"
                  "<th>enforcement</th><th>shadow rejected</th></tr>");
  for (const ClientMethodStatus& c : r.client_methods) {
    const std::string row_class = c.breaker.has_value() ? RowClass(*c.breaker) : "";
    absl::StrAppend(&out, "<tr class=\"", row_class, "\" data-channel=\"", Escape(c.channel),
                    "\" data-method=\"", Escape(c.method), "\">", Cell(c.channel),
                    Cell(c.method));
    if (c.breaker.has_value() && c.breaker_enforcement == "off") {
      absl::StrAppend(&out, Cell(c.breaker_kind), "<td class=none colspan=5>off</td>");
    } else if (c.breaker.has_value()) {
      absl::StrAppend(&out, Cell(c.breaker_kind), BreakerCells(*c.breaker));
    } else {
      absl::StrAppend(&out, "<td class=none colspan=6>no breaker</td>");
    }
    // "breaker shadow, bulkhead enforce"; empty without either.
    std::string modes;
    if (!c.breaker_enforcement.empty()) absl::StrAppend(&modes, "breaker ", c.breaker_enforcement);
    if (!c.bulkhead_enforcement.empty()) {
      absl::StrAppend(&modes, modes.empty() ? "" : ", ", "bulkhead ", c.bulkhead_enforcement);
    }
    absl::StrAppend(&out, RateCell(c.calls_per_second), RateCell(c.rejections_per_second),
                    Cell(modes), Cell(absl::StrCat(c.shadow_rejected)), "</tr>");
    AppendEndpoints(c, out);
  }
  absl::StrAppend(&out, "</table>");
}

void AppendThrottles(const StatusReport& r, std::string& out) {
  if (r.retry_throttles.empty()) return;
  absl::StrAppend(&out,
                  "<h2>Retry throttling</h2><table id=retry_throttles><tr><th>channel</th>"
                  "<th>tokens</th><th>of</th></tr>");
  for (const RetryThrottleStatus& t : r.retry_throttles) {
    absl::StrAppend(&out, "<tr", t.tokens * 2 <= t.max_tokens ? " class=binding" : "", ">",
                    Cell(t.channel),
                    absl::StrFormat("<td class=num>%.1f</td><td class=num>%d</td></tr>",
                                    t.tokens, t.max_tokens));
  }
  absl::StrAppend(&out, "</table>");
}

void AppendHealthChecks(const StatusReport& r, std::string& out) {
  if (r.health_checks.empty()) return;
  absl::StrAppend(&out,
                  "<h2>Health checking</h2><table id=health_checks><tr><th>channel</th>"
                  "<th>endpoint</th><th>service name</th><th>problem</th></tr>");
  for (const HealthCheckStatus& h : r.health_checks) {
    absl::StrAppend(&out, "<tr class=open>", Cell(h.channel), Cell(h.endpoint), Cell(h.service),
                    Cell(h.problem), "</tr>");
  }
  absl::StrAppend(&out, "</table>");
}

void AppendRoutedEndpoints(const StatusReport& r, std::string& out) {
  if (r.routed_endpoints.empty()) return;
  absl::StrAppend(&out,
                  "<h2>Endpoints (the library's picker)</h2><table id=routed_endpoints><tr>"
                  "<th>channel</th><th>method</th><th>endpoint</th><th>picks</th><th>of them retries</th>"
                  "<th>in flight</th><th>latency</th><th>errors</th><th>load</th>"
                  "<th>slow start</th><th>out</th></tr>");
  for (const RoutedEndpointStatus& e : r.routed_endpoints) {
    absl::StrAppend(
        &out, "<tr", e.out.empty() ? "" : " class=open", ">", Cell(e.channel), Cell(e.method), Cell(e.endpoint),
        absl::StrFormat("<td class=num>%d</td><td class=num>%d</td><td class=num>%d</td>"
                        "<td class=num>%.2f ms</td><td class=num>%.0f %%</td>",
                        e.picks, e.retries_here, e.in_flight,
                        absl::ToDoubleMilliseconds(e.latency), e.error_share * 100),
        Cell(e.load.has_value() ? absl::StrFormat("%.0f %%", *e.load * 100) : std::string("-")),
        Cell(e.weight >= 1 ? std::string("done") : absl::StrFormat("%.0f %%", e.weight * 100)),
        Cell(e.out.empty() ? std::string("in") : e.out), "</tr>");
  }
  absl::StrAppend(&out, "</table>");
}

void AppendServers(const StatusReport& r, std::string& out) {
  if (r.server_methods.empty()) return;
  absl::StrAppend(&out, "<h2>Server methods</h2>");
  absl::StrAppend(&out,
                  "<table id=server><tr><th>server</th><th>method</th><th>in flight</th>"
                  "<th>concurrency limit</th><th>rate limit</th><th>admitted</th>"
                  "<th>rejected</th><th>calls/s</th><th>rejected/s</th>"
                  "<th>shadow: would have rejected</th></tr>");
  for (const ServerMethodStatus& s : r.server_methods) {
    const bool binding = s.concurrency_limit > 0 && s.in_flight >= s.concurrency_limit;
    const std::string limit =
        s.concurrency_limit == 0
            ? std::string("none")
            : absl::StrCat(s.concurrency_limit, s.adaptive_limit ? " (adaptive)" : "");
    const std::string rate = s.rate_limit <= 0
                                 ? std::string("none")
                                 : absl::StrFormat("%g/s, burst %d", s.rate_limit, s.rate_burst);
    absl::StrAppend(
        &out, "<tr", binding ? " class=binding" : "", " data-method=\"", Escape(s.method), "\">",
        Cell(s.server), Cell(s.method), absl::StrFormat("<td class=num>%d</td>", s.in_flight),
        Cell(limit), Cell(rate),
        absl::StrFormat("<td class=num>%d</td><td class=num>%d</td>", s.admitted, s.rejected),
        RateCell(s.calls_per_second), RateCell(s.rejections_per_second),
        Cell(s.enforcement.empty() ? std::string("none (all enforced)")
                                   : absl::StrCat(s.shadow_rejected, " (", s.enforcement, ")")),
        "</tr>");
  }
  absl::StrAppend(&out, "</table>");
}

}  // namespace

std::string StatusReport::ToHtml(absl::Duration refresh) const {
  std::string out =
      "<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
      "<meta name=viewport content=\"width=device-width\">";
  if (refresh > absl::ZeroDuration()) {
    absl::StrAppend(&out, "<meta http-equiv=refresh content=\"",
                    std::max<int64_t>(1, absl::ToInt64Seconds(refresh)), "\">");
  }
  absl::StrAppend(&out, "<title>grpc-resilience status</title><style>", kStyle,
                  "</style></head><body><h1>grpc-resilience status</h1><p>As of ",
                  Escape(absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", generated_at,
                                          absl::UTCTimeZone())),
                  " &middot; <a href=\"status.json\">JSON</a></p>");
  if (client_methods.empty() && server_methods.empty()) {
    absl::StrAppend(&out, "<p class=none>No method called yet.</p>");
  }
  AppendHealthChecks(*this, out);
  AppendRoutedEndpoints(*this, out);
  AppendClients(*this, out);
  AppendThrottles(*this, out);
  AppendServers(*this, out);
  absl::StrAppend(&out, "<h2>Recent events</h2>");
  if (recent_events.empty()) {
    absl::StrAppend(&out, "<p class=none>None yet.</p>");
  } else {
    absl::StrAppend(&out, "<ul class=events>");
    for (const StatusEvent& e : recent_events) {
      absl::StrAppend(&out, "<li>",
                      Escape(absl::FormatTime("%H:%M:%S", e.at, absl::UTCTimeZone())), " ",
                      Escape(e.text), "</li>");
    }
    absl::StrAppend(&out, "</ul>");
  }
  absl::StrAppend(&out, "</body></html>\n");
  return out;
}

}  // namespace resilience
