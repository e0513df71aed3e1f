// File: src/metrics_http/operations_routes.cc

#include "src/metrics_http/operations_routes.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "src/core/clock.h"
#include "src/metrics/status_json.h"

namespace resilience {
namespace {

constexpr absl::string_view kJson = "application/json";

HttpResponse JsonAnswer(int status, const std::string& body) {
  return HttpResponse{status, std::string(kJson), body + "\n", {{"Cache-Control", "no-store"}}};
}

HttpResponse Error(int status, absl::string_view message) {
  JsonWriter w;
  w.BeginObject().Key("error").String(message).EndObject();
  return JsonAnswer(status, w.Take());
}

int HttpStatusOf(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return 200;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kInvalidArgument:
      return 400;
    case absl::StatusCode::kFailedPrecondition:
      return 409;
    default:
      return 500;
  }
}

// Equal in time that depends only on the lengths.
bool SameSecret(absl::string_view a, absl::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

std::optional<std::string> UrlDecode(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '+') {
      out += ' ';
    } else if (text[i] == '%') {
      int value = 0;
      if (i + 2 >= text.size()) return std::nullopt;
      if (!absl::SimpleHexAtoi(text.substr(i + 1, 2), &value)) return std::nullopt;
      out += static_cast<char>(value);
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

}  // namespace

OperationsRoutes::OperationsRoutes(const MetricsHttpServer::Options& options) : options_(options) {
  // The first status request's rates count from here (the server's start).
  if (options_.status) {
    MutexLock lock(&mu_);
    previous_ = Report();
  }
}

StatusReport OperationsRoutes::Report() const {
  StatusReport report = options_.status();
  if (report.generated_at == absl::UnixEpoch()) report.generated_at = Clock::Real().WallNow();
  return report;
}

bool OperationsRoutes::IsLoopback(absl::string_view address) {
  const std::string text(address);
  in6_addr v6;
  if (inet_pton(AF_INET6, text.c_str(), &v6) == 1) {
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
    if (!IN6_IS_ADDR_V4MAPPED(&v6)) return false;
    return v6.s6_addr[12] == 127;  // ::ffff:127.x.y.z
  }
  in_addr v4;
  if (inet_pton(AF_INET, text.c_str(), &v4) != 1) return false;
  return (ntohl(v4.s_addr) >> 24) == 127;
}

std::optional<std::string> OperationsRoutes::FormField(absl::string_view text,
                                                       absl::string_view name) {
  for (absl::string_view pair : absl::StrSplit(text, '&', absl::SkipEmpty())) {
    const size_t eq = pair.find('=');
    const absl::string_view key = pair.substr(0, eq);
    if (key != name) continue;
    return UrlDecode(eq == absl::string_view::npos ? absl::string_view() : pair.substr(eq + 1));
  }
  return std::nullopt;
}

bool OperationsRoutes::IsLocalHost(absl::string_view host, int port) {
  absl::string_view name = host;
  absl::string_view port_text;
  const size_t colon = host.rfind(':');
  // "[::1]:9464" and "localhost:9464" have a port after their last ':';
  // "[::1]" has its ':'s inside the brackets.
  if (colon != absl::string_view::npos && host.find(']', colon) == absl::string_view::npos) {
    name = host.substr(0, colon);
    port_text = host.substr(colon + 1);
  }
  int given = 80;
  if (!port_text.empty() && !absl::SimpleAtoi(port_text, &given)) return false;
  if (given != port) return false;
  return absl::EqualsIgnoreCase(name, "localhost") || name == "127.0.0.1" || name == "[::1]";
}

std::optional<HttpResponse> OperationsRoutes::Handle(const HttpRequest& request) {
  const bool head = request.method == "HEAD";
  if (options_.status && (request.path == kStatusPath || request.path == kStatusJsonPath)) {
    if (request.method != "GET" && !head) {
      return HttpResponse{405, "text/plain; charset=utf-8", "405 method not allowed: use GET\n",
                          {{"Allow", "GET, HEAD"}}};
    }
    return Status(request.path == kStatusJsonPath, head);
  }
  if (options_.admin.enabled && request.path == kAdminBreakerPath) return Admin(request);
  if (options_.admin.enabled && options_.admin.enforcement &&
      request.path == kAdminEnforcementPath) {
    return AdminEnforcement(request);
  }
  return std::nullopt;
}

HttpResponse OperationsRoutes::Status(bool json, bool head) {
  StatusReport report;
  {
    MutexLock lock(&mu_);
    report = Report();
    if (previous_.has_value()) report.RatesSince(*previous_);
    previous_ = report;
  }
  HttpResponse response;
  response.headers = {{"Cache-Control", "no-store"}};
  if (json) {
    response.content_type = std::string(kJson);
    response.body = report.ToJson() + "\n";
  } else {
    response.content_type = "text/html; charset=utf-8";
    response.body = report.ToHtml(options_.status_refresh);
  }
  if (head) response.body.clear();
  return response;
}

std::optional<HttpResponse> OperationsRoutes::RefuseBrowserRequest(
    const HttpRequest& request) const {
  // DNS rebinding: a page of attacker.example whose name now resolves to
  // 127.0.0.1 sends its requests here with its own name in Host.
  if (!options_.admin.allow_remote && !request.host.empty() &&
      !IsLocalHost(request.host, request.server_port)) {
    return Error(403,
                 absl::StrCat("admin request refused: Host \"", request.host,
                              "\" is not this server (localhost, 127.0.0.1 or [::1] with port ",
                              request.server_port,
                              "); a web page reached through another name (DNS rebinding)"
                              " is not obeyed (admin.allow_remote serves other names)"));
  }
  // A page of another site (a form's POST, a script's fetch): the browser
  // says so, in Sec-Fetch-Site and in Origin. Tools such as curl send
  // neither; a page this server serves is same-origin.
  if (!request.sec_fetch_site.empty() && request.sec_fetch_site != "same-origin" &&
      request.sec_fetch_site != "none") {
    return Error(403, absl::StrCat("admin request refused: it comes from a web page of another"
                                   " site (Sec-Fetch-Site: ",
                                   request.sec_fetch_site, "); use curl or the API"));
  }
  if (!request.origin.empty()) {
    const bool same =
        !request.host.empty() &&
        (absl::EqualsIgnoreCase(request.origin, absl::StrCat("http://", request.host)) ||
         absl::EqualsIgnoreCase(request.origin, absl::StrCat("https://", request.host)));
    if (!same) {
      return Error(403, absl::StrCat("admin request refused: it comes from a web page of another"
                                     " origin (Origin: ",
                                     request.origin,
                                     ", Host: ", request.host.empty() ? "none" : request.host,
                                     "); use curl or the API"));
    }
  }
  return std::nullopt;
}

absl::Status OperationsRoutes::Guarded(absl::string_view callback,
                                       absl::FunctionRef<absl::Status()> call) {
  try {
    return call();
  } catch (...) {
    return absl::InternalError(absl::StrCat("the ", callback, " callback threw"));
  }
}

std::optional<std::string> OperationsRoutes::AdminField(const HttpRequest& request,
                                                        absl::string_view name) {
  if (std::optional<std::string> v = FormField(request.query, name)) return v;
  if (absl::StartsWith(request.content_type, "application/x-www-form-urlencoded")) {
    return FormField(request.body, name);
  }
  return std::nullopt;
}

std::optional<HttpResponse> OperationsRoutes::RefuseAdmin(const HttpRequest& request) const {
  if (!options_.admin.allow_remote && !IsLoopback(request.peer_address)) {
    return Error(403, absl::StrCat("admin requests are served to loopback peers only, not ",
                                   request.peer_address,
                                   " (MetricsHttpServer::Options::admin.allow_remote)"));
  }
  if (std::optional<HttpResponse> refused = RefuseBrowserRequest(request)) return *refused;
  if (!options_.admin.token.empty()) {
    absl::string_view given = request.authorization;
    if (!absl::ConsumePrefix(&given, "Bearer ") ||
        !SameSecret(absl::StripAsciiWhitespace(given), options_.admin.token)) {
      HttpResponse r = Error(401, "admin requests need \"Authorization: Bearer <token>\"");
      r.headers.emplace_back("WWW-Authenticate", "Bearer");
      return r;
    }
  } else if (!request.admin_header) {
    // Without a token, what a web page's form cannot send: a form's POST
    // to 127.0.0.1 from any site the operator's browser shows would
    // otherwise be obeyed (cross-site request forgery).
    return Error(403, absl::StrCat("admin request refused: without admin.token it must carry the"
                                   " header \"",
                                   kAdminHeader, ": 1\" (curl -H '", kAdminHeader,
                                   ": 1' ...), which a web page's form cannot send"));
  }
  if (request.method != "POST") {
    HttpResponse r = Error(405, "admin requests are POSTs");
    r.headers.emplace_back("Allow", "POST");
    return r;
  }
  return std::nullopt;
}

HttpResponse OperationsRoutes::Admin(const HttpRequest& request) {
  if (std::optional<HttpResponse> refused = RefuseAdmin(request)) return *refused;
  const auto field = [&request](absl::string_view name) { return AdminField(request, name); };
  BreakerCommandRequest command;
  for (auto [name, target] : {std::pair<absl::string_view, std::string*>{"channel", &command.channel},
                              {"method", &command.method}}) {
    std::optional<std::string> value = field(name);
    if (!value.has_value()) {
      return Error(400, absl::StrCat("admin request: field '", name, "' is missing (",
                                     kAdminBreakerPath, "?channel=C&method=M&command=K)"));
    }
    *target = *std::move(value);
  }
  command.endpoint = field("endpoint").value_or("");
  const std::optional<std::string> word = field("command");
  const std::optional<BreakerCommand> parsed =
      word.has_value() ? ParseBreakerCommand(*word) : std::nullopt;
  if (!parsed.has_value()) {
    return Error(400, absl::StrCat("admin request: command '", word.value_or(""),
                                   "' is not one of force_open, force_closed, automatic, reset"));
  }
  command.command = *parsed;
  command.origin = absl::StrCat("admin endpoint, peer ", request.peer_address, ":",
                                request.peer_port);
  const absl::Status status = Guarded("control", [&] { return options_.admin.control(command); });
  if (!status.ok()) return Error(HttpStatusOf(status), status.message());
  JsonWriter w;
  w.BeginObject();
  w.Key("applied").Bool(true);
  w.Key("channel").String(command.channel);
  w.Key("method").String(command.method);
  if (!command.endpoint.empty()) w.Key("endpoint").String(command.endpoint);
  w.Key("command").String(BreakerCommandName(command.command));
  w.EndObject();
  return JsonAnswer(200, w.Take());
}

HttpResponse OperationsRoutes::AdminEnforcement(const HttpRequest& request) {
  if (std::optional<HttpResponse> refused = RefuseAdmin(request)) return *refused;
  const auto field = [&request](absl::string_view name) { return AdminField(request, name); };
  constexpr absl::string_view kUsage = "?channel=C&method=M&policy=P&mode=E";
  EnforcementRequest r;
  r.channel = field("channel").value_or("");
  r.server = field("server").value_or("");
  if (r.channel.empty() == r.server.empty()) {
    return Error(400, absl::StrCat("admin request: give one of the fields 'channel' and 'server' (",
                                   kAdminEnforcementPath, kUsage, ")"));
  }
  std::optional<std::string> method = field("method");
  if (!method.has_value()) {
    return Error(400, absl::StrCat("admin request: field 'method' is missing (",
                                   kAdminEnforcementPath, kUsage, ")"));
  }
  r.method = *std::move(method);
  const std::optional<std::string> policy = field("policy");
  const std::optional<EnforcedPolicy> parsed_policy =
      policy.has_value() ? ParseEnforcedPolicy(*policy) : std::nullopt;
  if (!parsed_policy.has_value()) {
    return Error(400, absl::StrCat("admin request: policy '", policy.value_or(""),
                                   "' is not one of breaker, bulkhead, throttle, perCaller, cpu,"
                                   " global, criticalityShares"));
  }
  const std::optional<std::string> mode = field("mode");
  const std::optional<EnforcementMode> parsed_mode =
      mode.has_value() ? ParseEnforcementMode(*mode) : std::nullopt;
  if (!parsed_mode.has_value()) {
    return Error(400, absl::StrCat("admin request: mode '", mode.value_or(""),
                                   "' is not one of enforce, shadow, off"));
  }
  r.policy = *parsed_policy;
  r.mode = *parsed_mode;
  r.origin = absl::StrCat("admin endpoint, peer ", request.peer_address, ":", request.peer_port);
  const absl::Status status = Guarded("enforcement", [&] { return options_.admin.enforcement(r); });
  if (!status.ok()) return Error(HttpStatusOf(status), status.message());
  JsonWriter w;
  w.BeginObject();
  w.Key("applied").Bool(true);
  w.Key(r.server.empty() ? "channel" : "server").String(r.server.empty() ? r.channel : r.server);
  w.Key("method").String(r.method);
  w.Key("policy").String(EnforcedPolicyName(r.policy));
  w.Key("mode").String(EnforcementModeName(r.mode));
  w.EndObject();
  return JsonAnswer(200, w.Take());
}

}  // namespace resilience
