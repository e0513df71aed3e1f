#!/usr/bin/env python3
"""The routing experiment (docs/replicas.md, "Routing around a bad replica"):
three cache_server replicas on loopback, one closed-loop `cache_client load`
(concurrency 4, 80 % Gets) over all three, replica B made bad in each
scenario, for each client configuration. Writes routing.json and routing.md
(the figures, and the routing targets checked) to --out.

  experiments/replicas/routing.py --bin=build/examples/cache_service \\
      [--configs=grpc,readme,picker] [--scenarios=baseline,failing_start,...]
      [--seconds=10] [--runs=3] [--out=docs/results]
  experiments/replicas/routing.py --bin=... --quick          # 3 s cells, 1 run
  experiments/replicas/routing.py --bin=... --cell=slow/readme

A client configuration is a file: a library policy file (cache_client
--policy) or, for `grpc`, a gRPC service config (--service_config: gRPC's
own channel, no library interceptors). A configuration cache_client refuses
(exit status 2: e.g. `picker` on a build without the picker) is skipped with
its message. --quick and --cell write to a temporary directory unless --out
is given; the full run writes docs/results. ~10 minutes for the full run.
"""

import argparse
import atexit
import datetime
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

import routing_cells
import routing_report
from routing_cluster import Client, Replica, SERVICE, cleanup, preflight

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
UNARY_NAMES = [{"service": SERVICE, "method": "Get"}, {"service": SERVICE, "method": "Store"}]
# The README's "A replicated service" file, as it is there.
README = {
    "loadBalancingConfig": [{"round_robin": {}}],
    "healthCheckConfig": {"serviceName": SERVICE},
    "methodConfig": [{
        "name": UNARY_NAMES, "timeout": "1s",
        "retryPolicy": {"maxAttempts": 3, "perAttemptTimeout": "0.2s",
                        "retryableStatusCodes": ["UNAVAILABLE", "DEADLINE_EXCEEDED"]},
        "breaker": {"threeState": {}}}],
}
# gRPC alone: round_robin and its own retryPolicy (gRPC requires the backoff
# fields; 1.51 has no per-attempt timeout outside its hedging experiment).
# No "timeout": gRPC 1.51 sets a service config's timeout about a second
# short (grpc/grpc#34547), so "1s" failed every call at once
# DEADLINE_EXCEEDED; the calls' own 1 s deadline (--deadline) bounds them.
GRPC = {
    "loadBalancingConfig": [{"round_robin": {}}],
    "methodConfig": [{
        "name": UNARY_NAMES,
        "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.01s", "maxBackoff": "0.1s",
                        "backoffMultiplier": 2,
                        "retryableStatusCodes": ["UNAVAILABLE", "DEADLINE_EXCEEDED"]}}],
}


def with_lb(policy, first=None, drop=()):
    p = json.loads(json.dumps(policy))
    if first is not None:
        p["loadBalancingConfig"] = [first] + p["loadBalancingConfig"]
    for key in drop:
        p.pop(key, None)
    return p


# name: (cache_client flag, file, description)
CONFIGS = {
    "grpc": ("--service_config", GRPC, "gRPC alone: round_robin and gRPC's retryPolicy (3 "
             "attempts on UNAVAILABLE and DEADLINE_EXCEEDED) in a plain service config, no "
             "interceptors of the library; the calls' 1 s deadline"),
    "readme": ("--policy", README, "the README's replica file as it is (round_robin, "
               "healthCheckConfig, 3 attempts with perAttemptTimeout 0.2 s, threeState breaker)"),
    "picker": ("--policy", with_lb(README, {"resilience_p2c": {}}),
               "the README's file with `{\"resilience_p2c\": {}}` first in loadBalancingConfig"),
    # Not run by default.
    "readme_nohealth": ("--policy", with_lb(README, drop=("healthCheckConfig",)),
                        "the README's file without healthCheckConfig"),
    "picker_nohealth": ("--policy", with_lb(README, {"resilience_p2c": {}},
                                            drop=("healthCheckConfig",)),
                        "the picker's file without healthCheckConfig"),
}
DEFAULT_CONFIGS = ["grpc", "readme", "picker"]
SCENARIOS = ["baseline", "failing_start", "failing_after", "slow", "blackhole", "flapping",
             "half_capacity", "rolling_restart", "forced_open"]
LOAD = ["--concurrency=4", "--get_fraction=0.8", "--keys=1000"]


class Context:
    pass


