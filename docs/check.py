#!/usr/bin/env python3
"""Checks the project's Markdown documents (README.md, DESIGN.md, docs/**/*.md but
docs/containment, whose paths name other repositories):

- links: every `](#anchor)` names a heading of its file (GitHub's slugs: lowercase, spaces to
  `-`, punctuation dropped, a repeated heading numbered `-1`, `-2`); every relative link names
  a file that exists, and its `#anchor` a heading of that file;
- contents: every `##` heading of README.md is linked from README.md itself (its contents list);
- layers: DESIGN.md's layers table names the modules of `tests/it/layers.rs`'s LAYERS, layer
  by layer;
- paths: every `src/...`, `tests/...`, `benches/...`, `docs/...`, `.ci/...` path mentioned
  exists, and every other `*.rs` file named in backticks (`app/rewind.rs`, `mod.rs`) is the
  end of a file's path under src/, tests/ or benches/.

Run from anywhere: python3 docs/check.py. Prints each problem and a count; exit 1 if any.
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def documents():
    docs = ["README.md", "DESIGN.md"]
    for folder, dirs, files in os.walk(os.path.join(ROOT, "docs")):
        rel = os.path.relpath(folder, ROOT)
        if rel.startswith(os.path.join("docs", "containment")):
            continue
        docs += [os.path.join(rel, f) for f in sorted(files) if f.endswith(".md")]
    return docs


def outside_fences(text):
    """The lines outside ``` fences, with their numbers."""
    fenced = False
    for n, line in enumerate(text.split("\n"), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            yield n, line


def slug(heading):
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)  # keeps letters, digits, _, -, space
    return s.replace(" ", "-")


def headings(path, level=None):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        text = f.read()
    seen = {}
    out = []
    for _, line in outside_fences(text):
        m = re.match(r"^(#{1,6}) +(.*?) *#*$", line)
        if not m:
            continue
        s = slug(m.group(2))
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.append((len(m.group(1)), m.group(2), s if n == 0 else f"{s}-{n}"))
    return out


def links(text):
    for n, line in outside_fences(text):
        line = re.sub(r"`[^`]*`", "", line)  # not in code spans
        for m in re.finditer(r"\]\(([^)\s]+)\)", line):
            yield n, m.group(1)


def main():
    problems = []
    anchors = {}

    def anchors_of(path):
        if path not in anchors:
            anchors[path] = {s for _, _, s in headings(path)}
        return anchors[path]

    checked_links = 0
    for doc in documents():
        with open(os.path.join(ROOT, doc), encoding="utf-8") as f:
            text = f.read()
        for n, target in links(text):
            if re.match(r"^[a-z]+:", target):
                continue  # https:, mailto:
            checked_links += 1
            file, _, anchor = target.partition("#")
            if file:
                path = os.path.normpath(os.path.join(os.path.dirname(doc), file))
                if not os.path.exists(os.path.join(ROOT, path)):
                    problems.append(f"{doc}:{n}: link to {target}: no file {path}")
                    continue
            else:
                path = doc
            if anchor and path.endswith(".md") and anchor not in anchors_of(path):
                problems.append(f"{doc}:{n}: link to {target}: no such heading in {path}")

    # The README's contents list: every ## section linked.
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    linked = {t[1:] for _, t in links(readme) if t.startswith("#")}
    sections = [(h, s) for level, h, s in headings("README.md") if level == 2]
    for h, s in sections:
        if s not in linked:
            problems.append(f"README.md: section '## {h}' (#{s}) is not in the contents list")

    # Paths.
    rs_files = []
    for top in ("src", "tests", "benches"):
        for folder, _, files in os.walk(os.path.join(ROOT, top)):
            rs_files += [
                os.path.relpath(os.path.join(folder, f), ROOT) for f in files if f.endswith(".rs")
            ]
    checked_paths = set()
    for doc in documents():
        with open(os.path.join(ROOT, doc), encoding="utf-8") as f:
            text = f.read()
        fenced = False
        for n, line in enumerate(text.split("\n"), 1):
            # A fenced block shows a user's project (a trace, a config), not this repository.
            if line.lstrip().startswith("```"):
                fenced = not fenced
            if fenced:
                continue
            for m in re.finditer(r"(?<![\w./~-])((?:src|tests|benches|docs|\.ci)/[\w./-]*[\w])", line):
                p = m.group(1)
                checked_paths.add(p)
                if not os.path.exists(os.path.join(ROOT, p)):
                    problems.append(f"{doc}:{n}: path {p} does not exist")
            for m in re.finditer(r"`([\w/.-]+\.rs)`", line):
                p = m.group(1)
                if p.startswith(("src/", "tests/", "benches/")):
                    continue
                checked_paths.add(p)
                if not any(f == p or f.endswith("/" + p) for f in rs_files):
                    problems.append(f"{doc}:{n}: no file ends with {p}")

    # DESIGN.md's layers against tests/it/layers.rs.
    with open(os.path.join(ROOT, "tests/it/layers.rs"), encoding="utf-8") as f:
        source = f.read()
    body = re.search(r"const LAYERS[^=]*=\s*&\[(.*?)\n\];", source, re.S).group(1)
    code_layers = [re.findall(r'"(\w+)"', l) for l in re.findall(r"&\[([^\]]*)\]", body)]
    with open(os.path.join(ROOT, "DESIGN.md"), encoding="utf-8") as f:
        design = f.read()
    doc_layers = {}
    for m in re.finditer(r"^\| (\d+) \| ([^|]*) \|", design, re.M):
        doc_layers[int(m.group(1))] = re.findall(r"`(\w+)`", m.group(2))
    for i, mods in enumerate(code_layers):
        if doc_layers.get(i) != mods:
            problems.append(f"DESIGN.md: layer {i} is {doc_layers.get(i)}, tests/it/layers.rs says {mods}")
    if len(doc_layers) != len(code_layers):
        problems.append(f"DESIGN.md: {len(doc_layers)} layers, tests/it/layers.rs has {len(code_layers)}")

    for p in problems:
        print(p)
    print(
        f"{len(documents())} documents, {checked_links} links, "
        f"{len(sections)} README sections, {len(checked_paths)} distinct paths, "
        f"{len(code_layers)} layers: "
        f"{len(problems)} problems"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
