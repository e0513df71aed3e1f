#!/usr/bin/env python3
"""A service's own prometheus-cpp Exposer serves the library's metrics
(PrometheusCollectable) beside its own, and a real Prometheus scrapes them.

  prometheus_cpp_scrape_test.py PROMETHEUS_CPP_EXPOSER [--prometheus=PATH]

1. prometheus_cpp_exposer (tests/prometheus_cpp/prometheus_cpp_exposer_main.cc)
   runs the cache service with the library on both sides, calls it, and
   serves a prometheus-cpp Exposer on 127.0.0.1:0.
2. Its /metrics has the library's families (client and server, a histogram
   with its buckets) and the service's own counter, and passes
   `promtool check metrics`.
3. Our own Prometheus (not the Debian package's daemon) scrapes it every
   second: up == 1 with no scrape error, and a library counter, a gauge and a
   histogram's buckets are there to query.

Bounded: every wait has a timeout, the whole run at most 75 s (about 10 s
normally); every process started is stopped, and dies with this one. Prints
one line per check and 'N passed, N failed'; exits 1 on a failure, 77 (a
skip, for ctest) only when no prometheus binary can be found.
"""
import argparse
import os
import re
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import prometheus_harness as h  # noqa: E402

SKIP = 77
OVERALL_SECONDS = 75


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("exposer")
    parser.add_argument("--prometheus", default="")
    args = parser.parse_args()

    prometheus = h.find_prometheus(args.prometheus)
    if not prometheus:
        print("skipped: no prometheus binary (Debian package prometheus)")
        return SKIP
    promtool = h.find_promtool(prometheus)
    checks = h.Checks()
    started = time.monotonic()

    def left():
        return max(1.0, OVERALL_SECONDS - (time.monotonic() - started))

    with h.Processes() as processes, tempfile.TemporaryDirectory() as workdir:
        exposer = processes.start("prometheus_cpp_exposer", [args.exposer])
        line = exposer.stdout.wait_for(lambda l: l.startswith("metrics on "), min(30, left()))
        if not checks.check("the exposer serves", line is not None, exposer.output()):
            return 1
        url = line[len("metrics on "):]
        port = int(re.search(r":(\d+)/metrics$", url).group(1))

        status, content_type, body = h.scrape(url)
        checks.check("/metrics answers 200", status == 200, status)
        for family, kind in (("grpc_resilience_client_calls_total", "counter"),
                             ("grpc_resilience_server_calls_total", "counter"),
                             ("grpc_resilience_server_in_flight", "gauge"),
                             ("grpc_resilience_client_call_duration_seconds", "histogram"),
                             ("cache_service_requests_total", "counter")):
            checks.check("%s is a %s on the endpoint" % (family, kind),
                         "# TYPE %s %s\n" % (family, kind) in body, body[:2000])
        checks.check("the histogram has the library's buckets",
                     'grpc_resilience_client_call_duration_seconds_bucket{grpc_method='
                     '"/cache.v1.CacheService/Get",channel="cache",le="0.0005"}' in body and
                     'le="10"}' in body and 'le="+Inf"}' in body, body[:2000])
        if promtool:
            code, output = h.promtool_check_metrics(promtool, body)
            checks.check("promtool check metrics passes", code == 0, output)
        else:
            checks.check("promtool found beside prometheus", False, prometheus)

        api = h.start_prometheus(processes, prometheus, workdir,
                                 {"service": "127.0.0.1:%d" % port}, h.free_port(),
                                 timeout=min(30, left()))
        up = api.wait_until(lambda: api.all_targets_up(1), min(40, left()))
        checks.check("Prometheus scrapes it: the target is up with no error", up, api.targets())
        checks.check("up == 1", api.wait_until(
            lambda: api.value('up{job="service"}') == 1, min(10, left())),
            api.query("up"))
        calls = api.wait_until(
            lambda: api.value('sum(grpc_resilience_client_calls_total{job="service"})'),
            min(10, left()))
        checks.check("Prometheus has the library's client calls", calls and calls >= 60, calls)
        checks.check("and the server's", api.wait_until(
            lambda: api.value('sum(grpc_resilience_server_calls_total{job="service"})'),
            min(10, left())))
        buckets = api.wait_until(lambda: api.query(
            'grpc_resilience_server_handler_duration_seconds_bucket{job="service"}'),
            min(10, left()))
        checks.check("and the histogram's buckets (15 per method)",
                     buckets and len(buckets) % 15 == 0, len(buckets or []))
        checks.check("and the service's own counter", api.wait_until(
            lambda: api.value('cache_service_requests_total{job="service"}') is not None,
            min(10, left())))
        checks.check("the exposer still runs", exposer.running(), exposer.output())

    print("%d passed, %d failed" % (checks.passed, checks.failed))
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
