#!/usr/bin/env python3
"""Generate datasets/arith_demo.jsonl: a DEMO set of one-operation arithmetic questions.

Not a benchmark. It exists so that the quick start against the tiny local model shows real spread
in c/n instead of all zeros. The output is deterministic (fixed seed); rerun after changing this
script and commit both.

    python3 scripts/gen-arith-demo.py            # writes datasets/arith_demo.jsonl
    python3 scripts/gen-arith-demo.py --check    # exit 1 if the committed file differs
"""

import argparse
import json
import pathlib
import random
import sys

COUNT = 50
SEED = 20241201
OUTPUT = pathlib.Path(__file__).resolve().parent.parent / "datasets" / "arith_demo.jsonl"


def problem(rng: random.Random, op: str) -> tuple[str, int]:
    if op == "+":
        a, b = rng.randint(1, 20), rng.randint(1, 20)
        return f"{a}+{b}", a + b
    if op == "-":
        a, b = rng.randint(2, 20), rng.randint(1, 20)
        a, b = max(a, b), min(a, b)
        return f"{a}-{b}", a - b
    if op == "*":
        a, b = rng.randint(2, 12), rng.randint(2, 12)
        return f"{a}*{b}", a * b
    b, q = rng.randint(2, 10), rng.randint(1, 10)
    return f"{b * q}/{b}", q


def generate() -> str:
    rng = random.Random(SEED)
    seen = set()
    lines = []
    ops = "+-*/"
    while len(lines) < COUNT:
        expression, value = problem(rng, ops[len(lines) % len(ops)])
        if expression in seen:
            continue
        seen.add(expression)
        record = {
            "id": f"arith-{len(lines):02d}",
            "question": f"What is {expression}?",
            "answer": str(value),
            "solution": f"{expression} = {value}. The final answer is $\\boxed{{{value}}}$.",
        }
        lines.append(json.dumps(record, ensure_ascii=False))
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="compare with the committed file instead of writing")
    args = parser.parse_args()
    text = generate()
    if args.check:
        if not OUTPUT.exists() or OUTPUT.read_text(encoding="utf-8") != text:
            print(f"{OUTPUT} is out of date: run scripts/gen-arith-demo.py", file=sys.stderr)
            return 1
        print(f"{OUTPUT} is up to date")
        return 0
    OUTPUT.write_text(text, encoding="utf-8")
    print(f"wrote {COUNT} problems to {OUTPUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
