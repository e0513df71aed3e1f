"""The scenarios of the routing experiment (routing.py) and how one cell, a
(scenario, configuration, run), is run and reduced to its figures.

Replica B (index 1) is the bad one. Its faults are on Get (Stores are
served), except the half-capacity throttle and the forced-open breaker,
which are on both methods. Times are seconds from the client's start."""

import os
import time

from routing_cluster import GET, SERVICE, STORE, UNARY, Client, Replica

B = 1


def server_policy(kind, value=None):
    """A replica's policy file: healthy (nothing), failing (every Get
    UNAVAILABLE), slow (every Get delayed `value` ms), throttled (the
    service's calls at `value` per second)."""
    get = [{"service": SERVICE, "method": "Get"}]
    if kind == "healthy":
        return {"methodConfig": []}
    if kind == "failing":
        return {"methodConfig": [{"name": get, "faultInjection": {
            "abortCode": "UNAVAILABLE", "abortFraction": 1}}]}
    if kind == "slow":
        return {"methodConfig": [{"name": get, "faultInjection": {
            "delay": f"{value / 1000:.4f}s", "delayFraction": 1}}]}
    if kind == "throttled":
        # One bucket for Get and Store ({service} scope), a tenth of a
        # second of burst: the rate binds within the run, not after a
        # second's worth of calls.
        return {"methodConfig": [{"name": [{"service": SERVICE}], "throttle": {
            "ratePerSecond": value, "burst": max(1, int(value / 10))}}]}
    raise ValueError(kind)


HEALTHY, FAILING = server_policy("healthy"), server_policy("failing")


class Plan:
    """A scenario's course: the replicas' policies at the start, timed
    events, the client's run time and when B went bad (None: never)."""

    def __init__(self, seconds, initial=None, events=(), bad_from=None):
        self.seconds = seconds
        self.initial = initial or [HEALTHY, HEALTHY, HEALTHY]
        self.events = sorted(events, key=lambda e: e[0])
        self.bad_from = bad_from


def plan(scenario, seconds, calibration, warmup):  # pylint: disable=too-many-return-statements
    """The Plan of `scenario` for cells of `seconds`."""
    with_b = lambda policy: [HEALTHY, policy, HEALTHY]  # noqa: E731
    if scenario == "baseline":
        return Plan(seconds)
    if scenario == "failing_start":
        return Plan(seconds, with_b(FAILING), bad_from=0.0)
    if scenario == "failing_after":
        return Plan(2 * seconds, events=[(seconds, "policy", FAILING)], bad_from=seconds)
    if scenario == "slow":
        return Plan(seconds, with_b(server_policy("slow", calibration["slow_delay_ms"])),
                    bad_from=0.0)
    if scenario == "blackhole":
        return Plan(seconds, events=[(warmup, "stop", None)], bad_from=warmup)
    if scenario == "flapping":
        events = [(float(t), "policy", FAILING if t % 2 else HEALTHY)
                  for t in range(1, int(seconds))]
        return Plan(seconds, events=events, bad_from=1.0)
    if scenario == "half_capacity":
        # The limit is set after the warm-up from what B served in it (the
        # closed loop's rate depends on the configuration and the machine).
        return Plan(seconds, events=[(warmup, "halve", None)], bad_from=warmup)
    if scenario == "rolling_restart":
        step = (seconds - 2) / 3
        return Plan(seconds, events=[(1 + i * step, "term", i) for i in range(3)])
    if scenario == "forced_open":
        return Plan(seconds, events=[(warmup, "force_open", None)], bad_from=warmup + 0.1)
    raise ValueError(scenario)


def _sum(counts, methods, kind):
    if counts is None:
        return None
    return sum(counts.get((m, kind), 0) for m in methods)


def _delta(later, earlier, methods, kind):
    a, b = _sum(later, methods, kind), _sum(earlier, methods, kind)
    return None if a is None or b is None else a - b


