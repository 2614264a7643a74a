#!/usr/bin/env python3
"""The benchmarks still compile: every bench/*.cpp through its own compile
command (compile_commands.json), with -fsyntax-only.

`./dev test` does not build the benchmarks (they are the build's
`benchmarks` target, which `./dev build` and `./dev bench` build): no test
runs them, and at -O3 with Eigen's decompositions they were a fifth of a
fresh build's compile work. This check runs the compiler's front end on each,
with the flags, include paths and definitions of the real build, so a change
to the API that breaks a benchmark fails here; code generation and linking
are left to the benchmark build itself.

    python3 tests/check_bench_compiles.py BUILD_DIR SOURCE_DIR

Exits 1 and prints the compiler's messages for every benchmark that does not
compile.
"""
import json
import os
import shlex
import subprocess
import sys
import time


def syntax_command(entry):
    """The entry's compile command without its outputs, with -fsyntax-only."""
    args = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
            continue
        if a in ("-o", "-MF", "-MT", "-MQ"):
            skip = True
            continue
        if a in ("-MD", "-MMD"):
            continue
        out.append(a)
    return out + ["-fsyntax-only"]


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: check_bench_compiles.py BUILD_DIR SOURCE_DIR")
    build, source = (os.path.abspath(p) for p in sys.argv[1:3])
    with open(os.path.join(build, "compile_commands.json")) as f:
        entries = json.load(f)
    bench = os.path.join(source, "bench") + os.sep
    seen, failed = set(), []
    for e in entries:
        src = os.path.abspath(os.path.join(e["directory"], e["file"]))
        # bench/NAME.cpp (the executables), bench/peers/*.cpp (their peers' libraries)
        if not src.startswith(bench) or not src.endswith(".cpp") or src in seen:
            continue
        seen.add(src)
        t0 = time.monotonic()
        r = subprocess.run(syntax_command(e), cwd=e["directory"], capture_output=True, text=True)
        name = os.path.relpath(src, source)
        print(f"{name}: {'ok' if r.returncode == 0 else 'FAILED'} ({time.monotonic() - t0:.1f} s)", flush=True)
        if r.returncode != 0:
            failed.append(name)
            sys.stdout.write(r.stderr)
    if not seen:
        sys.exit(f"no bench/*.cpp in {build}/compile_commands.json (configured with AJ_BUILD_BENCH=OFF?)")
    if failed:
        sys.exit(f"{len(failed)} of {len(seen)} benchmark files do not compile: {', '.join(failed)}")
    print(f"all {len(seen)} benchmark files compile")


if __name__ == "__main__":
    main()
