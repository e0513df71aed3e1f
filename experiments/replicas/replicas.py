#!/usr/bin/env python3
"""The replicas experiment (docs/replicas.md): three real cache_server
processes behind one `cache_client load` channel (ipv4:a,b,c), one replica
made bad in each scenario, under each client configuration.

Figures per run: share of calls OK, attempts rejected locally (the client's
breaker), p99, and, from replica B's own metrics scraped every 0.1 s, the
time until it gets no more calls (eject) and until it gets calls again once
it is healthy (readmit).

  experiments/replicas/replicas.py --bin=build/examples/cache_service \
      --out=docs/results [--configs=grpc_rr,grpc_od,lib_channel,lib_ep,lib_od,lib_health_od,lib_health,lib_health_od_probe] \
      [--scenarios=failing,...] [--seconds=8]
"""

import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

SERVICE = "cache.v1.CacheService"
NAME = [{"service": SERVICE}]

# --- Client configurations --------------------------------------------------

RETRY = {"maxAttempts": 3, "initialBackoff": "0.01s", "maxBackoff": "0.1s",
         "backoffMultiplier": 2, "perAttemptTimeout": "0.2s",
         "retryableStatusCodes": ["UNAVAILABLE", "DEADLINE_EXCEEDED"]}
BREAKER = {"threeState": {}}  # the defaults: 0.5, 20 calls, 10 s window, 5 s open
RR = [{"round_robin": {}}]
# The OD of docs/replicas.md's first measurement (shared/design/replicas-1.51):
# interval 0.5 s, eject at >= 50 % failures over >= 5 calls.
GRPC_OD = [{"outlier_detection_experimental": {
    "interval": "0.5s", "baseEjectionTime": "10s", "maxEjectionTime": "30s",
    "maxEjectionPercent": 50,
    "failurePercentageEjection": {"threshold": 50, "enforcementPercentage": 100,
                                  "minimumHosts": 2, "requestVolume": 5},
    "childPolicy": RR}}]
# The documented opt-out of the derived outlier detection: one without
# ejection algorithms. What the library did per channel before issue 30
# (round_robin, retries, a breaker per channel and method).
NO_OD = [{"outlier_detection_experimental": {"childPolicy": RR}}]


# The outlier detection the library derives from BREAKER (the defaults:
# failureRateThreshold 0.5, 20 calls in 10 s, openDuration 5 s, 60 s at
# most; tests/policy/channel_service_config_test.cc), written out: since the
# replicas rerun of issue 30 it is derived only with healthCheckConfig, so
# this is how the earlier default (derived without health) is measured.
DERIVED_OD = [{"outlier_detection_experimental": {
    "interval": "1s", "baseEjectionTime": "5s", "maxEjectionTime": "60s",
    "maxEjectionPercent": 50,
    "failurePercentageEjection": {"threshold": 49, "enforcementPercentage": 100,
                                  "minimumHosts": 2, "requestVolume": 2},
    "childPolicy": RR}}]
# breaker.recoveryProbe: health probes while a breaker (the method's or an
# endpoint's) is open.
PROBE = {"health": SERVICE, "interval": "0.25s", "timeout": "0.5s"}


def lib(lb, health=False, endpoints=True, probe=False):
    breaker = dict(BREAKER)
    if not endpoints:
        breaker["endpoints"] = {"enabled": False}
    if probe:
        breaker["recoveryProbe"] = PROBE
    policy = {"loadBalancingConfig": lb,
              "methodConfig": [{"name": NAME, "timeout": "1s", "retryPolicy": RETRY,
                                "breaker": breaker}]}
    if health:
        policy["healthCheckConfig"] = {"serviceName": SERVICE}
    return policy