def run_cell(ctx, scenario, config, run):
    """Runs one cell; its row of figures."""
    p = plan(scenario, ctx.seconds, ctx.calibration, ctx.warmup)
    tag = f"{scenario}_{config}_{run}"
    replicas = [Replica(ctx.server_bin, ctx.workdir, i) for i in range(3)]
    snaps, notes, client, extra = {}, [], None, {}
    try:
        for r, policy in zip(replicas, p.initial):
            r.start(policy)
        target = "ipv4:" + ",".join(r.address for r in replicas)
        start_counts = [r.counts() for r in replicas]
        flag, path = ctx.config_files[config]
        client = Client(ctx.client_bin, flag, path, target, p.seconds, ctx.load_args,
                        os.path.join(ctx.workdir, f"client_{tag}.log"))

        def snap(name):
            snaps[name] = {"t": round(client.elapsed(), 3),
                           "replicas": [r.counts() for r in replicas],
                           "client": client.calls_so_far()}

        for i, (t, action, arg) in enumerate(p.events):
            time.sleep(max(0.0, t - client.elapsed()))
            if action == "policy":
                snap(f"event{i}")
                replicas[B].set_policy(arg)
            elif action == "halve":
                snap(f"event{i}")
                served = _delta(snaps[f"event{i}"]["replicas"][B], start_counts[B], UNARY,
                                "attempts")
                rate = served / snaps[f"event{i}"]["t"]
                extra["half_rate"] = max(1, round(rate / 2))
                replicas[B].set_policy(server_policy("throttled", extra["half_rate"]))
                notes.append(f"B served {rate:.0f} calls/s in the warm-up: limited to "
                             f"{extra['half_rate']}/s")
            elif action == "stop":
                snap(f"event{i}")
                replicas[B].stop()
            elif action == "term":
                took = replicas[arg].term_and_restart()
                notes.append(f"replica {'ABC'[arg]} drained and exited in {took:.2f} s")
            elif action == "force_open":
                # Both methods' breakers for B; counted from 100 ms after
                # the second answer.
                endpoint = "ipv4:" + replicas[B].address
                answers = [client.force_open(endpoint, m) for m in UNARY]
                done = client.elapsed()
                notes.append(f"force_open at {t:.2f}-{done:.2f} s: " + "; ".join(
                    f"{m.rsplit('/', 1)[1]} applied={a.get('applied')}"
                    + ("" if a.get("applied") else f" ({a})") for m, a in zip(UNARY, answers)))
                time.sleep(max(0.0, done + 0.1 - client.elapsed()))
                snap(f"event{i}")
        load = client.wait()
        end_counts = [r.counts() for r in replicas]
        if replicas[B].stopped:
            replicas[B].cont()
            time.sleep(0.5)
            late = _delta(replicas[B].counts(), snaps["event0"]["replicas"][B], UNARY, "attempts")
            notes.append(f"B, after SIGCONT (the client gone), counted {late} attempts "
                         "since its SIGSTOP")
    finally:
        if client is not None and client.proc.poll() is None:
            client.proc.kill()
            client.proc.wait()
        for r in replicas:
            r.kill()
    # A replica that did not answer at the end (stopped): its last count.
    for i, counts in enumerate(end_counts):
        if counts is None:
            known = [v["replicas"][i] for v in sorted(snaps.values(), key=lambda v: v["t"])
                     if v["replicas"][i] is not None]
            end_counts[i] = known[-1] if known else None
    row = figures(scenario, config, run, p, load, start_counts, end_counts, snaps, notes,
                  client.library)
    row.update(extra)
    return row


