#!/usr/bin/env bash
# What an operator sees: runs cache_server and `cache_client load` with
# --metrics_port, scraped every second by a real Prometheus (Debian's binary,
# our own process on free ports, not the package's daemon), through a backend
# that fails half of its calls for a while (injected aborts) and recovers;
# then asks Prometheus for a few series (query_range) and draws them:
# client calls per second by status code, local rejections, the breakers'
# state, server rejections by cause.
#
#   scripts/operator_view.sh [OUT.png]     default docs/results/operator_view.png
#
# Installs what is missing (the build's packages, prometheus,
# python3-matplotlib), builds the two binaries in build/ (OPERATOR_VIEW_BUILD_DIR
# to use another), runs for about 50 s. The breaker transitions and throttle
# events the binaries print on stderr are shown at the end.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

out="${1:-$REPO_ROOT/docs/results/operator_view.png}"
build_dir="${OPERATOR_VIEW_BUILD_DIR:-$REPO_ROOT/build}"

ensure_packages "${REQUIRED_PACKAGES[@]}" python3-matplotlib
configure_and_build "$build_dir" grpc_resilience_cache_server
configure_and_build "$build_dir" grpc_resilience_cache_client

log "running the scenario with Prometheus (about 50 s)"
# Debian's python3, where python3-matplotlib is installed (not one earlier on PATH).
/usr/bin/python3 - "$REPO_ROOT" "$build_dir/examples/cache_service" "$out" <<'PY'
import json
import os
import sys
import tempfile
import time

repo, bin_dir, out = sys.argv[1:4]
sys.path.insert(0, os.path.join(repo, "tests", "e2e"))
import prometheus_harness as h  # noqa: E402

import matplotlib  # noqa: E402
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HEALTHY_S, FAILING_S, RECOVERY_S = 12, 15, 15

SERVER = {"name": [{"service": "cache.v1.CacheService"}], "throttle": {"maxConcurrency": 64}}
SERVER_HEALTHY = {"methodConfig": [SERVER]}
SERVER_FAILING = {"methodConfig": [dict(SERVER, faultInjection={
    "abortCode": "UNAVAILABLE", "abortFraction": 0.5, "seed": 7})]}
# The three-state breaker of tests/e2e/prometheus_scrape_test.py, with a
# longer open period so that the states last long enough to be seen at a 1 s
# scrape interval. waitForReady: while the server restarts (a deploy, here
# how the failures start and stop) calls wait for it instead of failing, so
# that what opens the breaker is the injected failures, not the restarts.
CLIENT = {"methodConfig": [{
    "name": [{"service": "cache.v1.CacheService"}],
    "timeout": "5s",
    "waitForReady": True,
    "breaker": {"threeState": {
        "failureRateThreshold": 0.3, "minRequests": 20, "window": "2s", "buckets": 10,
        "openDuration": "1.5s", "openDurationMultiplier": 1,
        "halfOpenMaxProbes": 1, "halfOpenSuccessesToClose": 3, "probeInterval": "0.05s"}},
}]}


def write(directory, name, value):
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        json.dump(value, f)
    return path


server_bin = os.path.join(bin_dir, "cache_server")
client_bin = os.path.join(bin_dir, "cache_client")
prometheus = h.find_prometheus()
if not prometheus:
    sys.exit("operator_view: no prometheus binary (Debian package prometheus)")

with tempfile.TemporaryDirectory(prefix="operator_view.") as tmp, h.Processes() as processes:
    healthy = write(tmp, "server_healthy.json", SERVER_HEALTHY)
    failing = write(tmp, "server_failing.json", SERVER_FAILING)
    client_policy = write(tmp, "client.json", CLIENT)
    server_metrics, client_metrics, prometheus_port = h.free_port(), h.free_port(), h.free_port()
    servers = []
    server, target = h.start_cache_server(processes, server_bin, healthy, server_metrics)
    servers.append(server)
    port = int(target.rsplit(":", 1)[1])
    total = HEALTHY_S + FAILING_S + RECOVERY_S + 20
    client = h.start_load(processes, client_bin, target, client_policy, client_metrics,
                          seconds=total)
    api = h.start_prometheus(processes, prometheus, tmp,
                             {"cache_server": "127.0.0.1:%d" % server_metrics,
                              "cache_client": "127.0.0.1:%d" % client_metrics},
                             prometheus_port)
    if not api.wait_until(lambda: api.all_targets_up(2), 20):
        sys.exit("operator_view: Prometheus did not scrape both targets")
    time.sleep(2)
    t0 = time.time()
    print("t=0: healthy backend", flush=True)
    time.sleep(HEALTHY_S)

    def restart(policy, name):
        servers[-1].stop()
        server, _ = h.start_cache_server(processes, server_bin, policy, server_metrics,
                                         port=port, name=name)
        servers.append(server)

    failing_at = time.time() - t0
    restart(failing, "cache_server (failing)")
    print("t=%.0f: backend restarted, failing half of its calls" % failing_at, flush=True)
    time.sleep(FAILING_S)
    healthy_at = time.time() - t0
    restart(healthy, "cache_server (healthy)")
    print("t=%.0f: backend restarted, healthy" % healthy_at, flush=True)
    time.sleep(RECOVERY_S)
    t1 = time.time()
    time.sleep(2)  # the last scrapes

    def series(expr, key):
        return {labels.get(key, ""): points
                for labels, points in api.query_range(expr, t0, t1, 1)}

    rate = "[3s]"
    calls = series('sum by (grpc_code) (rate(grpc_resilience_client_calls_total%s))' % rate,
                   "grpc_code")
    local = series('sum by (cause) (rate(grpc_resilience_client_local_rejections_total%s))'
                   % rate, "cause")
    attempts = series('sum(rate(grpc_resilience_client_attempts_total%s))'
                      ' - (sum(rate(grpc_resilience_client_local_rejections_total%s)) or vector(0))'
                      % (rate, rate), "")
    state = series('2 * max by (grpc_method) '
                   '(grpc_resilience_client_breaker_state{state="open"})'
                   ' + on (grpc_method) max by (grpc_method) '
                   '(grpc_resilience_client_breaker_state{state="half-open"})', "grpc_method")
    server_rejections = series('sum by (cause) (rate(grpc_resilience_server_rejections_total%s))'
                               % rate, "cause")
    server_calls = series('sum(rate(grpc_resilience_server_calls_total%s))' % rate, "")
    events = [l for c in [client] + servers for l in c.stderr.lines()
              if " breaker " in l or " throttle " in l]

