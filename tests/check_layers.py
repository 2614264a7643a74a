#!/usr/bin/env python3
"""The layers only point down: checks every #include "..." line of the library.

    base -> graph (the IR) -> opt (the optimizer) -> exec (the executor) -> core/api
                 \\-> jit (code generation) -> backends (cpu/, cuda/, reference/) -/

    core/api (arrays, tracing, evaluation) <- core/autodiff
                                           <- core/compile
                                           <- core/interop
                                              <- core/c (the C ABI: every room above)

A file's layer is its folder (core's rooms are folders of their own). A public
header (`arrayjit/NAME`) belongs to the layer that implements it: the leaf ones
in base/include/arrayjit to base, those in core/include/arrayjit to the room
of core that defines them (PUBLIC_ROOM below; unlisted ones to core/api). A
folder may include itself and the layers listed for it below, nothing else:
there is no list of exceptions. Backends see the executor's Backend interface
(exec/backend.hpp), never the executor, the passes or the pipeline.
Run from anywhere: python3 tests/check_layers.py [root]; exits 1 and lists
every forbidden include.
"""
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

BELOW_CORE = {"base", "graph", "opt", "jit", "exec", "backends"}
ALLOWED = {
    "base": {"base"},
    "graph": {"base", "graph"},
    "opt": {"base", "graph", "opt"},
    "jit": {"base", "graph", "jit"},
    "exec": {"base", "graph", "opt", "exec"},
    "backends": {"base", "graph", "jit", "backends", "exec/backend.hpp"},
    "core/api": BELOW_CORE | {"core/api"},
    "core/autodiff": BELOW_CORE | {"core/api", "core/autodiff"},
    "core/compile": BELOW_CORE | {"core/api", "core/compile"},
    "core/interop": BELOW_CORE | {"core/api", "core/interop"},
    "core/c": BELOW_CORE | {"core/api", "core/autodiff", "core/compile", "core/interop", "core/c"},
}
# The room of core that implements each public header of core/include/arrayjit
# that is not the API's own (those are core/api's).
PUBLIC_ROOM = {
    "autodiff.hpp": "core/autodiff",
    "compile.hpp": "core/compile",
    "dlpack_abi.h": "core/interop",
    "dlpack.h": "core/c",
    "dlpack.hpp": "core/interop",
    "eigen.hpp": "core/interop",
    "arrayjit.h": "core/c",
    "c_handle.hpp": "core/c",
    "arrayjit.hpp": "core/c",  # every public header: for the top room and users
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def layer_of_path(rel):
    """The layer of a file of the tree (a path relative to ROOT), or None."""
    parts = rel.split("/")
    if parts[0] == "core" and len(parts) > 1 and parts[1] == "include":
        return PUBLIC_ROOM.get(parts[-1], "core/api")
    if parts[0] == "core":
        return "core/" + parts[1] if len(parts) > 2 else None
    if parts[0] == "base" and len(parts) > 1 and parts[1] == "include":
        return "base"
    return parts[0] if parts[0] in ALLOWED else None


def layer_of_include(target):
    """The layer an #include "target" reaches."""
    if target.startswith("arrayjit/"):
        if os.path.exists(os.path.join(ROOT, "base", "include", target)):
            return "base"
        return PUBLIC_ROOM.get(target.split("/")[-1], "core/api")
    return layer_of_path(target)


def allowed(layer, target):
    reached = layer_of_include(target)
    rules = ALLOWED[layer]
    return reached == layer or reached in rules or target in rules


def main():
    bad = []
    checked = 0
    for top in ("base", "graph", "opt", "jit", "exec", "backends", "core"):
        for dirpath, _, files in os.walk(os.path.join(ROOT, top)):
            for f in sorted(files):
                if not f.endswith((".cpp", ".hpp", ".h", ".def", ".cu", ".cuh")):
                    continue
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, ROOT).replace(os.sep, "/")
                layer = layer_of_path(rel)
                if layer is None:
                    bad.append(f"{rel}: a file in no layer (core's files live in its rooms)")
                    continue
                with open(path, encoding="utf-8") as fh:
                    for no, line in enumerate(fh, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        checked += 1
                        target = m.group(1)
                        public = "/include/" in "/" + rel
                        ok = (target.startswith("arrayjit/") or not public) and allowed(layer, target)
                        if not ok:
                            bad.append(f"{rel}:{no}: {layer}/ may not include \"{target}\"")
    for b in bad:
        print(b)
    print(f"check_layers: {checked} includes checked, {len(bad)} forbidden")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