CONFIGS = {
    # gRPC alone: round_robin, the call's deadline, nothing else.
    "grpc_rr": {"loadBalancingConfig": RR,
                "methodConfig": [{"name": NAME, "timeout": "1s"}]},
    # gRPC's outlier detection alone.
    "grpc_od": {"loadBalancingConfig": GRPC_OD,
                "methodConfig": [{"name": NAME, "timeout": "1s"}]},
    # The library per channel, as before issue 30 (no per-endpoint breakers).
    "lib_channel": lib(NO_OD, endpoints=False),
    # Per-endpoint breakers, round_robin, no health: nothing is derived since
    # the rerun (written as the opt-out, which ejects nothing either, so a
    # build from before the rerun measures the same).
    "lib_ep": lib(NO_OD),
    # Per-endpoint breakers and the derived outlier detection without
    # health (the default before the rerun).
    "lib_od": lib(DERIVED_OD),
    # round_robin with health: until issue 40 the outlier detection was
    # derived from the breaker here; since, nothing is (see lib_health_derived_od).
    "lib_health_od": lib(RR, health=True),
    # The outlier detection derived with health until issue 40, written out:
    # gRPC counts NOT_FOUND as a failure, so with Gets of a cache (scenario
    # failing_get) it ejected healthy replicas for their misses.
    "lib_health_derived_od": lib(DERIVED_OD, health=True),
    # The README's "A replicated service" file, as written there.
    "readme": {"loadBalancingConfig": RR,
               "healthCheckConfig": {"serviceName": SERVICE},
               "methodConfig": [{"name": NAME, "timeout": "1s",
                                 "retryPolicy": {"maxAttempts": 3, "perAttemptTimeout": "0.2s",
                                                 "retryableStatusCodes": ["UNAVAILABLE",
                                                                          "DEADLINE_EXCEEDED"]},
                                 "breaker": {"threeState": {}}}]},
    # Health without outlier detection (the opt-out).
    "lib_health": lib(NO_OD, health=True),
    # The default with health, plus breaker.recoveryProbe.
    "lib_health_od_probe": lib(RR, health=True, probe=True),
    # Diagnosis only: lib_ep and lib_health_od with a retry budget that
    # never runs dry (each success gives back a whole token), to show what
    # the default budget (10 tokens, 0.1 per success) costs when one replica
    # of three fails every call.
    "lib_ep_nobudget": dict(lib(NO_OD), methodConfig=[
        dict(lib(NO_OD)["methodConfig"][0], retryBudget={"maxTokens": 1000, "tokenRatio": 1})]),
    "lib_health_od_nobudget": dict(lib(RR, health=True), methodConfig=[
        dict(lib(RR, health=True)["methodConfig"][0],
             retryBudget={"maxTokens": 1000, "tokenRatio": 1})]),
}
DEFAULT_CONFIGS = ["grpc_rr", "grpc_od", "lib_channel", "lib_ep", "lib_od", "lib_health_od",
                   "lib_health", "lib_health_od_probe"]

# --- Server policies ----------------------------------------------------------

BASE_DELAY = "0.002s"  # every replica answers in ~2 ms: "slow" is 10x that


def server_policy(fault):
    if fault == "healthy":
        f = {"delay": BASE_DELAY, "delayFraction": 1}
    elif fault == "failing":
        f = {"abortCode": "UNAVAILABLE", "abortFraction": 1}
    elif fault == "failing_get":
        # Gets fail, Stores are served (issue 40's new user's replica).
        return {"methodConfig": [
            {"name": [{"service": SERVICE, "method": "Get"}],
             "faultInjection": {"abortCode": "UNAVAILABLE", "abortFraction": 1}},
            {"name": NAME, "faultInjection": {"delay": BASE_DELAY, "delayFraction": 1}}]}
    elif fault == "blackhole":
        f = {"delay": "30s", "delayFraction": 1}
    elif fault == "slow":
        f = {"delay": "0.02s", "delayFraction": 1}
    else:
        raise ValueError(fault)
    return {"methodConfig": [{"name": NAME, "faultInjection": f}]}


# --- Scenarios -----------------------------------------------------------------
# Each: the faults of A, B, C at the start, and events [(t, action, replica,
# fault)] during the run. "restart": SIGKILL and start again (same port) with
# `fault`; "term": SIGTERM (graceful, 1 s), wait, start again healthy.


