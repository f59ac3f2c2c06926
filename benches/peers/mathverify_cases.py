#!/usr/bin/env python3
"""The Math-Verify side of the grading comparison.

    mathverify_cases.py CASES.jsonl --out OUT.json [--limit N]

For each case: `verify(parse(gold), parse(pred))` with Math-Verify's default settings, timed over the
whole file (after one warm-up case, so imports and sympy's first-use caches are not counted). Writes
cases/s and the verdict of every case, for agreement with `gpassk grade --cases --json`.
"""
import argparse
import json
import time

from math_verify import parse, verify


def grade(gold, pred):
    try:
        return bool(verify(parse(gold), parse(pred)))
    except Exception:  # noqa: BLE001 - a crash is a non-match, as lighteval treats it
        return False


def main():
    p = argparse.ArgumentParser()
    p.add_argument("cases")
    p.add_argument("--out", required=True)
    p.add_argument("--limit", type=int)
    a = p.parse_args()
    with open(a.cases, encoding="utf-8") as f:
        cases = [json.loads(line) for line in f if line.strip()]
    if a.limit:
        cases = cases[: a.limit]
    grade(cases[0]["gold"], cases[0]["pred"])
    start = time.perf_counter()
    verdicts = [grade(c["gold"], c["pred"]) for c in cases]
    secs = time.perf_counter() - start
    expected = [c.get("expected") for c in cases]
    agree = sum(v == e for v, e in zip(verdicts, expected) if e is not None)
    out = {"cases": len(cases), "secs": secs, "cases_per_s": len(cases) / secs,
           "verdicts": verdicts, "agree_expected": agree}
    with open(a.out, "w") as f:
        json.dump(out, f)
    print(f"math-verify: {len(cases)} cases in {secs:.2f} s = {len(cases) / secs:.1f} cases/s; "
          f"{agree}/{len(cases)} agree with the labels")


if __name__ == "__main__":
    main()