def calibrate(ctx, seconds):
    """Healthy replicas, Gets only, gRPC's channel: the Get p50, for the slow
    delay (and what B served per second, for the record)."""
    replicas = [Replica(ctx.server_bin, ctx.workdir, i) for i in range(3)]
    try:
        for r in replicas:
            r.start(routing_cells.HEALTHY)
        before = replicas[1].counts()
        flag, path = ctx.config_files["grpc"]
        client = Client(ctx.client_bin, flag, path,
                        "ipv4:" + ",".join(r.address for r in replicas), seconds,
                        ["--concurrency=4", "--get_fraction=1"],
                        os.path.join(ctx.workdir, "client_calibration.log"))
        load = client.wait()
        after = replicas[1].counts()
    finally:
        for r in replicas:
            r.kill()
    b = sum(after[k] - before[k] for k in after if k[1] == "attempts")
    p50 = load["p50_ms"]
    return {"seconds": seconds, "get_p50_ms": p50, "b_rate": b / load["seconds"],
            "slow_delay_ms": round(max(5.0, 10 * p50), 1)}


def readme_block():
    """The README's replica file, if README.md is where this runs from."""
    path = os.path.join(REPO, "README.md")
    try:
        text = open(path).read()
    except OSError:
        return None
    for block in re.findall(r"```json\n(.*?)```", text, re.S):
        if "loadBalancingConfig" in block:
            return json.loads(block)
    return None