fig, axes = plt.subplots(4, 1, figsize=(10, 10.5), sharex=True)


def plot(ax, data, label_of, **kwargs):
    for key in sorted(data):
        points = data[key]
        ax.plot([t - t0 for t, _ in points], [v for _, v in points], label=label_of(key),
                **kwargs)


def shade(ax):
    ax.axvspan(failing_at, healthy_at, color="tab:red", alpha=0.08, lw=0)
    for at in (failing_at, healthy_at):
        ax.axvline(at, color="gray", ls=":", lw=1)
    ax.grid(alpha=0.3)


ax = axes[0]
plot(ax, calls, lambda code: code)
ax.set_yscale("symlog", linthresh=10)
ax.set_ylabel("calls/s")
ax.set_title("client: rate(grpc_resilience_client_calls_total[3s]) by grpc_code", loc="left",
             fontsize=10)
ax.legend(loc="upper left", fontsize=8, ncol=3)
shade(ax)

ax = axes[1]
plot(ax, local, lambda cause: "rejected locally (%s)" % cause, color="tab:orange")
plot(ax, attempts, lambda _: "attempts sent to the server", color="tab:blue")
ax.set_yscale("symlog", linthresh=10)
ax.set_ylabel("attempts/s")
ax.set_title("client: local_rejections_total and attempts_total (rate over 3s)", loc="left",
             fontsize=10)
ax.legend(loc="upper left", fontsize=8)
shade(ax)

ax = axes[2]
for (key, style) in zip(sorted(state), ({"lw": 4, "alpha": 0.5}, {"lw": 1.5, "ls": "--"})):
    points = state[key]
    ax.step([t - t0 for t, _ in points], [v for _, v in points], where="post",
            label=key.rsplit("/", 1)[-1], **style)
ax.set_yticks([0, 1, 2])
ax.set_yticklabels(["closed", "half-open", "open"])
ax.set_ylim(-0.3, 2.3)
ax.set_title("client: grpc_resilience_client_breaker_state per method (scraped every 1 s)",
             loc="left", fontsize=10)
ax.legend(loc="upper left", fontsize=8)
shade(ax)
ax.text((failing_at + healthy_at) / 2, 1, "server restarted with faultInjection:\n"
        "50% of calls aborted UNAVAILABLE", ha="center", va="center", fontsize=9,
        color="tab:red")
ax.text(failing_at, 2.25, " restart", fontsize=8, color="gray", va="top")
ax.text(healthy_at, 2.25, " restart (healthy)", fontsize=8, color="gray", va="top")

ax = axes[3]
plot(ax, server_rejections, lambda cause: "rejected: %s" % cause)
plot(ax, server_calls, lambda _: "all calls answered", color="gray", ls="--")
ax.set_yscale("symlog", linthresh=10)
ax.set_ylabel("calls/s")
ax.set_title("server: rejections_total by cause and calls_total (rate over 3s): "
             "the open breakers keep the load off it", loc="left", fontsize=10)
ax.legend(loc="upper left", fontsize=8)
ax.set_xlabel("seconds (Prometheus query_range, step 1 s)")
shade(ax)

fig.suptitle("What operators see: cache_client load against cache_server, "
             "scraped by Prometheus", fontsize=11)
fig.tight_layout()
fig.savefig(out, dpi=80)
print("wrote %s" % out)
print("events on stderr (%d lines), the first ones:" % len(events))
for line in events[:8]:
    print("  " + line)
PY
