"""The routing experiment's table (routing.md) with the routing issue's
targets checked per cell."""

import os
import re

SCENARIO_TEXT = {
    "baseline": "all three healthy",
    "failing_start": "B fails every Get (UNAVAILABLE) from the start",
    "failing_after": "B healthy, then fails every Get (its policy file rewritten, reloaded)",
    "slow": "B delays every Get (no errors)",
    "blackhole": "B stopped (SIGSTOP) after the warm-up, SIGCONT after the run",
    "flapping": "B fails every Get for 1 s, then serves for 1 s, and so on",
    "half_capacity": "after the warm-up, B throttled to half the calls/s it served in it "
                     "(ratePerSecond on its service scope, burst a tenth of it; "
                     "RESOURCE_EXHAUSTED with a pushback beyond)",
    "rolling_restart": "A, B, C in turn drained (SIGTERM) and restarted on the same port",
    "forced_open": "B's endpoint breaker forced open for Get and Store (admin endpoint)",
}


def fmt(value, spec="{:.2f}"):
    return "-" if value is None else spec.format(value)


def target(row, baseline_p99):
    """(what the issue asks of this cell, True/False/None)."""
    s = row["scenario"]
    elsewhere = row.get("retries_elsewhere")
    if s in ("failing_start", "failing_after", "flapping"):
        share = row["share_ok"] if s == "failing_start" else row.get("share_ok_after_bad")
        checks, text = [], []
        if s != "flapping":
            checks.append(share is not None and share >= 0.999)
            text.append("OK ≥ 0.999" + (" after B went bad" if s == "failing_after" else ""))
        checks.append(elsewhere is None or elsewhere >= 0.99)
        text.append("retries elsewhere ≥ 0.99")
        return ", ".join(text), all(checks)
    if s == "slow":
        if baseline_p99 is None:
            return "p99 ≤ 1.5× baseline (no baseline run)", None
        ok = (row["p99_ms"] is not None and row["p99_ms"] <= 1.5 * baseline_p99
              and row.get("attempts_per_call", 99) <= 1.05)
        return f"p99 ≤ {1.5 * baseline_p99:.1f} ms (1.5× baseline), ≤ 1.05 attempts/call", ok
    if s == "blackhole":
        return "OK ≥ 0.995", row["share_ok"] >= 0.995
    if s == "half_capacity":
        share = row.get("rejected_share")
        return "≤ 1 % rejected", share is not None and share <= 0.01
    if s == "rolling_restart":
        return "0 failed (each of 3 runs)", row["failed"] == 0
    if s == "forced_open":
        return "0 attempts at B from 100 ms after the command", row.get("bad_calls") == 0
    return "-", None


