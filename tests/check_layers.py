#!/usr/bin/env python3
"""The layers only point down: checks every #include "..." line of the library.

    base -> graph (the IR) -> opt (the optimizer) -> exec (the executor) -> core (the API)
                 \\-> jit (code generation) -> backends (cpu/, cuda/, reference/) -/

A folder may include itself and the folders listed for it below. The public
headers (core/include/arrayjit) are the API: below core only the leaf ones
(dtype, error, stats) may be used. Backends see the executor's Backend
interface (exec/backend.hpp), never the executor, the passes or the pipeline.
Run from anywhere: python3 tests/check_layers.py [root]; exits 1 and lists
every forbidden include.
"""
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

ALLOWED = {
    "base": {"base"},
    "graph": {"base", "graph"},
    "opt": {"base", "graph", "opt"},
    "jit": {"base", "graph", "jit"},
    "exec": {"base", "graph", "opt", "exec"},
    "backends": {"base", "graph", "jit", "backends", "exec/backend.hpp"},
    "core": {"base", "graph", "opt", "jit", "exec", "backends", "core"},
}
LEAF_PUBLIC = {"arrayjit/dtype.hpp", "arrayjit/half.hpp", "arrayjit/error.hpp", "arrayjit/stats.hpp",
               "arrayjit/ops.def"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def allowed(layer, target):
    if target.startswith("arrayjit/"):
        return layer == "core" or target in LEAF_PUBLIC
    top = target.split("/")[0]
    rules = ALLOWED[layer]
    return top in rules or target in rules


def main():
    bad = []
    checked = 0
    for layer in ALLOWED:
        for dirpath, _, files in os.walk(os.path.join(ROOT, layer)):
            if os.sep + "include" + os.sep in dirpath + os.sep:
                public = True
            else:
                public = False
            for f in sorted(files):
                if not f.endswith((".cpp", ".hpp", ".h", ".def")):
                    continue
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, ROOT)
                with open(path, encoding="utf-8") as fh:
                    for no, line in enumerate(fh, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        checked += 1
                        target = m.group(1)
                        ok = target.startswith("arrayjit/") if public else allowed(layer, target)
                        if not ok:
                            bad.append(f"{rel}:{no}: {layer}/ may not include \"{target}\"")
    for b in bad:
        print(b)
    print(f"check_layers: {checked} includes checked, {len(bad)} forbidden")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