def binaries(directory):
    """Where the binaries are, and the commit of the checkout they are in."""
    path = os.path.abspath(directory)
    try:
        commit = subprocess.run(["git", "-C", path, "describe", "--always", "--dirty"],
                                capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    return f"`{path}`" + (f" (checkout at {commit})" if commit else "")


def merge(result, earlier, requested):
    """Adds to `result` the rows (and the rest) of the configurations it did
    not run from `earlier`, in the order of the scenarios, then configurations."""
    kept = [r for r in earlier["rows"] if r["config"] not in requested]
    configs = list(dict.fromkeys([r["config"] for r in kept] + requested))
    order = lambda r: (SCENARIOS.index(r["scenario"]), configs.index(r["config"]), r["run"])  # noqa
    result["rows"] = sorted(kept + result["rows"], key=order)
    for key in ("configs", "config_text"):
        result[key] = {**{c: v for c, v in earlier.get(key, {}).items() if c not in requested},
                       **result[key]}
    result["skipped"] = {**{c: v for c, v in earlier.get("skipped", {}).items()
                            if c not in requested}, **result["skipped"]}
    result["not_applicable"] = sorted(set(earlier.get("not_applicable", []))
                                      | set(result["not_applicable"]))
    result["earlier_run"] = {k: earlier[k] for k in ("started", "ended", "load_before",
                                                     "load_after", "binaries")}
    result["earlier_run"]["configs"] = sorted({r["config"] for r in kept})


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(REPO, "build", "examples", "cache_service"),
                    help="directory of cache_server and cache_client (default: build/'s)")
    ap.add_argument("--out", help="where routing.{json,md} go (default: docs/results for a "
                    "full run, a temporary directory for --quick and --cell)")
    ap.add_argument("--configs", default=",".join(DEFAULT_CONFIGS))
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    ap.add_argument("--cell", help="SCENARIO/CONFIG: that cell alone (plus the calibration "
                    "it needs), one run")
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--runs", type=int, default=3, help="runs of rolling_restart")
    ap.add_argument("--quick", action="store_true", help="3 s cells, one run each")
    ap.add_argument("--report_only", action="store_true",
                    help="write routing.md again from --out's routing.json, run nothing")
    ap.add_argument("--append", action="store_true",
                    help="keep the rows of other configurations in --out's routing.json (and "
                    "its slow delay), e.g. to add the picker's column to an earlier run")
    ap.add_argument("--slow_delay_ms", type=float,
                    help="the slow replica's delay; without it a calibration run measures it")
    args = ap.parse_args()
    configs, scenarios = args.configs.split(","), args.scenarios.split(",")
    if args.cell:
        scenario, _, config = args.cell.partition("/")
        scenarios, configs, args.runs = [scenario], [config], 1
    if args.quick:
        args.seconds, args.runs = 3, 1
    for c in configs:
        if c not in CONFIGS:
            sys.exit(f"unknown configuration {c!r} (known: {', '.join(CONFIGS)})")
    for s in scenarios:
        if s not in SCENARIOS:
            sys.exit(f"unknown scenario {s!r} (known: {', '.join(SCENARIOS)})")
    out = args.out or (os.path.join(REPO, "docs", "results") if not (args.quick or args.cell)
                       else tempfile.mkdtemp(prefix="routing-"))
    if args.report_only:
        with open(os.path.join(out, "routing.json")) as f:
            routing_report.write_report(json.load(f), out)
        print(f"wrote {out}/routing.md", flush=True)
        return
    earlier = None
    if args.append:
        try:
            with open(os.path.join(out, "routing.json")) as f:
                earlier = json.load(f)
        except (OSError, ValueError) as e:
            sys.exit(f"--append: no earlier results in {out}: {e}")
        if not args.slow_delay_ms:
            args.slow_delay_ms = earlier["calibration"].get("slow_delay_ms")
    atexit.register(cleanup)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if readme_block() not in (None, README):
        print("note: README.md's replica file differs from CONFIGS['readme'] here; the "
              "experiment runs the one written here", flush=True)

    ctx = Context()
    ctx.server_bin = os.path.join(args.bin, "cache_server")
    ctx.client_bin = os.path.join(args.bin, "cache_client")
    ctx.seconds, ctx.load_args = args.seconds, LOAD
    ctx.warmup = 1.0 if args.seconds < 5 else 2.0
    started, load_before = datetime.datetime.utcnow(), os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="routing-work-") as workdir:
        ctx.workdir = workdir
        ctx.config_files, skipped = {}, {}
        for name in set(configs) | {"grpc"}:
            flag, data, _ = CONFIGS[name]
            path = os.path.join(workdir, f"client_{name}.json")
            with open(path, "w") as f:
                json.dump(data, f, indent=1)
            ctx.config_files[name] = (flag, path)
            refused, warnings = preflight(ctx.client_bin, flag, path)
            if refused:
                skipped[name] = f"cache_client refused the file: {refused}"
            elif name.startswith("picker") and any("resilience_p2c" in w for w in warnings):
                skipped[name] = "cache_client took the file but warned: " + "; ".join(warnings)
            if name in skipped and name in configs:
                print(f"skipping configuration {name}: {skipped[name]} (a build that takes "
                      f"the file runs it: --configs={name} --append)", flush=True)
        requested = list(configs)
        configs = [c for c in configs if c not in skipped]
        ctx.calibration = {"seconds": 0, "slow_delay_ms": args.slow_delay_ms}
        if earlier and earlier["calibration"].get("slow_delay_ms") == args.slow_delay_ms:
            ctx.calibration = earlier["calibration"]
        if configs and "slow" in scenarios and not args.slow_delay_ms:
            ctx.calibration = calibrate(ctx, 2 if args.quick else 3)
            print("calibration: " + json.dumps(ctx.calibration), flush=True)
        rows, na = [], []
        for scenario in scenarios:
            runs = args.runs if scenario == "rolling_restart" else 1
            for config in configs:
                if scenario == "forced_open" and CONFIGS[config][0] != "--policy":
                    na.append(f"forced_open/{config}: no breaker to force on gRPC's channel")
                    continue
                for run in range(1, runs + 1):
                    t0 = time.monotonic()
                    try:
                        row = routing_cells.run_cell(ctx, scenario, config, run)
                    except Exception as e:  # pylint: disable=broad-except
                        print(f"cell {scenario}/{config}/{run} failed: {e}", flush=True)
                        continue
                    row["wall_s"] = round(time.monotonic() - t0, 1)
                    print(json.dumps(row), flush=True)
                    rows.append(row)
    ended = datetime.datetime.utcnow()
    result = {
        "seconds": args.seconds, "started": started.strftime("%Y-%m-%d %H:%M"),
        "ended": ended.strftime("%H:%M"), "load_before": load_before,
        "load_after": os.getloadavg()[0], "binaries": binaries(args.bin),
        "load": "concurrency 4, 80 % Gets over 1,000 keys",
        "calibration": ctx.calibration,
        "skipped": {c: skipped[c] for c in requested if c in skipped}, "not_applicable": na,
        "configs": {c: {"flag": CONFIGS[c][0], "file": CONFIGS[c][1]} for c in configs},
        "config_text": {c: CONFIGS[c][2] for c in requested},
        "rows": rows,
    }
    if earlier:
        merge(result, earlier, requested)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "routing.json"), "w") as f:
        json.dump(result, f, indent=1)
    routing_report.write_report(result, out)
    print(f"wrote {out}/routing.json and {out}/routing.md", flush=True)


if __name__ == "__main__":
    try:
        main()
    finally:
        cleanup()
