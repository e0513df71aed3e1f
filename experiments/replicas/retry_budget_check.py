#!/usr/bin/env python3
"""Issue 40 item 2 with the real binaries (docs/endpoint-breakers.md, "The retry
budget and one bad endpoint"): three cache_server replicas, the
middle one aborting every Get UNAVAILABLE (from the start, or after --healthy_s),
cache_client load --get_fraction=1 with round_robin, 3 attempts on
UNAVAILABLE, threeState {}, no healthCheckConfig. Prints calls, OK, retries
and the last scraped retries_refused_total{reason="budget"}.

  experiments/replicas/retry_budget_check.py --bin=build/examples/cache_service \
      [--calls=600 | --duration=6s [--healthy_s=3]] [--concurrency=4] [--picker]

--picker puts the library's own picker first in loadBalancingConfig
({"resilience_p2c": {}}, then round_robin): the scenario with the routing.
--runs=N repeats the whole run (fresh servers and client each time) and ends
with one line: the failed calls and the budget's refusals (the client's own
final count) of each run, and in how many runs >= 99 % of the calls were OK.
"""
import argparse, json, os, re, signal, socket, subprocess, tempfile, threading, time, urllib.request

NAME = [{"service": "cache.v1.CacheService"}]

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0)); return s.getsockname()[1]

def server_policy(failing):
    if failing:
        return {"methodConfig": [{"name": [{"service": "cache.v1.CacheService", "method": "Get"}],
                                  "faultInjection": {"abortCode": "UNAVAILABLE", "abortFraction": 1}}]}
    return {"methodConfig": [{"name": NAME, "faultInjection": {"delay": "0.002s", "delayFraction": 1}}]}

def start(binary, port, path):
    for _ in range(50):
        p = subprocess.Popen([binary, f"--port={port}", f"--policy={path}"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        if p.stdout.readline().startswith("listening on"):
            return p
        p.wait(); time.sleep(0.05)
    raise RuntimeError("no start")

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--calls", type=int, default=600)
    ap.add_argument("--duration", default="")
    ap.add_argument("--healthy_s", type=float, default=0)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--picker", action="store_true")
    ap.add_argument("--runs", type=int, default=1)
    a = ap.parse_args()
    results = [run(a) for _ in range(a.runs)]
    if a.runs > 1:
        ok99 = sum(1 for calls, failed, _ in results if calls and failed <= calls / 100)
        print(f"runs {a.runs}: failed {[f for _, f, _ in results]} "
              f"budget refused {[r for _, _, r in results]} "
              f">= 99 % OK in {ok99} of {a.runs}")

def run(a):
    work = tempfile.mkdtemp()
    ports = [free_port() for _ in range(3)]
    procs = []
    paths = []
    for i, port in enumerate(ports):
        path = os.path.join(work, f"s{i}.json")
        with open(path, "w") as f:
            json.dump(server_policy(i == 1 and a.healthy_s == 0), f)
        paths.append(path)
        procs.append(start(os.path.join(a.bin, "cache_server"), port, path))
    lb = ([{"resilience_p2c": {}}] if a.picker else []) + [{"round_robin": {}}]
    client_policy = {"loadBalancingConfig": lb,
                     "methodConfig": [{"name": NAME, "timeout": "1s",
                                       "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.01s",
                                                       "maxBackoff": "0.1s", "backoffMultiplier": 2,
                                                       "retryableStatusCodes": ["UNAVAILABLE"]},
                                       "breaker": {"threeState": {}}}]}
    cpath = os.path.join(work, "client.json")
    with open(cpath, "w") as f:
        json.dump(client_policy, f)
    mport = free_port()
    target = "ipv4:" + ",".join(f"127.0.0.1:{p}" for p in ports)
    args = [os.path.join(a.bin, "cache_client"), f"--target={target}", f"--policy={cpath}",
            f"--metrics_port={mport}", "load", "--get_fraction=1", "--keys=100",
            f"--concurrency={a.concurrency}"]
    args += [f"--duration={a.duration}", "--calls=0"] if a.duration else [f"--calls={a.calls}"]
    client = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    last = {}
    stop = threading.Event()
    def scrape():
        while not stop.is_set():
            try:
                text = urllib.request.urlopen(f"http://127.0.0.1:{mport}/metrics", timeout=0.5).read().decode()
                for l in text.splitlines():
                    if l.startswith("grpc_resilience_client_retries_refused_total") and 'reason="budget"' in l and "Get" in l:
                        last["budget"] = float(l.rsplit(" ", 1)[1])
                    if l.startswith("grpc_resilience_client_endpoint_breakers") and "Get" in l and not l.endswith(" 0"):
                        last.setdefault("ep", set()).add(l)
            except OSError:
                pass
            stop.wait(0.1)
    t = threading.Thread(target=scrape); t.start()
    if a.healthy_s:
        time.sleep(a.healthy_s)
        with open(paths[1], "w") as f:
            json.dump(server_policy(True), f)
        procs[1].send_signal(signal.SIGHUP)
    out, err = client.communicate(timeout=120)
    stop.set(); t.join()
    for p in procs:
        p.kill()
    calls = re.search(r"calls: (\d+) in", out)
    # A Get of a key not stored is NOT_FOUND: an answer, not a failure.
    codes = {c: int(n) for c, n in re.findall(r"^  ([A-Z_]+)\s+(\d+)$", out, re.M)}
    failed = sum(n for c, n in codes.items() if c not in ("OK", "NOT_FOUND"))
    cl = re.search(r"client: .*", out)
    refused = re.search(r"(\d+) retries refused by the budget", out)
    print(f"calls {calls.group(1) if calls else '?'} failed {failed} "
          f"{cl.group(0) if cl else ''} budget_refused(last scrape) {last.get('budget')}")
    for l in sorted(last.get("ep", [])):
        print("  ", l)
    print(out)
    return (int(calls.group(1)) if calls else 0, failed,
            int(refused.group(1)) if refused else None)

main()