def scenarios(seconds):
    half = seconds * 0.6
    flaps = [(t, "restart", 1, "healthy" if i % 2 == 0 else "failing")
             for i, t in enumerate(x * 1.5 for x in range(1, int(seconds / 1.5)))]
    rolling = [(1.0 + 2.0 * i, "term", i, "healthy") for i in range(3)]
    return {
        "failing": (["healthy", "failing", "healthy"], [(half, "restart", 1, "healthy")]),
        # Issue 40: B fails every Get for the whole run; the load is Gets and
        # Stores (GET_LOAD), so the healthy replicas answer NOT_FOUND to the
        # Gets of keys not stored on them yet.
        "failing_get": (["healthy", "failing_get", "healthy"], []),
        "blackhole": (["healthy", "blackhole", "healthy"], [(half, "restart", 1, "healthy")]),
        "slow": (["healthy", "slow", "healthy"], []),
        "flapping": (["healthy", "failing", "healthy"], flaps),
        "all_failing": (["failing", "failing", "failing"], []),
        "rolling_restart": (["healthy", "healthy", "healthy"], rolling),
    }


DEFAULT_SCENARIOS = ["failing", "blackhole", "slow", "flapping", "all_failing",
                     "rolling_restart", "failing_get"]
# The load's arguments: Stores at concurrency 8, but for failing_get
# cache_client's default mix (80 % Gets) at concurrency 4, as in issue 40.
STORE_LOAD = ["--concurrency=8", "--keys=100", "--get_fraction=0"]
GET_LOAD = ["--concurrency=4", "--get_fraction=0.8"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Replica:
    def __init__(self, binary, workdir, index):
        self.binary, self.workdir, self.index = binary, workdir, index
        self.port, self.metrics_port = free_port(), free_port()
        self.proc = None

    def start(self, fault):
        path = os.path.join(self.workdir, f"server{self.index}_{fault}.json")
        with open(path, "w") as f:
            json.dump(server_policy(fault), f)
        for _ in range(50):
            self.proc = subprocess.Popen(
                [self.binary, f"--port={self.port}", f"--policy={path}",
                 "--grace_period=1s", f"--metrics_port={self.metrics_port}"],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            line = self.proc.stdout.readline()
            if line.startswith("listening on"):
                return
            self.proc.wait()
            time.sleep(0.05)  # the port is still held: try again
        raise RuntimeError(f"replica {self.index} did not start")

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def term(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=20)

    def calls(self, method=None):
        """Calls that reached this replica so far (answered or delayed); of
        `method` ("Get") alone when given."""
        try:
            text = urllib.request.urlopen(
                f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=0.5).read().decode()
        except OSError:
            return None
        total = 0
        for line in text.splitlines():
            if not line.startswith(("grpc_resilience_server_calls_total",
                                    "grpc_resilience_server_injected_delays_total")):
                continue
            if method is None or f'/{SERVICE}/{method}"' in line:
                total += float(line.rsplit(" ", 1)[1])
        return total


def run(binaries, config, scenario, seconds, workdir):
    faults, events = scenarios(seconds)[scenario]
    replicas = [Replica(os.path.join(binaries, "cache_server"), workdir, i) for i in range(3)]
    for r, fault in zip(replicas, faults):
        r.start(fault)
    policy = os.path.join(workdir, f"client_{config}.json")
    with open(policy, "w") as f:
        json.dump(CONFIGS[config], f)
    target = "ipv4:" + ",".join(f"127.0.0.1:{r.port}" for r in replicas)
    client_metrics = free_port()
    client = subprocess.Popen(
        [os.path.join(binaries, "cache_client"), f"--target={target}", f"--policy={policy}",
         "--deadline=1s", f"--metrics_port={client_metrics}", "load",
         f"--duration={seconds}s", "--calls=0"]
        + (GET_LOAD if scenario == "failing_get" else STORE_LOAD),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    start = time.monotonic()
    samples = []  # (t, B's calls, client's local rejections)
    stop = threading.Event()

    def scrape():
        while not stop.is_set():
            t = time.monotonic() - start
            rejected = None
            try:
                text = urllib.request.urlopen(
                    f"http://127.0.0.1:{client_metrics}/metrics", timeout=0.5).read().decode()
                rejected = sum(float(l.rsplit(" ", 1)[1]) for l in text.splitlines()
                               if l.startswith("grpc_resilience_client_local_rejections_total"))
            except OSError:
                pass
            samples.append((t, replicas[1].calls(), rejected))
            stop.wait(0.1)

    scraper = threading.Thread(target=scrape)
    scraper.start()
    marks = []  # (t, what) of the events, as they happened
    for t, action, index, fault in events:
        delay = t - (time.monotonic() - start)
        if delay > 0:
            time.sleep(delay)
        marks.append((time.monotonic() - start, action, index, fault))
        if action == "restart":
            replicas[index].kill()
            replicas[index].start(fault)
        else:
            replicas[index].term()
            replicas[index].start(fault)
    out, err = client.communicate(timeout=seconds + 60)
    stop.set()
    scraper.join()
    # The split between the healthy replicas A and C (issue 40): the calls
    # of the load's main method each served (Gets for failing_get).
    served = [r.calls("Get" if scenario == "failing_get" else "Store") for r in replicas]
    for r in replicas:
        r.kill()
    row = summarize(config, scenario, out, err, samples, marks, events)
    row["served"] = served
    a, c = served[0] or 0, served[2] or 0
    row["split_a"] = round(a / (a + c), 3) if a + c else None
    return row


def summarize(config, scenario, out, err, samples, marks, events):
    m = re.search(r"calls: (\d+) in", out)
    if not m:
        raise RuntimeError(f"cache_client said: {out}\n{err}")
    calls = int(m.group(1))
    p99 = re.search(r"p99 ([\d.]+) ?ms", out)
    rejected = re.search(r"client: (\d+) attempts rejected locally", out)
    codes = {c: int(n) for c, n in re.findall(r"^  ([A-Z_]+)\s+(\d+)$", out, re.M)}
    # A Get of a key the replica does not hold is answered NOT_FOUND: an
    # answer, not a failure (only failing_get makes Gets).
    ok = codes.get("OK", 0) + codes.get("NOT_FOUND", 0)
    row = {"config": config, "scenario": scenario, "calls": calls, "ok": ok, "codes": codes,
           "share_ok": ok / calls if calls else 0.0,
           "failed": calls - ok,
           "rejected_locally": int(rejected.group(1)) if rejected else 0,
           "p99_ms": float(p99.group(1)) if p99 else None}
    # Eject: in the bad phase (to the first event, or the end), the time from
    # the start after which B got no more call. Readmit: after B's restart
    # healthy, until its first call.
    bad_until = events[0][0] if events else (samples[-1][0] if samples else 0)
    if scenario in ("failing", "blackhole"):
        last_change, prev = None, None
        for t, n, _ in samples:
            if t > bad_until or n is None:
                continue
            if prev is not None and n > prev:
                last_change = t
            prev = n
        stayed_out = last_change is not None and bad_until - last_change >= 1.0
        row["eject_s"] = round(last_change, 2) if stayed_out else None
        restart = marks[0][0] if marks else None
        readmit = None
        if restart is not None:
            for t, n, _ in samples:
                if t > restart + 0.05 and n:
                    readmit = round(t - restart, 2)
                    break
        row["readmit_s"] = readmit
    if scenario == "all_failing":
        first = next((t for t, _, rej in samples if rej), None)
        row["first_local_rejection_s"] = round(first, 2) if first is not None else None
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", required=True, help="directory of cache_server, cache_client")
    parser.add_argument("--out", required=True, help="where replicas.{json,md,svg} go")
    parser.add_argument("--configs", default=",".join(DEFAULT_CONFIGS))
    parser.add_argument("--scenarios", default=",".join(DEFAULT_SCENARIOS))
    parser.add_argument("--seconds", type=float, default=8)
    args = parser.parse_args()
    configs = args.configs.split(",")
    for c in configs:
        if c not in CONFIGS:
            sys.exit(f"--configs: unknown configuration {c!r} (known: {', '.join(CONFIGS)})")
    chosen = args.scenarios.split(",")
    for s in chosen:
        if s not in DEFAULT_SCENARIOS:
            sys.exit(f"--scenarios: unknown scenario {s!r}")
    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        for scenario in chosen:
            for config in configs:
                row = run(args.bin, config, scenario, args.seconds, workdir)
                print(json.dumps(row), flush=True)
                rows.append(row)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "replicas.json"), "w") as f:
        json.dump({"seconds": args.seconds, "configs": {c: CONFIGS[c] for c in configs},
                   "rows": rows}, f, indent=1)
    from replicas_report import write_report  # pylint: disable=import-outside-toplevel
    write_report(rows, configs, chosen, args.seconds, args.out)


if __name__ == "__main__":
    main()
