// prometheus_cpp_check: a program that already exposes its metrics with
// prometheus-cpp adds the library's, linked with grpc_resilience::prometheus_cpp
// (and prometheus-cpp's pull library for its own Exposer), checked.
//
// Builds a ClientResilience, registers a PrometheusCollectable of its
// metrics on an Exposer on 127.0.0.1:0 beside the program's own registry,
// and checks that the families prometheus-cpp collects hold the library's
// (its policy generation gauge, per channel) with the library's help text.
// Prints one line per check; exits 0 only if all hold.

#include <cstdio>
#include <memory>
#include <string>

#include "grpc_resilience/client.h"
#include "grpc_resilience/policy.h"
#include "grpc_resilience/prometheus_collectable.h"
#include "prometheus/exposer.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"

namespace {

int failures = 0;

void Check(bool ok, const std::string& name, const std::string& detail) {
  std::printf("%s %s: %s\n", ok ? "ok  " : "FAIL", name.c_str(), detail.c_str());
  std::fflush(stdout);
  if (!ok) ++failures;
}

}  // namespace

int main() {
  auto policies = resilience::PolicySet::FromJsonString(R"json({"methodConfig": [{
    "name": [{"service": "shop.v1.Inventory"}], "timeout": "5s"}]})json");
  Check(policies.ok(), "policies load", policies.ok() ? "" : policies.status().ToString());
  if (!policies.ok()) return 1;
  resilience::ClientResilience::Options options;
  options.name = "inventory";
  auto client = std::make_shared<resilience::ClientResilience>(*policies, options);

  prometheus::Exposer exposer("127.0.0.1:0");
  auto own = std::make_shared<prometheus::Registry>();
  exposer.RegisterCollectable(own);
  auto library = std::make_shared<resilience::PrometheusCollectable>(
      [client](resilience::PrometheusText& text) { client->AppendMetrics(text); });
  exposer.RegisterCollectable(library);
  Check(!exposer.GetListeningPorts().empty(), "the exposer listens",
        exposer.GetListeningPorts().empty()
            ? "no port"
            : "port " + std::to_string(exposer.GetListeningPorts().front()));

  const std::string text = prometheus::TextSerializer().Serialize(library->Collect());
  Check(text.find("# TYPE grpc_resilience_client_policy_generation gauge\n") != std::string::npos &&
            text.find("grpc_resilience_client_policy_generation{channel=\"inventory\"} ") !=
                std::string::npos,
        "prometheus-cpp collects the library's metrics", text);
  Check(library->status().ok(), "nothing left out", library->status().ToString());
  return failures == 0 ? 0 : 1;
}
