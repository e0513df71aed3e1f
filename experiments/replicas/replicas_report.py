"""The replicas experiment's table (replicas.md) and chart (replicas.svg,
written by hand: matplotlib is not assumed)."""

import os

COLORS = ["#9e9e9e", "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2"]


def fmt(value, spec="{:.2f}", none="-"):
    return none if value is None else spec.format(value)


def write_table(rows, seconds, path):
    lines = [
        f"# Replicas experiment ({seconds:g} s per run, `scripts/replicas.sh`)",
        "",
        "Three `cache_server` replicas (A, B, C), one `cache_client load` channel to all "
        "three (concurrency 8, Store calls, 1 s deadline; failing_get: concurrency 4, "
        "80 % Gets). B is the bad one; see docs/replicas.md for the scenarios and "
        "configurations.",
        "",
        "| scenario | configuration | calls | share OK | failed | rejected locally | p99 ms "
        "| eject s | readmit s | first local rejection s | A / B / C served | A's share of A + C |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        served = " / ".join(fmt(n, "{:.0f}") for n in r.get("served", []))
        lines.append(
            f"| {r['scenario']} | {r['config']} | {r['calls']} | {r['share_ok']:.4f} "
            f"| {r['failed']} | {r['rejected_locally']} | {fmt(r['p99_ms'], '{:.1f}')} "
            f"| {fmt(r.get('eject_s'))} | {fmt(r.get('readmit_s'))} "
            f"| {fmt(r.get('first_local_rejection_s'))} | {served or '-'} "
            f"| {fmt(r.get('split_a'), '{:.3f}')} |")
    lines += ["", "eject: seconds from the start after which B got no more call while bad "
              "(- : it kept getting calls); readmit: seconds from B's restart, healthy, to its "
              "first call. served: the calls of the load's main method (Store; Get for "
              "failing_get) each replica served, as its metrics count them at the end (a "
              "replica restarted during the run counts from its restart); A's share of A + C: "
              "how the two healthy replicas split them (0.5 is even; issue 40's target 0.4-0.6).",
              ""]
    with open(path, "w") as f:
        f.write("\n".join(lines))


def write_chart(rows, configs, scenarios, path):
    """Grouped bars: share of calls OK per scenario, one bar per configuration."""
    width, height, left, bottom, top = 900, 360, 60, 70, 40
    plot_w, plot_h = width - left - 20, height - bottom - top
    group_w = plot_w / max(len(scenarios), 1)
    bar_w = group_w * 0.8 / max(len(configs), 1)
    lo = 0.5  # the axis starts at 50 % OK: the differences are at the top
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           'font-family="sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left}" y="20" font-size="14">Share of calls OK, one bad replica of three '
           '(axis from 0.5)</text>']
    for tick in (0.5, 0.6, 0.7, 0.8, 0.9, 1.0):
        y = top + plot_h * (1 - (tick - lo) / (1 - lo))
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" '
                   'stroke="#ddd"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{tick:.1f}</text>')
    by_key = {(r["scenario"], r["config"]): r for r in rows}
    for i, scenario in enumerate(scenarios):
        x0 = left + i * group_w + group_w * 0.1
        for j, config in enumerate(configs):
            r = by_key.get((scenario, config))
            if r is None:
                continue
            share = max(r["share_ok"], lo)
            h = plot_h * (share - lo) / (1 - lo)
            x = x0 + j * bar_w
            out.append(f'<rect x="{x:.1f}" y="{top + plot_h - h:.1f}" width="{bar_w - 1:.1f}" '
                       f'height="{h:.1f}" fill="{COLORS[j % len(COLORS)]}">'
                       f'<title>{scenario} / {config}: {r["share_ok"]:.4f}</title></rect>')
        out.append(f'<text x="{x0 + group_w * 0.4:.1f}" y="{top + plot_h + 16}" '
                   f'text-anchor="middle">{scenario}</text>')
    for j, config in enumerate(configs):
        x = left + j * 150
        out.append(f'<rect x="{x}" y="{height - 22}" width="12" height="12" '
                   f'fill="{COLORS[j % len(COLORS)]}"/>')
        out.append(f'<text x="{x + 16}" y="{height - 12}">{config}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def write_report(rows, configs, scenarios, seconds, out_dir):
    write_table(rows, seconds, os.path.join(out_dir, "replicas.md"))
    write_chart(rows, configs, scenarios, os.path.join(out_dir, "replicas.svg"))
