#!/usr/bin/env python3
"""Re-run the independent graders on the grading corpus so its labels can be re-checked.

Two graders vote on every case, beside the label the source stored (if any):
  * Math-Verify (PyPI: `pip install 'math-verify[antlr4_13_2]'`), run in this interpreter;
  * Qwen2.5-Math's `evaluation/grader.py` `math_equal` after its `parser.py` `extract_answer`,
    run from a local copy of QwenLM/Qwen2.5-Math (not part of this repository) in a second
    interpreter, because it pins sympy 1.12 and antlr4 4.11, which Math-Verify cannot share.

Usage:
  scripts/corpus-label.py CASES.jsonl --qwen-dir DIR/evaluation --qwen-python PY [--out VOTES.jsonl]

CASES.jsonl lines need `gold` and `pred` (or `response`); `options` marks multiple choice;
`expected` (the corpus label) and `source_label` are compared when present. The report prints,
per source, how often each grader agrees with `expected`, and lists cases where every voter
disagrees with it. With --out, one line per case: id, mv, qwen, source_label, expected.
"""
import argparse
import contextlib
import io
import json
import logging
import os
import re
import signal
import subprocess
import sys
from collections import defaultdict

LETTERS = "ABCDEFGHIJ"
CHOICE_GOLD = re.compile(r"^[A-J]{1,4}$")


def is_choice(case):
    """A gold of one to four letters A-J is a choice (several letters: a set of letters)."""
    return bool(CHOICE_GOLD.match(case["gold"].strip()))


def response(case):
    return case.get("pred", case.get("response", ""))


# ---------- Math-Verify ----------


def mv_vote(case):
    """Math-Verify's verdict: True/False, or None when it raised, timed out, or extracted
    nothing from the response (no answer found is an abstention, not a vote)."""
    logging.getLogger("math_verify").setLevel(logging.CRITICAL)
    quiet = io.StringIO()  # Math-Verify and its LaTeX parser print while they work
    try:
        with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
            return _mv_verdict(case)
    except Exception:  # noqa: BLE001 - a grader crash is "no vote", not a verdict
        return None


def _mv_verdict(case):
    from math_verify import StringExtractionConfig, parse, verify

    gold, pred = case["gold"].strip(), response(case)
    if is_choice(case):
        n = max(4, len(case.get("options") or []))
        cfg = [StringExtractionConfig(strings=tuple(LETTERS[:n]))]
        g = parse(gold, extraction_config=cfg)
        p = parse(pred, extraction_config=cfg)
    else:
        g = parse(gold if ("$" in gold or "\\boxed" in gold) else f"${gold}$") or parse(gold)
        p = parse(pred)
    return bool(verify(g, p)) if p else None


# ---------- Qwen2.5-Math grader (runs in the worker interpreter) ----------


class _Timeout(Exception):
    pass


def _alarm(_sig, _frame):
    raise _Timeout()


def qwen_worker(qwen_dir):
    sys.path.insert(0, qwen_dir)
    os.chdir(qwen_dir)
    from grader import math_equal  # noqa: E402  (Qwen2.5-Math, local copy)
    from parser import extract_answer, strip_string  # noqa: E402

    signal.signal(signal.SIGALRM, _alarm)
    for line in sys.stdin:
        case = json.loads(line)
        vote, extracted = None, None
        try:
            signal.alarm(20)
            choice = is_choice(case)
            data_name = "mmlu_stem" if choice else "math"
            extracted = extract_answer(response(case), data_name)
            if not extracted:
                raise _Timeout()  # nothing found: an abstention, like a timeout
            gold = case["gold"].strip() if choice else strip_string(case["gold"].strip())
            vote = bool(math_equal(extracted, gold, timeout=True))
        except _Timeout:
            vote = None
        except Exception:  # noqa: BLE001
            vote = None
        finally:
            signal.alarm(0)
        print(json.dumps({"qwen": vote, "qwen_extracted": extracted}), flush=True)