def write_markdown(result, path):
    rows, cal, skipped = result["rows"], result["calibration"], result["skipped"]
    baselines = {r["config"]: r["p99_ms"] for r in rows if r["scenario"] == "baseline"}
    lines = [
        f"# Routing experiment ({result['seconds']:g} s per cell, "
        "`experiments/replicas/routing.py`)",
        "",
        f"Run {result['started']} – {result['ended']} UTC, load average "
        f"{result['load_before']:.1f} before, {result['load_after']:.1f} after (2 cores; "
        "other work ran beside it, so the figures are indicative). Three `cache_server` "
        "replicas A, B, C on loopback, one `cache_client load` channel to all three "
        f"(`ipv4:` list, {result['load']}, 1 s deadline); B is the bad one. Binaries: "
        f"{result['binaries']}.",
        "",
    ]
    if result.get("earlier_run"):
        e = result["earlier_run"]
        lines += [f"The rows of {', '.join(e['configs'])} are from an earlier run ({e['started']} – {e['ended']} UTC, load average "
                  f"{e['load_before']:.1f} / {e['load_after']:.1f}, binaries {e['binaries']}).",
                  ""]
    lines += [
        (f"Calibration (healthy replicas, Gets only, gRPC's channel, {cal['seconds']:g} s): "
         f"Get p50 {fmt(cal.get('get_p50_ms'), '{:.3f}')} ms → slow delay "
         f"**{fmt(cal.get('slow_delay_ms'), '{:.1f}')} ms** (10× p50, at least 5 ms)."
         if cal.get("seconds") else
         f"Slow delay {fmt(cal.get('slow_delay_ms'), '{:.1f}')} ms (given)."),
        "",
        "| scenario | configuration | run | calls | share OK | p50 ms | p99 ms | attempts / call "
        "| retries to another endpoint | to B after it went bad | target | met |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for r in rows:
        text, ok = target(r, baselines.get(r["config"]))
        share = f"{r['share_ok']:.4f}"
        if r.get("share_ok_after_bad") is not None:
            share += f" ({r['share_ok_after_bad']:.4f} after)"
        if r.get("rejected_share") is not None:
            share += f" ({r['rejected_share']:.4f} rejected after the limit)"
        elsewhere = fmt(r.get("retries_elsewhere"), "{:.3f}")
        if r.get("retries_in_bad_window") is not None:
            elsewhere += f" of {r['retries_in_bad_window']:.0f}"
        lines.append(
            f"| {r['scenario']} | {r['config']} | {r['run']} | {r['calls']} | {share} "
            f"| {fmt(r['p50_ms'], '{:.2f}')} | {fmt(r['p99_ms'], '{:.1f}')} "
            f"| {fmt(r.get('attempts_per_call'), '{:.3f}')} | {elsewhere} "
            f"| {fmt(r.get('bad_calls'), '{:.0f}')} | {text} "
            f"| {'-' if ok is None else ('**yes**' if ok else 'no')} |")
    for config, why in skipped.items():
        why = re.sub(r"/\S*/routing-work-[^/]*/", "", why)  # the run's temporary directory
        lines.append(f"| every scenario | {config} | | | | | | | | | skipped: {why} | |")
    for what in result.get("not_applicable", []):
        lines.append(f"| {what.split('/')[0]} | {what.split('/')[1].split(':')[0]} | | | | | | "
                     f"| | | not applicable: {what.split(': ', 1)[1]} | |")
    lines += ["", "Scenarios:", ""]
    lines += [f"- `{s}`: {t}" for s, t in SCENARIO_TEXT.items()
              if any(r["scenario"] == s for r in rows)]
    lines += ["", "Configurations:", ""]
    lines += [f"- `{c}`: {d}" for c, d in result["config_text"].items()]
    lines += ["", NOTES, ""]
    with open(path, "w") as f:
        f.write("\n".join(lines))


NOTES = """How the figures are made:

- share OK: calls answered OK or NOT_FOUND (a miss of a replica's own cache is an
  answer) of all calls, from the load's report; `failing_after` also gives the share
  after B went bad (the client's own counts at that moment; for gRPC's channel, which
  has none, the calls after it estimated from the first attempts the servers received
  then, every failure counted after). `half_capacity`: the share of the calls after B's
  limit was set that ended RESOURCE_EXHAUSTED (the same way).
- attempts / call: the library's own count, (calls + retries) / calls; for gRPC's
  channel, the attempts the three servers received (and, black-holed, each call that
  ended DEADLINE_EXCEEDED at the stopped B) over the calls.
- retries to another endpoint: of the retries the servers received after B went bad
  (each `cache_server` counts the attempts it receives with `grpc-previous-rpc-attempts`
  above 0), those A and C received, "of N" retries in all. B black-holed counts
  nothing, so there the share is of those A and C received. Retries of a call whose
  earlier attempt was on A or C are counted too: with only B failing there are none.
- to B after it went bad: the attempts B received after it went bad (Gets; both methods
  for `half_capacity` and `forced_open`, there from 100 ms after the command;
  `flapping`: Gets in its failing seconds). Black-holed: the attempts that reached it
  and never came back: the library's attempts ended by their per-attempt timeout,
  gRPC's calls ended DEADLINE_EXCEEDED.
- The slow target compares p99 with the same configuration's `baseline` p99."""


def write_report(result, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    write_markdown(result, os.path.join(out_dir, "routing.md"))
