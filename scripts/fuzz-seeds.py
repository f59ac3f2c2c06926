#!/usr/bin/env python3
"""Seed corpora for the fuzz targets (fuzz/), made from the repository's own fixtures.

Usage: fuzz-seeds.py OUT_DIR. Writes OUT_DIR/<target>/<name> files in each target's input format
(fuzz/fuzz_targets/*.rs say it): a selector byte, then the text. Nothing here is committed.
"""
import hashlib
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIX = ROOT / "tests" / "fixtures"


def put(out, target, data):
    d = out / target
    d.mkdir(parents=True, exist_ok=True)
    (d / hashlib.sha1(data).hexdigest()).write_bytes(data)


def grade_seeds(out):
    files = ["mathverify_0.9.0_cases.jsonl", "peers_cases.jsonl", "gpassk_heldout_cases.jsonl"]
    for name in files:
        for i, line in enumerate((FIX / "grading" / name).read_text().splitlines()):
            case = json.loads(line)
            text = f"{case['gold']}\0{case['pred']}".encode()
            put(out, "grade", bytes([i % 16]) + text)
    # Real responses (long, Chinese and English): every 25th of the corpus, cut to 4 KiB.
    corpus = (FIX / "grading" / "corpus_v1.jsonl").read_text().splitlines()
    for line in corpus[::25]:
        case = json.loads(line)
        put(out, "grade", b"\0" + f"{case['gold']}\0{case['pred']}".encode()[:4096])


# The import target's layouts, in fuzz/fuzz_targets/import.rs's order: (selector, fixture glob).
IMPORT = [
    (0, "import/jsonl/*.jsonl"),
    (1, "import/lm-eval/*/stub-math/samples_*.jsonl"),
    (1, "import/lm-eval/v0.4.2/model__*.jsonl"),
    (2, "import/lm-eval/*/stub-math/results_*.json"),
    (2, "import/lm-eval/v0.4.2/results.json"),
    (3, "import/opencompass/*/predictions/*/*.json"),
    (4, "import/evalscope/*/reviews/*/*.jsonl"),
    (5, "import/evalscope/*/predictions/*/*.jsonl"),
    (6, "import/qwen-math/*/*.jsonl"),
]


# Real logs of other harnesses in shared/peer-logs (read where present, never copied into the
# repository): (selector, glob).
PEER_LOGS = [
    (1, "lm-eval-*/samples_*.jsonl"),
    (2, "lm-eval-*/results_*.json"),
    (4, "evalscope/reviews_*.jsonl"),
    (5, "evalscope/predictions_*.jsonl"),
    (6, "qwen2.5-math/*.jsonl"),
]


def import_seeds(out):
    for sel, pattern in IMPORT:
        for f in sorted(FIX.glob(pattern)):
            put(out, "import", bytes([sel]) + f.read_bytes())
            put(out, "import", bytes([sel | 0x80]) + f.read_bytes()[:2048])
    # shared/ sits beside the checkout (CI), or beside the worktrees' folder.
    found = [d / "shared" / "peer-logs" for d in (ROOT.parent, ROOT.parent.parent)]
    peers = next((d for d in found if d.is_dir()), found[0])
    for sel, pattern in PEER_LOGS:
        for f in sorted(peers.glob(pattern)):
            put(out, "import", bytes([sel]) + f.read_bytes()[:65536])


def sse_seeds(out):
    def chunk(**kw):
        return b"data: " + json.dumps(kw).encode() + b"\n\n"

    first = chunk(model="m", system_fingerprint="fp",
                  choices=[{"index": 0, "delta": {"role": "assistant", "content": "The "}}])
    think = chunk(choices=[{"index": 1, "delta": {"reasoning_content": "think"}}])
    last = chunk(choices=[{"index": 0, "delta": {"content": "answer is \\boxed{4}"},
                           "finish_reason": "stop"},
                          {"index": 1, "delta": {"content": "x"}, "finish_reason": "length"}])
    usage = chunk(choices=[], usage={"prompt_tokens": 3, "completion_tokens": 9})
    error = chunk(error={"message": "overloaded"})
    done = b"data: [DONE]\n\n"
    streams = [
        first + think + last + usage + done,
        b"\xef\xbb\xbf: keep-alive\n\n" + first + last + done,
        (first + last + done).replace(b"\n", b"\r\n"),
        (first + last).replace(b"\n", b"\r"),
        first + done,
        first + error,
        b"event: ping\nid: 1\n" + last + b"data: {not json\n\n",
    ]
    for i, s in enumerate(streams):
        for size in (1, 7, 200):
            put(out, "sse", bytes([size + i]) + s)


def config_seeds(out):
    for f in sorted((ROOT / "configs").rglob("*.toml")):
        put(out, "config", f.read_bytes())


def prm_seeds(out):
    texts = ["0.8", "Score: .25\n", "1.", "great step!", "7/10", "Score of step 1: 0.2",
             "-0.9", "1e-3", "0.5%", ""]
    for t in texts:
        put(out, "prm", b"\0" + t.encode())
    pooling = [
        {"data": [{"index": 0, "data": [[0.9, 0.1], [0.3, 0.7]]}]},
        {"data": [{"index": 0, "data": [0.2, 0.95]}]},
        {"data": []},
        {"object": "list", "data": [{"object": "pooling", "data": [[0.5, 0.5]]}],
         "usage": {"prompt_tokens": 12}},
    ]
    for p in pooling:
        rows = len(p["data"][0]["data"]) if p["data"] else 0
        put(out, "prm", bytes([1 + 4 * rows]) + json.dumps(p).encode())
    steps = ["# add\nx = 2 + 3\nprint(x)\n<end_of_step>",
             "<end_of_code>\n<output>5\n<answer>The answer is \\boxed{\\frac{1}{2}}",
             "\\boxed{a{b}c} then \\boxed{"]
    for s in steps:
        put(out, "prm", b"\2" + s.encode())


def main():
    out = pathlib.Path(sys.argv[1])
    for make in (grade_seeds, import_seeds, sse_seeds, config_seeds, prm_seeds):
        make(out)
    for d in sorted(out.iterdir()):
        print(f"seeds: {d.name}: {sum(1 for _ in d.iterdir())} files")


main()
