#!/usr/bin/env python3
"""The reference side of the metrics comparison: SciPy's hypergeometric tail per problem and threshold.

    metrics_scipy.py COUNTS.txt --gpassk GPASSK.json --out OUT.json

Computes, for each `n c k` line, what the G-Pass@k reference code (OpenCompass / GPassK) computes:
G-Pass@k_τ = hypergeom.sf(m - 1, n, c, k) with m = max(ceil(τ·k), 1) for τ = 0 (pass@k), 0.25, 0.5,
0.75, 1.0, and mG-Pass@k = (2/k)·Σ_{i=ceil(k/2)+1}^{k} G-Pass@k at threshold i. Times that loop, then
compares every value with gpassk's exact values (rounded once to f64) and reports the largest difference.
"""
import argparse
import json
import math
import time

from scipy.stats import hypergeom


def _g_pass_at_k(n, c, k, m):
    if m > min(c, k) or k > n or c < 0 or n <= 0 or m < 0:
        return 0.0
    return hypergeom.sf(m - 1, n, c, k)


def g_pass_at_k(n, c, k, t):
    m = max(int(math.ceil(k * t)), 1)
    return _g_pass_at_k(n, c, k, m)


def mg_pass_at_k(n, c, k):
    low, high = int(math.ceil(k * 0.5)), k
    total = 0.0
    for i in range(low + 1, high + 1):
        total += _g_pass_at_k(n, c, k, i)
    return 2 * total / k


def problem(n, c, k):
    return [float(g_pass_at_k(n, c, k, t)) for t in (0.0, 0.25, 0.5, 0.75, 1.0)] + [float(mg_pass_at_k(n, c, k))]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("counts")
    p.add_argument("--gpassk", required=True)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    with open(a.counts) as f:
        triples = [tuple(int(x) for x in line.split()) for line in f if line.strip()]
    problem(*triples[0])
    start = time.perf_counter()
    values = [problem(n, c, k) for n, c, k in triples]
    secs = time.perf_counter() - start
    with open(a.gpassk) as f:
        exact = json.load(f)["values"]
    assert len(exact) == len(values), "gpassk and SciPy saw different problem counts"
    worst, where = 0.0, None
    for i, (ours, theirs) in enumerate(zip(exact, values)):
        for j, (x, y) in enumerate(zip(ours, theirs)):
            d = abs(x - y)
            if d > worst:
                worst, where = d, {"problem": i, "nck": triples[i], "metric": j, "gpassk": x, "scipy": y}
    out = {"problems": len(triples), "secs": secs, "problems_per_s": len(triples) / secs,
           "max_abs_diff": worst, "worst": where}
    with open(a.out, "w") as f:
        json.dump(out, f)
    print(f"scipy hypergeom.sf: {len(triples)} problems in {secs:.2f} s = {len(triples) / secs:.0f} problems/s; "
          f"largest difference from gpassk's exact values {worst:.3g}")


if __name__ == "__main__":
    main()
