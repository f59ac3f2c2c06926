#!/usr/bin/env python3
"""Checks the crate's architecture (ARCHITECTURE.md, whose layer list it reads): every `crate::` import in src/ (test
code aside) points to a lower layer or, within a layer, never forms a cycle; no two files of one
folder import each other, even through others (`super::x`, `crate::a::x`, a name mod.rs re-exports); and no function in
src/ is longer than 100 lines (60 in src/commands/), except the parser/evaluator tables of src/grade/. Exit 1 on any
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
# A command parses, calls the library, prints and picks the exit status: its functions are short.
MAX_COMMAND_FN_LINES = 60
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

def module_path(rel):
    """`config/settings.rs` → ["config", "settings"]; `mod.rs` names its folder."""
    parts = rel.removesuffix(".rs").split(os.sep)
    return parts[:-1] if parts[-1] == "mod" else parts

def expand_use(tree):
    """`a::{b, c::{d, e as f}}` → ["a::b", "a::c::d", "a::c::e"]."""
    tree = re.sub(r"\s+", "", re.sub(r"\s+as\s+\w+", "", tree))
    depth, i = 0, tree.find("{")
    if i < 0:
        return [tree]
    head, inner = tree[:i], tree[i + 1:tree.rfind("}")]
    parts, start = [], 0
    for j, c in enumerate(inner):
        depth += {"{": 1, "}": -1}.get(c, 0)
        if c == "," and depth == 0:
            parts.append(inner[start:j])
            start = j + 1
    parts.append(inner[start:])
    return [head + q for part in parts if part for q in expand_use(part)]

def child_modules(root, folder):
    """The submodules of the module whose files live in `folder` (files and subfolders)."""
    d = os.path.join(root, *folder)
    if not os.path.isdir(d):
        return set()
    return {f.removesuffix(".rs") for f in os.listdir(d)
            if (f.endswith(".rs") and f != "mod.rs") or os.path.isdir(os.path.join(d, f))}

def reexports(root, folder):
    """Names a module re-exports from one of its submodules (`pub use child::Name;`): Name → child."""
    out = {}
    d = os.path.join(root, *folder)
    for cand in (os.path.join(d, "mod.rs"), d + ".rs"):
        if not os.path.isfile(cand):
            continue
        text = strip_tests(open(cand, encoding="utf-8").read())
        kids = child_modules(root, folder)
        for tree in re.findall(r"pub(?:\([\w:]+\))?\s+use\s+([^;]+);", text):
            for path in expand_use(tree):
                segs = [x for x in path.split("::") if x]
                if segs and segs[0] == "self":
                    segs = segs[1:]
                if len(segs) >= 2 and segs[0] in kids:
                    out[segs[-1]] = segs[0]
    return out

def file_edges(root):
    """Imports between sibling files of one folder: `super::x`, `crate::a::x`, `self::x`, and names a
    folder's mod.rs re-exports from one of its files. Returns {folder: {file: {file, …}}}."""
    edges = collections.defaultdict(lambda: collections.defaultdict(set))
    kids_cache, reexp_cache = {}, {}
    def kids(folder):
        key = tuple(folder)
        if key not in kids_cache:
            kids_cache[key] = child_modules(root, folder)
        return kids_cache[key]
    def reexp(folder):
        key = tuple(folder)
        if key not in reexp_cache:
            reexp_cache[key] = reexports(root, folder)
        return reexp_cache[key]
    for path, rel in module_files(root):
        if rel.split(os.sep)[0].removesuffix(".rs") in ("lib", "main") or rel.endswith("tests.rs"):
            continue
        me = module_path(rel)
        text = strip_tests(open(path, encoding="utf-8").read())
        paths = []
        for tree in re.findall(r"\buse\s+([^;]+);", text):
            paths += expand_use(tree)
        paths += re.findall(r"\b(?:crate|super|self)(?:::\w+)+", text)
        for p in paths:
            segs = [x for x in p.split("::") if x]
            if not segs or segs[0] not in ("crate", "super", "self"):
                continue
            base = [] if segs[0] == "crate" else list(me)
            rest = segs[1:] if segs[0] in ("crate", "self") else segs
            while rest and rest[0] == "super":
                base, rest = base[:-1], rest[1:]
            target = base + rest
            # the deepest folder both sit in, and the child of it each one is under
            n = 0
            while n < min(len(me), len(target)) and me[n] == target[n]:
                n += 1
            if n >= len(me) or n >= len(target):
                continue
            folder, src, dst = me[:n], me[n], target[n]
            if dst not in kids(folder):
                dst = reexp(folder).get(dst)
            if dst and dst != src and src in kids(folder):
                edges["/".join(folder)][src].add(dst)
    return edges

def file_cycles(root):
    """Import cycles between the files (and subfolders) of one folder."""
    for folder, edges in sorted(file_edges(root).items()):
        for c in cycles(edges):
            names = [f"{m}.rs" if os.path.isfile(os.path.join(root, folder, m + ".rs")) else f"{m}/" for m in c]
            yield f"import cycle between files of {folder or '.'}/: " + " ↔ ".join(names)

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
            limit = MAX_COMMAND_FN_LINES if rel.startswith("commands" + os.sep) else MAX_FN_LINES
            if j - i + 1 > limit:
                yield f"{rel}:{i + 1}: fn {m.group(5)} is {j - i + 1} lines (at most {limit})"

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
    problems += list(file_cycles(root))
    problems += list(long_functions(root))
    problems += list(command_imports(root))
    summary = (f"{len(edges)} modules, imports point down, no cycle (between modules or between the files of a "
               "folder), no long function, no command imports another")
    if len(sys.argv) <= 1:
        for other in CYCLE_ONLY_ROOTS:
            found = cycles(imports(os.path.join(REPO, other)))
            problems += [f"{other}: import cycle: {' → '.join(c)}" for c in found]
            problems += [f"{other}: {p}" for p in file_cycles(os.path.join(REPO, other))]
            summary += f"; {other}: no cycle"
    for p in problems:
        print(f"check-layers: {p}")
    if not problems:
        print(f"check-layers: {summary}")
    return 1 if problems else 0

if __name__ == "__main__":
    sys.exit(main())
