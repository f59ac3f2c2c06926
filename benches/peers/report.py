#!/usr/bin/env python3
"""Merges the measurements of scripts/bench-peers.sh into one table and one JSON file (stdlib only).

    report.py PARTS_DIR --mode quick|full --out results/bench/TIMESTAMP.json

PARTS_DIR holds one JSON file per measurement (written by the script and its helpers) plus notes.txt.
Every ratio is gpassk's figure over the peer's, so > 1 means gpassk is faster.
"""
import argparse
import datetime as dt
import json
import os
import platform
import statistics
import subprocess


def load(parts, name):
    path = os.path.join(parts, name + ".json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def median_run(parts, name):
    """Of the runs NAME_1, NAME_2, … (measure.py outputs), the one with the median wall time, with
    every run's wall time in `walls`; None without any."""
    runs = []
    while (r := load(parts, f"{name}_{len(runs) + 1}")) is not None:
        runs.append(r)
    if not runs:
        return None
    mid = sorted(runs, key=lambda r: r["wall_s"])[(len(runs) - 1) // 2]
    return dict(mid, walls=[r["wall_s"] for r in runs])


def fmt(x, unit=""):
    if x is None:
        return "—"
    if isinstance(x, str):
        return x
    if abs(x) >= 100:
        s = f"{x:,.0f}"
    elif abs(x) >= 1:
        s = f"{x:.2f}"
    elif x == 0:
        s = "0"
    else:
        s = f"{x:.3g}"
    return f"{s} {unit}".strip()


def rate(span):
    """Units per second over a checkpoint's sampling span (None without one)."""
    return span["units"] / span["span_s"] if span and span["span_s"] > 0 else None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("parts")
    p.add_argument("--mode", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--benchmarks-md", help="full mode: rewrite this file's latest-run section")
    a = p.parse_args()
    P = lambda name: load(a.parts, name)  # noqa: E731
    notes_path = os.path.join(a.parts, "notes.txt")
    notes = open(notes_path).read().splitlines() if os.path.exists(notes_path) else []
    full = a.mode == "full"
    rows, checks = [], []

    def row(bench, tool, figure, unit, rss=None, extra=""):
        rows.append({"benchmark": bench, "tool": tool, "figure": figure, "unit": unit,
                     "peak_rss_mb": rss, "detail": extra})

    def check(name, value, op, target, applies=True, why=""):
        if not full:
            applies, why = False, "quick mode: smoke sizes, not judged"
        met = None
        if value is not None and applies:
            met = value >= target if op == ">=" else value <= target if op == "<=" else value < target
        checks.append({"target": name, "value": value, "op": op, "goal": target,
                       "met": met, "note": why if not applies else ""})

    # 1. Runner throughput. The ratio to the load generator is the median over rounds that each ran the load
    # generator, then `gpassk run`, back to back.
    rounds = []
    while P(f"runner_round{len(rounds) + 1}_span"):
        r = len(rounds) + 1
        rounds.append((P(f"runner_round{r}_loadgen"), P(f"runner_round{r}_loadgen_measure"),
                       rate(P(f"runner_round{r}_span"))))
    lg_rates = [lg["req_per_s"] for lg, _, _ in rounds if lg]
    round_rates = [g for _, _, g in rounds if g]
    ratios = [g / lg["req_per_s"] for lg, _, g in rounds if lg and g]
    py, py_meas = P("runner_openai"), P("runner_openai_measure")
    run, run_meas = P("runner_gpassk_span"), P("runner_gpassk_measure")
    py_rps = py and py.get("req_per_s")
    g_rps = rate(run)
    listed = lambda xs, f: ", ".join(f.format(x) for x in xs)  # noqa: E731
    rounds_of = lambda xs: f"{len(xs)} round" + ("s" if len(xs) != 1 else "")  # noqa: E731
    if lg_rates:
        lg, lg_meas, _ = next(r for r in rounds if r[0])
        row("runner", f"{lg['tool']} (raw HTTP load, ceiling)", statistics.median(lg_rates), "req/s",
            lg_meas and lg_meas["peak_rss_mb"],
            f"median of {rounds_of(lg_rates)} of {lg.get('secs', '?')} s: {listed(lg_rates, '{:,.0f}')} req/s")
    if round_rates:
        units = P("runner_round1_span")["units"]
        row("runner", "gpassk run, each round right after the load generator", statistics.median(round_rates),
            "req/s", None, f"median of {rounds_of(round_rates)} of {units} units: {listed(round_rates, '{:,.0f}')} "
            f"req/s; ratios {listed(ratios, '{:.3f}')}")
    if py:
        row("runner", "OpenAI SDK AsyncOpenAI + semaphore", py_rps, "req/s",
            py_meas and py_meas["peak_rss_mb"], f"{py['requests']} requests, {py['errors']} errors")
    if run:
        row("runner", "gpassk run (checkpointing on)", g_rps, "req/s", run_meas and run_meas["peak_rss_mb"],
            f"{run['units']} units sampled in {run['span_s']:.2f} s; whole run incl. grading "
            f"{run_meas['wall_s']:.1f} s ({fmt(run_meas.get('cpu_s'))} CPU s), exit {run_meas['exit']}")
    check("runner: gpassk / load generator (median of rounds)", statistics.median(ratios) if ratios else None,
          ">=", 0.6)
    check("runner: gpassk / OpenAI SDK", g_rps / py_rps if g_rps and py_rps else None, ">=", 50)
    check("runner: gpassk req/s", g_rps, ">=", 20000)
    units = run and run["units"]
    check("runner: gpassk peak RSS MB, 1,000,000-unit run", run_meas and run_meas["peak_rss_mb"], "<=", 110,
          applies=bool(units and units >= 1_000_000), why=f"quick mode: {units} units only")

    # 2. Grading.
    mv, gg, gv = P("grade_mathverify"), median_run(a.parts, "grade_gpassk_measure"), P("grade_gpassk_info")
    mv_cps = mv and mv["cases_per_s"]
    g_cps = gg and gv and gv["cases"] / gg["wall_s"]
    if mv:
        row("grading", "Math-Verify parse + verify", mv_cps, "cases/s", None,
            f"{mv['cases']} cases; {mv['agree_expected']}/{mv['cases']} agree with the labels")
    if gg:
        each_cps = ", ".join(f"{gv['cases'] / w:,.0f}" for w in gg["walls"])
        row("grading", "gpassk grade --cases", g_cps, "cases/s", gg["peak_rss_mb"],
            f"{gv['cases']} cases ({gv['repeat']}× the file, one process, wall time incl. start-up; median of "
            f"{len(gg['walls'])} runs: {each_cps} cases/s); "
            f"{gv['agree_expected']}/{gv['labelled']} agree with the labels")
    agreement = None
    if mv and gv:
        n = min(len(mv["verdicts"]), len(gv["verdicts"]))
        same = sum(x == y for x, y in zip(mv["verdicts"][:n], gv["verdicts"][:n]))
        agreement = same / n if n else None
        row("grading", "agreement gpassk vs Math-Verify", agreement * 100 if agreement is not None else None,
            "% of cases", None, f"{same}/{n} same verdict")
    check("grading: gpassk / Math-Verify", g_cps / mv_cps if g_cps and mv_cps else None, ">=", 2800)

    # 3. Metrics.
    sp, gm = P("metrics_scipy"), P("metrics_gpassk")
    g_pps = gm and gm["problems"] / gm["secs_uncached"]
    if sp:
        row("metrics", "SciPy hypergeom.sf per problem and threshold", sp["problems_per_s"], "problems/s", None,
            f"{sp['problems']} problems (n=48, k=16), 5 thresholds + mG")
    if gm:
        row("metrics", "gpassk exact (per problem, uncached)", g_pps, "problems/s", None,
            f"cached per (n, k) as in scoring: {gm['problems'] / gm['secs_cached']:,.0f} problems/s")
    if sp:
        row("metrics", "largest |SciPy − gpassk exact|", sp["max_abs_diff"], "", None,
            json.dumps(sp["worst"]) if sp["worst"] else "identical")
    check("metrics: gpassk / SciPy", g_pps / sp["problems_per_s"] if g_pps and sp else None, ">=", 50)
    check("metrics: largest difference", sp and sp["max_abs_diff"], "<=", 1e-12)

    # 4. Re-scoring.
    rs, rsi = median_run(a.parts, "rescore_measure"), P("rescore_info")
    if rs:
        row("re-scoring", rsi["how"], rs["wall_s"], "s", rs["peak_rss_mb"],
            f"{rsi['samples']} stored samples; median of {len(rs['walls'])} runs "
            f"({', '.join(f'{w:.2f}' for w in rs['walls'])} s); {fmt(rs.get('cpu_s'))} CPU s (user + system); "
            f"exit {rs['exit']}")
    big = bool(rsi and rsi["samples"] >= 1_000_000)
    why = f"quick mode: {rsi and rsi['samples']} samples only"
    check("re-scoring: wall s, 1,000,000 samples", rs and rs["wall_s"], "<=", 5, applies=big, why=why)
    check("re-scoring: peak RSS MB", rs and rs["peak_rss_mb"], "<", 500, applies=big, why=why)

    # 5. Import.
    im, imi = P("import_measure"), P("import_info")
    if im:
        row("import", "gpassk import jsonl (read, write the run, grade, score, report)", im["wall_s"], "s",
            im["peak_rss_mb"], f"{imi['samples']} samples, {imi['bytes'] / 1e6:.0f} MB of JSONL; "
            f"{fmt(im.get('cpu_s'))} CPU s; exit {im['exit']}")
    big = bool(imi and imi["samples"] >= 1_000_000)
    check("import: wall s, 1,000,000 samples", im and im["wall_s"], "<", 20, applies=big,
          why=f"quick mode: {imi and imi['samples']} samples only")

    # Print.
    print()
    print(f"gpassk side-by-side benchmarks ({a.mode} mode, {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC, "
          f"{os.cpu_count()} cores)")
    w = [11, 52, 18, 10, 60]
    head = ["benchmark", "tool", "figure", "peak RSS", "detail"]
    print("  ".join(h.ljust(x) for h, x in zip(head, w)).rstrip())
    print("  ".join("-" * x for x in w))
    for r in rows:
        cells = [r["benchmark"], r["tool"], fmt(r["figure"], r["unit"]),
                 fmt(r["peak_rss_mb"], "MB") if r["peak_rss_mb"] is not None else "", r["detail"]]
        print("  ".join(str(c).ljust(x) for c, x in zip(cells, w)).rstrip())
    print()
    print("targets")
    for c in checks:
        mark = {True: "met", False: "MISSED", None: "not measured"}[c["met"]]
        if c["note"]:
            mark = f"n/a ({c['note']})"
        print(f"  {c['target']:<52} {fmt(c['value']):>14}  (goal {c['op']} {fmt(c['goal'])})  {mark}")
    if notes:
        print()
        print("notes")
        for n in notes:
            print(f"  - {n}")

    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = None
    raw = {}
    for f in sorted(os.listdir(a.parts)):
        if f.endswith(".json"):
            d = load(a.parts, f[:-5])
            if isinstance(d, dict):
                d = {k: v for k, v in d.items() if k not in ("verdicts", "values")}
            raw[f[:-5]] = d
    doc = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "mode": a.mode,
           "git_commit": commit, "machine": {"cores": os.cpu_count(), "platform": platform.platform(),
                                            "python": platform.python_version()},
           "rows": rows, "targets": checks, "notes": notes, "raw": raw}
    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"\nwritten: {a.out}")
    if full and a.benchmarks_md:
        update_markdown(a.benchmarks_md, doc, os.path.relpath(a.out, os.path.dirname(a.benchmarks_md) or "."))
        print(f"updated: {a.benchmarks_md}")
    return 0


START, END = "<!-- bench-peers:latest:start -->", "<!-- bench-peers:latest:end -->"


def update_markdown(path, doc, json_rel):
    """Replaces the text between the markers of BENCHMARKS.md with this run's tables."""
    def cell(x):
        return fmt(x) if isinstance(x, (int, float)) else (x or "")
    lines = [START, "",
             f"Full run {doc['date']} (commit {doc['git_commit'] or '?'}, {doc['machine']['cores']} cores, "
             f"Python {doc['machine']['python']}; `{json_rel}`):", "",
             "| benchmark | tool | figure | unit | peak RSS MB | detail |", "|---|---|---|---|---|---|"]
    for r in doc["rows"]:
        lines.append("| " + " | ".join(str(cell(r[k])).replace("|", "\\|") for k in
                                       ("benchmark", "tool", "figure", "unit", "peak_rss_mb", "detail")) + " |")
    lines += ["", "| target | value | goal | met |", "|---|---|---|---|"]
    for c in doc["targets"]:
        met = {True: "✓", False: "✗", None: "not judged"}[c["met"]]
        lines.append(f"| {c['target']} | {cell(c['value'])} | {c['op']} {cell(c['goal'])} | {met} |")
    if doc["notes"]:
        lines += [""] + [f"- {n}" for n in doc["notes"]]
    lines += ["", END]
    text = open(path, encoding="utf-8").read() if os.path.exists(path) else f"# Benchmarks\n\n{START}\n{END}\n"
    if START not in text or END not in text:
        text = text.rstrip("\n") + f"\n\n{START}\n{END}\n"
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    with open(path, "w", encoding="utf-8") as f:
        f.write(head + "\n".join(lines) + tail)


if __name__ == "__main__":
    raise SystemExit(main())