def qwen_votes(cases, qwen_dir, qwen_python):
    proc = subprocess.Popen(
        [qwen_python, os.path.abspath(__file__), "--qwen-worker", qwen_dir],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    out = []
    for c in cases:
        proc.stdin.write(json.dumps({"gold": c["gold"], "pred": response(c),
                                     "options": c.get("options")}) + "\n")
        proc.stdin.flush()
        out.append(json.loads(proc.stdout.readline()))
    proc.stdin.close()
    proc.wait()
    return out


# ---------- report ----------


def pct(a, n):
    return f"{100.0 * a / n:5.1f}%" if n else "    -"


def stored_source_label(case):
    """The source's own verdict: `source_label` in build files, `votes.source` in the corpus."""
    if "source_label" in case:
        return case["source_label"]
    return (case.get("votes") or {}).get("source")


def report(cases, votes):
    """Agreement with `expected`, per source. A grader that found no answer counts as "wrong" (as a
    user sees it); the source label only where the source stored one. Also counts votes that differ
    from the ones stored in the file, so a re-run shows whether the labels' inputs still hold."""
    rows = defaultdict(lambda: [0, 0, 0, 0, 0])  # n, mv agree, qwen agree, src n, src agree
    lonely, changed = 0, {"math_verify": 0, "qwen": 0}
    for c, v in zip(cases, votes):
        stored = c.get("votes") or {}
        for name, key in (("math_verify", "mv"), ("qwen", "qwen")):
            changed[name] += name in stored and stored[name] != v[key]
        if "expected" not in c:
            continue
        exp = c["expected"]
        for key in ("ALL", c.get("source", "?")):
            r = rows[key]
            r[0] += 1
            r[1] += (v["mv"] is True) == exp
            r[2] += (v["qwen"] is True) == exp
            if v["source_label"] is not None:
                r[3] += 1
                r[4] += v["source_label"] == exp
        voters = [x for x in (v["mv"], v["qwen"], v["source_label"]) if x is not None]
        lonely += bool(voters) and all(x != exp for x in voters)
    print(f"{'source':36} {'cases':>6} {'Math-Verify':>11} {'Qwen':>7} {'source label':>14}")
    for key in sorted(rows, key=lambda k: (k != "ALL", k)):
        n, mv, qw, sn, sa = rows[key]
        print(f"{key:36} {n:6} {pct(mv, n):>11} {pct(qw, n):>7} {pct(sa, sn):>8} of {sn}")
    print(f"cases where every vote differs from the label (decided by hand): {lonely}")
    print(f"votes that differ from the file's stored votes: {changed}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", nargs="?")
    ap.add_argument("--qwen-dir", help="path to Qwen2.5-Math's evaluation/ directory")
    ap.add_argument("--qwen-python", default=sys.executable,
                    help="interpreter with sympy==1.12, antlr4-python3-runtime==4.11.1, regex, "
                         "word2number and Qwen's latex2sympy installed")
    ap.add_argument("--out", help="write one vote line per case here")
    ap.add_argument("--qwen-worker", metavar="DIR", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.qwen_worker:
        qwen_worker(a.qwen_worker)
        return 0
    if not a.cases or not a.qwen_dir:
        ap.error("give CASES.jsonl and --qwen-dir")
    cases = []
    with open(a.cases, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                try:
                    cases.append(json.loads(line))
                except json.JSONDecodeError as e:
                    sys.exit(f"{a.cases}:{n}: bad JSON: {e}")
    qw = qwen_votes(cases, a.qwen_dir, a.qwen_python)
    votes = []
    for i, (c, q) in enumerate(zip(cases, qw)):
        votes.append({"id": c.get("id", i), "mv": mv_vote(c), "qwen": q["qwen"],
                      "qwen_extracted": q["qwen_extracted"],
                      "source_label": stored_source_label(c), "expected": c.get("expected")})
    if a.out:
        with open(a.out, "w", encoding="utf-8") as f:
            for v in votes:
                f.write(json.dumps(v, ensure_ascii=False) + "\n")
    report(cases, votes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
