#include "src/client_interceptors/endpoint_resolver.h"

#include <netdb.h>
#include <sys/socket.h>
#include <arpa/inet.h>

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace resilience {
namespace {

// The least time between two resolutions a connection failure asks for.
constexpr absl::Duration kRefreshSpacing = absl::Seconds(5);

// host[:port] or [v6]:port into its parts; the port defaults to 443 as
// gRPC's DNS resolver does.
absl::Status SplitHostPort(absl::string_view text, std::string& host, std::string& port) {
  port = "443";
  if (absl::ConsumePrefix(&text, "[")) {
    const size_t close = text.find(']');
    if (close == absl::string_view::npos) {
      return absl::InvalidArgumentError("an IPv6 address without its closing ']'");
    }
    host = std::string(text.substr(0, close));
    absl::string_view rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (!absl::ConsumePrefix(&rest, ":") || rest.empty()) {
        return absl::InvalidArgumentError("text after ']' that is not \":<port>\"");
      }
      port = std::string(rest);
    }
  } else if (const size_t colon = text.rfind(':'); colon != absl::string_view::npos) {
    if (text.find(':') != colon) {
      return absl::InvalidArgumentError("an IPv6 address must be in brackets: [addr]:port");
    }
    host = std::string(text.substr(0, colon));
    port = std::string(text.substr(colon + 1));
    if (port.empty()) return absl::InvalidArgumentError("an empty port after ':'");
  } else {
    host = std::string(text);
  }
  if (host.empty()) return absl::InvalidArgumentError("no host");
  if (!std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    // gRPC also takes service names; the library's picker does not.
    return absl::InvalidArgumentError(absl::StrCat("port \"", port, "\" is not a number"));
  }
  return absl::OkStatus();
}

std::string Named(int family, const void* address, const std::string& port) {
  char text[INET6_ADDRSTRLEN] = {};
  if (inet_ntop(family, address, text, sizeof(text)) == nullptr) return "";
  return family == AF_INET ? absl::StrCat("ipv4:", text, ":", port)
                           : absl::StrCat("ipv6:[", text, "]:", port);
}

}  // namespace

int EndpointResolver::ListedCount(absl::string_view target) {
  absl::StatusOr<Target> parsed = Parse(target);  // duplicates removed
  return parsed.ok() ? static_cast<int>(parsed->fixed.size()) : 0;
}

absl::StatusOr<EndpointResolver::Target> EndpointResolver::Parse(absl::string_view target) {
  const std::string shown(target.substr(0, 200));
  const auto bad = [&](absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat("target \"", shown, "\": ", what));
  };
  Target parsed;
  absl::string_view rest = target;
  const bool v4 = absl::ConsumePrefix(&rest, "ipv4:");
  const bool v6 = !v4 && absl::ConsumePrefix(&rest, "ipv6:");
  if (v4 || v6) {
    absl::ConsumePrefix(&rest, "//");  // ipv4:///a:p is gRPC's other spelling
    absl::ConsumePrefix(&rest, "/");
    for (absl::string_view one : absl::StrSplit(rest, ',')) {
      std::string host, port;
      if (absl::Status s = SplitHostPort(one, host, port); !s.ok()) return bad(s.message());
      unsigned char buffer[sizeof(in6_addr)];
      if (inet_pton(v4 ? AF_INET : AF_INET6, host.c_str(), buffer) != 1) {
        return bad(absl::StrCat("\"", host, "\" is not an IPv", v4 ? "4" : "6", " address"));
      }
      const std::string name = Named(v4 ? AF_INET : AF_INET6, buffer, port);
      if (std::find(parsed.fixed.begin(), parsed.fixed.end(), name) == parsed.fixed.end()) {
        parsed.fixed.push_back(name);
      }
    }
    return parsed;
  }
  if (absl::ConsumePrefix(&rest, "dns:")) {
    if (absl::ConsumePrefix(&rest, "//")) {
      // dns://authority/host:port: the authority names a DNS server, which
      // getaddrinfo cannot ask.
      const size_t slash = rest.find('/');
      if (slash == absl::string_view::npos) return bad("no '/' after the DNS authority");
      if (slash != 0) {
        return absl::UnimplementedError(absl::StrCat(
            "target \"", shown, "\": a DNS server of its own (dns://", rest.substr(0, slash),
            "/) is not asked by the library's resolver"));
      }
      rest.remove_prefix(1);
    }
  } else if (const size_t colon = rest.find(':');
             colon != absl::string_view::npos && rest.substr(colon + 1, 2) == "//") {
    return absl::UnimplementedError(absl::StrCat(
        "target \"", shown, "\": scheme \"", rest.substr(0, colon),
        "\" is not resolved by the library (ipv4:, ipv6:, dns: and host:port are)"));
  } else if (absl::StartsWith(rest, "unix:") || absl::StartsWith(rest, "unix-abstract:") ||
             absl::StartsWith(rest, "xds:") || absl::StartsWith(rest, "vsock:")) {
    return absl::UnimplementedError(absl::StrCat(
        "target \"", shown, "\": scheme \"", rest.substr(0, rest.find(':')),
        "\" is not resolved by the library (ipv4:, ipv6:, dns: and host:port are)"));
  }
  if (absl::Status s = SplitHostPort(rest, parsed.host, parsed.port); !s.ok()) {
    return bad(s.message());
  }
  parsed.authority = std::string(rest);
  return parsed;
}

