#!/usr/bin/env python3
"""Checks the crate's architecture (ARCHITECTURE.md, whose layer list it reads): every `crate::` import in src/ (test
code aside) points to a lower layer or, within a layer, never forms a cycle; and no function in
src/ is longer than 100 lines, except the parser/evaluator tables of src/grade/. Exit 1 on any
violation, naming it. No file of src/commands/ imports another (commands/mod.rs aside). With no argument it also checks the test server crate's modules
(crates/fake-openai/src) for import cycles; that crate has no layer list, so cycles only."""
import collections
import os
import re
import sys

def read_layers(path):
    """The layers of ARCHITECTURE.md's "## Layers" list: one numbered line each, its top-level
    modules in backticks before the first colon."""
    layers, inside = [], False
    for line in open(path, encoding="utf-8"):
        if line.startswith("## "):
            inside = line.strip() == "## Layers"
            continue
        m = re.match(r"\d+\.\s+(.*?):", line)
        if inside and m:
            layers.append(re.findall(r"`(\w+)`", m.group(1)))
    if not layers:
        sys.exit(f"check-layers: no \"## Layers\" list in {path}")
    return layers

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
# Other crates' sources, checked for import cycles only (they have no layer list).
CYCLE_ONLY_ROOTS = ["crates/fake-openai/src"]
LAYERS = read_layers(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ARCHITECTURE.md"))
MAX_FN_LINES = 100
LONG_FN_EXEMPT = "grade" + os.sep

def strip_tests(text):
    """Drops `#[cfg(test)] mod … { … }` blocks and comments."""
    out, i = [], 0
    pat = re.compile(r"#\[cfg\(test\)\]\s*(pub\s+)?mod\s+\w+\s*\{")
    while True:
        m = pat.search(text, i)
        if not m:
            out.append(text[i:])
            break
        out.append(text[i:m.start()])
        j, depth = m.end(), 1
        while depth and j < len(text):
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        i = j
    return re.sub(r"//[^\n]*", "", "".join(out))

def module_files(root):
    for dp, _, files in os.walk(root):
        for f in sorted(files):
            if f.endswith(".rs"):
                path = os.path.join(dp, f)
                yield path, os.path.relpath(path, root)

def imports(root):
    edges = collections.defaultdict(set)
    for path, rel in module_files(root):
        top = rel.split(os.sep)[0].removesuffix(".rs")
        if top in ("lib", "main", "tests") or rel.endswith("tests.rs"):
            continue
        text = strip_tests(open(path, encoding="utf-8").read())
        names = set(re.findall(r"crate::(\w+)", text))
        for group in re.findall(r"use crate::\{([^}]*)\}", text):
            names.update(re.findall(r"(?:^|,)\s*(\w+)", group))
        edges[top].update(n for n in names if n != top)
    return edges

def cycles(edges):
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]
    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))
    for v in sorted(set(edges) | {w for ws in edges.values() for w in ws}):
        if v not in index:
            visit(v)
    return found

def blank_literals(text):
    """Replaces comments, strings and char literals by spaces (newlines kept), so braces count."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif m := re.match(r'b?r(#*)"', text[i:]):
            end = text.find('"' + m.group(1), i + m.end())
            j = n if end < 0 else end + 1 + len(m.group(1))
        elif c == '"' or text.startswith('b"', i):
            j = i + (2 if c == "b" else 1)
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j += 1
        elif m := re.match(r"b?'(\\.[^']*|[^'\\])'", text[i:]):
            j = i + m.end()
        else:
            out.append(c)
            i += 1
            continue
        out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
        i = j
    return "".join(out)

def long_functions(root):
    start = re.compile(r"^\s*(pub(\([\w:]+\))?\s+)?(const\s+)?(async\s+)?fn\s+(\w+)")
    for path, rel in module_files(root):
        if rel.startswith(LONG_FN_EXEMPT):
            continue
        lines = blank_literals(open(path, encoding="utf-8").read()).split("\n")
        for i, line in enumerate(lines):
            m = start.match(line)
            if not m:
                continue
            depth, j, opened = 0, i, False
            while j < len(lines):
                depth += lines[j].count("{") - lines[j].count("}")
                opened = opened or "{" in lines[j]
                if (opened and depth <= 0) or (not opened and lines[j].rstrip().endswith(";")):
                    break
                j += 1
            if j - i + 1 > MAX_FN_LINES:
                yield f"{rel}:{i + 1}: fn {m.group(5)} is {j - i + 1} lines (at most {MAX_FN_LINES})"

def command_imports(root):
    """A command file that names another command's module (`super::x`, `crate::commands::x`): what
    two commands share belongs in the library, or in commands/mod.rs when it is CLI plumbing."""
    folder = os.path.join(root, "commands")
    if not os.path.isdir(folder):
        return
    siblings = {f.removesuffix(".rs") for f in os.listdir(folder) if f.endswith(".rs")} - {"mod"}
    for name in sorted(siblings):
        text = strip_tests(open(os.path.join(folder, name + ".rs"), encoding="utf-8").read())
        used = set(re.findall(r"(?:super|crate::commands)::(\w+)", text))
        for group in re.findall(r"use (?:super|crate::commands)::\{([^}]*)\}", text):
            used.update(re.findall(r"(?:^|,)\s*(\w+)", group))
        for other in sorted((used & siblings) - {name}):
            yield f"commands/{name}.rs imports commands/{other}.rs: no command imports another"

def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "src"
    layer = {m: i for i, ms in enumerate(LAYERS) for m in ms}
    edges = imports(root)
    problems = []
    for m in sorted(edges):
        if m not in layer:
            problems.append(f"src/{m}: module not in any layer of ARCHITECTURE.md")
            continue
        for dep in sorted(edges[m]):
            if dep in layer and layer[dep] > layer[m]:
                problems.append(f"{m} (layer {layer[m]}) imports {dep} (layer {layer[dep]}): upward")
    problems += [f"import cycle: {' → '.join(c)}" for c in cycles(edges)]
    problems += list(long_functions(root))
    problems += list(command_imports(root))
    summary = f"{len(edges)} modules, imports point down, no cycle, no long function, no command imports another"
    if len(sys.argv) <= 1:
        for other in CYCLE_ONLY_ROOTS:
            found = cycles(imports(os.path.join(REPO, other)))
            problems += [f"{other}: import cycle: {' → '.join(c)}" for c in found]
            summary += f"; {other}: no cycle"
    for p in problems:
        print(f"check-layers: {p}")
    if not problems:
        print(f"check-layers: {summary}")
    return 1 if problems else 0

if __name__ == "__main__":
    sys.exit(main())
