#!/usr/bin/env python3
"""Recovery after every replica was down (issue 40, item 8; docs/replicas.md).

Three cache_server replicas behind one `cache_client load` channel with the
README's replica file (round_robin, healthCheckConfig, retries, a three-state
breaker). After `--before` s of load all three are killed (SIGKILL) and
started again on the same ports `--down` s later. Per trial: the time from
the first replica listening again to the first call it answers (its metrics,
scraped every 10 ms), bounded by `--limit`.

  experiments/replicas/recovery.py --bin=build/examples/cache_service [--trials=12]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

from replicas import CONFIGS, free_port  # the README's file is CONFIGS["readme"]


def start_server(binary, port, metrics_port):
    for _ in range(100):
        proc = subprocess.Popen([binary, f"--port={port}", f"--metrics_port={metrics_port}"],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        if proc.stdout.readline().startswith("listening on"):
            return proc
        proc.wait()
        time.sleep(0.02)  # the port is still held: try again
    raise RuntimeError(f"cache_server on port {port} did not start")


def answered(metrics_port):
    """Calls the server answered so far (any status), or None."""
    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics",
                                      timeout=0.5).read().decode()
    except OSError:
        return None
    return sum(float(l.rsplit(" ", 1)[1]) for l in text.splitlines()
               if l.startswith("grpc_resilience_server_calls_total{") and "Health" not in l)


def trial(binaries, policy, args):
    server = os.path.join(binaries, "cache_server")
    ports = [(free_port(), free_port()) for _ in range(3)]
    procs = [start_server(server, p, m) for p, m in ports]
    target = "ipv4:" + ",".join(f"127.0.0.1:{p}" for p, _ in ports)
    total = args.before + args.down + args.limit + 2
    client = subprocess.Popen(
        [os.path.join(binaries, "cache_client"), f"--target={target}", f"--policy={policy}",
         "load", f"--duration={total}s", "--calls=0", f"--concurrency={args.concurrency}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(args.before)
        for proc in procs:
            proc.kill()
            proc.wait()
        time.sleep(args.down)
        back = None
        for i, (p, m) in enumerate(ports):
            procs[i] = start_server(server, p, m)
            if back is None:
                back = time.monotonic()
        first = None
        while time.monotonic() - back < args.limit:
            if any((answered(m) or 0) > 0 for _, m in ports):
                first = time.monotonic() - back
                break
            time.sleep(0.01)
        return first
    finally:
        client.kill()
        client.communicate()
        for proc in procs:
            proc.kill()
            proc.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", default="build/examples/cache_service")
    parser.add_argument("--trials", type=int, default=12)
    parser.add_argument("--before", type=float, default=2.0)
    parser.add_argument("--down", type=float, default=3.0)
    parser.add_argument("--limit", type=float, default=15.0)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--target_s", type=float, default=2.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        policy = os.path.join(workdir, "replicas.json")
        with open(policy, "w") as f:
            json.dump(CONFIGS["readme"], f)
        results = []
        for i in range(args.trials):
            took = trial(args.bin, policy, args)
            results.append(took)
            shown = "none" if took is None else f"{took:.2f} s"
            print(f"trial {i + 1}: first answer {shown} after the first replica was back",
                  flush=True)
    met = [t for t in results if t is not None and t <= args.target_s]
    known = [t for t in results if t is not None]
    print(f"within {args.target_s:g} s: {len(met)} of {len(results)}; "
          + (f"min {min(known):.2f} s, median {statistics.median(known):.2f} s, "
             f"max {max(known):.2f} s" if known else "no answer in any trial"))
    return 0 if len(met) == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
