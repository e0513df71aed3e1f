#!/usr/bin/env python3
"""A real Prometheus scrapes cache_server and `cache_client load`
(--metrics_port) through a breaker that opens and closes, and the test asks
it what an operator would.

  prometheus_scrape_test.py CACHE_SERVER CACHE_CLIENT [--prometheus=PATH]

1. cache_server A injects UNAVAILABLE into half of the calls (faultInjection,
   abortFraction 0.5); one `cache_client load` runs with a three-state
   breaker per method that opens on a failure rate of 30%; our own
   Prometheus (not the Debian package's daemon) scrapes both every second.
2. Once Prometheus has seen a breaker open, A stops (SIGTERM) and cache_server
   B, without faults, starts on the same gRPC and metrics ports: the same
   client's breakers close.
3. Prometheus' HTTP API is asked: both targets up with no scrape error,
   injected aborts and UNAVAILABLE calls over the run, local rejections, a
   breaker that was open (the state gauge and the transition counter) and is
   closed now; `promtool check metrics` passes on a scrape of each endpoint.

Bounded: every wait has a timeout, the whole run at most 75 s (about 10 s
normally); every process started is stopped, and dies with this one. Prints
one line per check and 'N passed, N failed'; exits 1 on a failure, 77 (a
skip, for ctest) only when no prometheus binary can be found.
"""
import argparse
import json
import os
import re
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import prometheus_harness as h  # noqa: E402

SKIP = 77
OVERALL_SECONDS = 75

# Both servers cover every method with a policy (so that every method has its
# series) and a generous concurrency limit; A also aborts half of the calls.
SERVER_HEALTHY = {"methodConfig": [{
    "name": [{"service": "cache.v1.CacheService"}],
    "throttle": {"maxConcurrency": 64},
}]}
SERVER_FAILING = {"methodConfig": [{
    "name": [{"service": "cache.v1.CacheService"}],
    "throttle": {"maxConcurrency": 64},
    "faultInjection": {"abortCode": "UNAVAILABLE", "abortFraction": 0.5, "seed": 7},
}]}
# A three-state breaker per method: opens at a failure rate of 30% over at
# least 20 calls in the last second, stays open 0.3 s, then closes after 3
# successful probes in a row (at 50% failures it mostly reopens).
CLIENT = {"methodConfig": [{
    "name": [{"service": "cache.v1.CacheService"}],
    "timeout": "1s",
    "breaker": {"threeState": {
        "failureRateThreshold": 0.3, "minRequests": 20, "window": "1s", "buckets": 10,
        "openDuration": "0.3s", "openDurationMultiplier": 1,
        "halfOpenMaxProbes": 1, "halfOpenSuccessesToClose": 3, "probeInterval": "0.05s"}},
}]}
BREAKER_METHODS = {"/cache.v1.CacheService/Get", "/cache.v1.CacheService/Store"}




def by_method(api, expr):
    """{grpc_method: value} of `expr`."""
    return {labels.get("grpc_method", ""): value for labels, value in api.query(expr)}