absl::StatusOr<std::vector<std::string>> EndpointResolver::Resolve(const std::string& host,
                                                                   const std::string& port) {
  addrinfo hints = {};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int error = getaddrinfo(host.c_str(), port.c_str(), &hints, &found); error != 0) {
    return absl::UnavailableError(
        absl::StrCat("resolving \"", host, ":", port, "\": ", gai_strerror(error)));
  }
  std::vector<std::string> endpoints;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    std::string name;
    if (a->ai_family == AF_INET) {
      name = Named(AF_INET, &reinterpret_cast<const sockaddr_in*>(a->ai_addr)->sin_addr, port);
    } else if (a->ai_family == AF_INET6) {
      name = Named(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(a->ai_addr)->sin6_addr, port);
    }
    if (!name.empty() && std::find(endpoints.begin(), endpoints.end(), name) == endpoints.end()) {
      endpoints.push_back(std::move(name));
    }
  }
  freeaddrinfo(found);
  if (endpoints.empty()) {
    return absl::UnavailableError(absl::StrCat("resolving \"", host, ":", port, "\": no address"));
  }
  return endpoints;
}

EndpointResolver::EndpointResolver(Target target, absl::Duration interval, Listener on_change,
                                   Clock& clock)
    : target_(std::move(target)),
      interval_(interval),
      on_change_(std::move(on_change)),
      clock_(clock) {}

EndpointResolver::~EndpointResolver() {
  {
    MutexLock lock(&mu_);
    stop_ = true;
    wake_.SignalAll();
  }
  if (thread_.joinable()) thread_.join();
}

void EndpointResolver::Start() {
  if (!target_.fixed.empty()) {
    on_change_(target_.fixed);
    return;
  }
  thread_ = std::thread([this] { Run(); });
}

void EndpointResolver::Refresh() {
  MutexLock lock(&mu_);
  refresh_ = true;
  wake_.SignalAll();
}

absl::Status EndpointResolver::last_error() {
  MutexLock lock(&mu_);
  return last_error_;
}

void EndpointResolver::Run() {
  absl::Time next = absl::InfinitePast();
  for (;;) {
    {
      MutexLock lock(&mu_);
      for (;;) {
        if (stop_) return;
        const absl::Time now = clock_.Now();
        if (now >= next) break;
        // A refresh asked for: at most one per kRefreshSpacing.
        const absl::Time soonest = next - interval_ + kRefreshSpacing;
        if (refresh_ && now >= soonest) break;
        const absl::Time until = refresh_ ? std::min(next, soonest) : next;
        wake_.WaitWithTimeout(&mu_, until - now);
      }
      refresh_ = false;
    }
    absl::StatusOr<std::vector<std::string>> endpoints = Resolve(target_.host, target_.port);
    next = clock_.Now() + interval_;
    bool changed = false;
    {
      MutexLock lock(&mu_);
      last_error_ = endpoints.status();
      if (endpoints.ok() && *endpoints != last_) {
        last_ = *endpoints;
        changed = true;
      }
    }
    if (changed) on_change_(*endpoints);
  }
}

}  // namespace resilience