def figures(scenario, config, run, p, load, start, end, snaps, notes, library):
    codes, calls = load["codes"], load["calls"]
    ok = codes.get("OK", 0) + codes.get("NOT_FOUND", 0)  # a miss is an answer
    row = {"scenario": scenario, "config": config, "run": run, "seconds": p.seconds,
           "calls": calls, "codes": codes, "ok": ok, "failed": calls - ok,
           "share_ok": ok / calls if calls else 0.0,
           "p50_ms": load["p50_ms"], "p99_ms": load["p99_ms"], "notes": notes}
    for k in ("rejected_locally", "client_retries", "attempt_timeouts", "retries_refused_budget"):
        if k in load:
            row[k] = load[k]
    per = [_delta(e, s, UNARY, "attempts") for s, e in zip(start, end)]
    retries = [_delta(e, s, UNARY, "retries") for s, e in zip(start, end)]
    row["attempts_received"] = per
    row["retries_received"] = retries
    received = sum(n or 0 for n in per)
    # Attempts that reached no process: a stopped B's (the library counts
    # them as attempts its per-attempt timeout ended; gRPC's own retry has no
    # per-attempt timeout, so each ends its call DEADLINE_EXCEEDED).
    stuck = 0
    if scenario == "blackhole":
        stuck = load.get("attempt_timeouts", 0) if library else codes.get("DEADLINE_EXCEEDED", 0)
    if library and calls:
        row["attempts_per_call"] = (calls + load.get("client_retries", 0)) / calls
    elif calls:
        row["attempts_per_call"] = (received + stuck) / calls
    row["attempts_source"] = "client" if library else "servers"
    # Retries received after B went bad, by where they landed.
    if p.bad_from is not None:
        first = snaps.get("event0") if p.bad_from > 0 else None
        base = first["replicas"] if first else start
        r_win = [_delta(e, s, UNARY, "retries") for s, e in zip(base, end)]
        known = [n for n in r_win if n is not None]
        others = sum(n or 0 for i, n in enumerate(r_win) if i != B)
        if sum(known) > 0:
            row["retries_elsewhere"] = others / sum(known)
        row["retries_in_bad_window"] = sum(known)
    row["bad_calls"] = bad_calls(scenario, p, load, start, end, snaps, library, stuck)
    if scenario == "failing_after":
        row.update(window(load, start, end, snaps.get("event0"), library))
    if scenario == "half_capacity":
        w = window(load, start, end, snaps.get("event0"), library, "RESOURCE_EXHAUSTED")
        row["calls_after_bad"], row["window_source"] = w["calls_after_bad"], w["window_source"]
        row["rejected_share"] = w["share_failed_after_bad"]
        row["b_rejected"] = _delta(end[B], snaps["event0"]["replicas"][B], UNARY, "rejected")
    return row


def bad_calls(scenario, p, load, start, end, snaps, library, stuck):
    """Attempts B received after it went bad (see routing.md for each)."""
    if scenario in ("failing_start", "slow"):
        return _delta(end[B], start[B], [GET], "attempts")
    if scenario == "failing_after":
        return _delta(end[B], snaps["event0"]["replicas"][B], [GET], "attempts")
    if scenario in ("forced_open", "half_capacity"):
        return _delta(end[B], snaps["event0"]["replicas"][B], UNARY, "attempts")
    if scenario == "blackhole":
        return stuck
    if scenario == "flapping":
        marks = [snaps[k]["replicas"][B] for k in sorted(snaps, key=lambda k: snaps[k]["t"])]
        marks.append(end[B])
        # Events alternate failing (odd seconds) and healthy; phase i runs
        # from mark i to mark i + 1.
        total = 0
        for i in range(0, len(marks) - 1, 2):
            d = _delta(marks[i + 1], marks[i], [GET], "attempts")
            if d is None:
                return None
            total += d
        return total
    return None


def window(load, start, end, at_bad, library, code=None):
    """Calls and failures (of `code`, or any) after B went bad: from the
    client's own counts at that moment, or (gRPC's channel, which has none)
    the calls after it estimated from the servers' first attempts."""
    calls = load["calls"]
    failing = (lambda c: c == code) if code else (lambda c: c not in ("OK", "NOT_FOUND"))
    failed = sum(v for c, v in load["codes"].items() if failing(c))
    if library and at_bad and at_bad["client"] is not None:
        before = at_bad["client"]
        calls_before = sum(before.values())
        failed_before = sum(v for c, v in before.items() if failing(c))
        after_calls, after_failed, source = calls - calls_before, failed - failed_before, "client"
    else:
        firsts = lambda c: (_sum(c, UNARY, "attempts") or 0) - (_sum(c, UNARY, "retries") or 0)  # noqa
        total = sum(firsts(e) - firsts(s) for s, e in zip(start, end))
        later = sum(firsts(e) - firsts(s) for s, e in zip(at_bad["replicas"], end)) if at_bad else 0
        after_calls = round(calls * later / total) if total else 0
        after_failed, source = failed, "servers (all failures counted after)"
    share = after_failed / after_calls if after_calls else None
    return {"calls_after_bad": after_calls, "failed_after_bad": after_failed,
            "share_ok_after_bad": None if share is None else 1 - share,
            "share_failed_after_bad": share, "window_source": source}