def run(args, checks):
    with tempfile.TemporaryDirectory(prefix="prometheus_scrape_test.") as tmp, \
            h.Processes() as processes:
        failing = h.write_json(tmp, "server_failing.json", SERVER_FAILING)
        healthy = h.write_json(tmp, "server_healthy.json", SERVER_HEALTHY)
        client_policy = h.write_json(tmp, "client.json", CLIENT)
        server_metrics, client_metrics, prometheus_port = (h.free_port(), h.free_port(),
                                                           h.free_port())

        server_a, target = h.start_cache_server(processes, args.cache_server, failing,
                                                server_metrics, name="cache_server A")
        print("cache_server A on %s, metrics on port %d" % (target, server_metrics), flush=True)
        api = h.start_prometheus(processes, args.prometheus, tmp,
                                 {"cache_server": "127.0.0.1:%d" % server_metrics,
                                  "cache_client": "127.0.0.1:%d" % client_metrics},
                                 prometheus_port)
        print("prometheus on 127.0.0.1:%d" % prometheus_port, flush=True)
        client = h.start_load(processes, args.cache_client, target, client_policy,
                              client_metrics, seconds=OVERALL_SECONDS)
        start = time.time()

        # Phase 1: until Prometheus has seen a breaker open and the server's
        # injected aborts increase between two scrapes (Prometheus' service
        # discovery takes about 5 s to hand it the targets).
        def seen_failing():
            opened = api.value('max(max_over_time('
                               'grpc_resilience_client_breaker_state{state="open"}[1m]))')
            aborts = api.value('sum(increase(grpc_resilience_server_rejections_total'
                               '{cause="injected_abort"}[1m]))')
            return opened == 1 and aborts is not None and aborts > 0
        if not checks.check("phase 1: Prometheus sees a breaker open under injected aborts",
                            api.wait_until(seen_failing, 20)):
            raise RuntimeError("no breaker open seen\n" + client.output() + "\n" +
                               server_a.output())
        checks.check("the client printed the breaker opening on stderr",
                     client.stderr.wait_for(
                         lambda l: re.match(r"cache_client: \S+Z breaker ", l) and "-> open" in l,
                         5)
                     is not None, client.output())
        phase_1 = time.time() - start

        # Phase 2: the failures stop; the same client's breakers close.
        checks.check("cache_server A exits 0 on SIGTERM", server_a.stop() == 0,
                     server_a.output())
        port = int(target.rsplit(":", 1)[1])
        server_b, _ = h.start_cache_server(processes, args.cache_server, healthy, server_metrics,
                                           port=port, name="cache_server B")

        def recovered():
            closed = by_method(api, 'grpc_resilience_client_breaker_state{state="closed"}')
            to_closed = api.value('sum(grpc_resilience_client_breaker_transitions_total'
                                  '{from="half-open",to="closed"})')
            ok_b = api.value('sum(grpc_resilience_server_calls_total{grpc_code="OK"})')
            return (set(closed) >= BREAKER_METHODS and all(v == 1 for v in closed.values())
                    and to_closed is not None and to_closed > 0 and ok_b is not None and ok_b > 0)
        if not checks.check("phase 2: Prometheus sees every breaker closed again",
                            api.wait_until(recovered, 25)):
            raise RuntimeError("breakers did not close\n" + client.output() + "\n" +
                               server_b.output())
        phase_2 = time.time() - start - phase_1

        # Targets: both up, no scrape error (after the restart, once B has
        # been scraped).
        def target_states():
            return sorted((t["labels"].get("job"), t["health"], t["lastError"])
                          for t in api.targets())

        def all_up(states):
            return len(states) == 2 and all(up == "up" and err == "" for _, up, err in states)
        api.wait_until(lambda: all_up(target_states()), 10)
        states = target_states()
        checks.check("both targets up with no scrape error (lastError empty)", all_up(states),
                     states)
        checks.check("up == 1 for both jobs",
                     sorted(l.get("job") for l, v in api.query("up == 1")) ==
                     ["cache_client", "cache_server"], api.query("up"))

        # What an operator looks at, over the run.
        window = "[%ds]" % (int(time.time() - start) + 30)
        aborts = api.value('sum(increase(grpc_resilience_server_rejections_total'
                           '{cause="injected_abort"}%s))' % window)
        checks.check("server: injected aborts over the run > 0", aborts is not None and aborts > 0,
                     aborts)
        unavailable = api.value('sum(rate(grpc_resilience_client_calls_total'
                                '{grpc_code="UNAVAILABLE"}%s))' % window)
        checks.check("client: rate of UNAVAILABLE calls over the run > 0",
                     unavailable is not None and unavailable > 0, unavailable)
        shed = api.value('sum(rate(grpc_resilience_server_rejections_total%s))'
                         ' / sum(rate(grpc_resilience_server_calls_total%s))' % (window, window))
        checks.check("server: share of calls rejected over the run in (0, 1)",
                     shed is not None and 0 < shed < 1, shed)
        rejected = api.value('sum(grpc_resilience_client_local_rejections_total{cause="breaker"})')
        checks.check("client: calls rejected locally by the breaker > 0",
                     rejected is not None and rejected > 0, rejected)
        was_open = by_method(api, 'max_over_time(grpc_resilience_client_breaker_state'
                                  '{state="open"}%s)' % window)
        checks.check("client: a breaker's state gauge was open during the run",
                     any(v == 1 for v in was_open.values()), was_open)
        opened = api.value('sum(grpc_resilience_client_breaker_transitions_total{to="open"})')
        checks.check("client: transitions to open > 0", opened is not None and opened > 0, opened)
        open_now = by_method(api, 'grpc_resilience_client_breaker_state{state="open"}')
        closed_now = by_method(api, 'grpc_resilience_client_breaker_state{state="closed"}')
        checks.check("client: every breaker closed now (Get and Store)",
                     set(closed_now) >= BREAKER_METHODS and
                     all(v == 1 for v in closed_now.values()) and
                     all(v == 0 for v in open_now.values()), (closed_now, open_now))
        attempts = api.value('sum(grpc_resilience_client_attempts_total)')
        checks.check("client: attempts counted", attempts is not None and attempts > 0, attempts)
        latency = api.value('histogram_quantile(0.99, sum by (le) '
                            '(rate(grpc_resilience_client_call_duration_seconds_bucket%s)))'
                            % window)
        checks.check("client: p99 call latency is a number", latency is not None and
                     latency == latency, latency)
        in_flight = api.query('grpc_resilience_server_in_flight')
        checks.check("server: in_flight gauge exposed", len(in_flight) > 0, in_flight)

        # The expositions themselves pass Prometheus' checker.
        for job, metrics_port in (("cache_server", server_metrics),
                                  ("cache_client", client_metrics)):
            status, content_type, text = h.scrape("http://127.0.0.1:%d/metrics" % metrics_port)
            checks.check("%s: GET /metrics is 200 text/plain version 0.0.4" % job,
                         status == 200 and content_type.startswith("text/plain; version=0.0.4"),
                         (status, content_type))
            code, output = h.promtool_check_metrics(args.promtool, text)
            checks.check("%s: promtool check metrics passes" % job, code == 0 and output == "",
                         "exit %d: %s\n--- text:\n%s" % (code, output, text))

        checks.check("the client's load was still running at the end", client.running(),
                     client.output())
        print("phase 1 took %.1f s, phase 2 %.1f s, the run %.1f s" %
              (phase_1, phase_2, time.time() - start), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cache_server")
    parser.add_argument("cache_client")
    parser.add_argument("--prometheus", default="")
    args = parser.parse_args()
    args.prometheus = h.find_prometheus(args.prometheus)
    if not args.prometheus:
        print("SKIP: no prometheus binary (Debian package prometheus; scripts/test.sh installs "
              "it): the metrics endpoints are not scraped by a real Prometheus")
        return SKIP
    args.promtool = h.find_promtool(args.prometheus)
    checks = h.Checks()
    if not checks.check("promtool found beside prometheus", bool(args.promtool)):
        return 1

    def out_of_time(signum, frame):
        raise TimeoutError("over %d s" % OVERALL_SECONDS)
    signal.signal(signal.SIGALRM, out_of_time)
    signal.alarm(OVERALL_SECONDS)
    try:
        run(args, checks)
    except Exception as e:  # noqa: BLE001 - reported as a failure
        checks.check("the run completed", False, "%s: %s" % (type(e).__name__, e))
    finally:
        signal.alarm(0)
    print("%d passed, %d failed" % (checks.passed, checks.failed))
    return 0 if checks.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
