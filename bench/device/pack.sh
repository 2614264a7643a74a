#!/usr/bin/env bash
# Builds arrayjit for the GPU machine and packs it into .device/arrayjit-device.tar.gz.
#
# That machine (see bench/README.md, "CUDA") has the CUDA driver, NVRTC, PyTorch,
# CMake and a compiler, but no LLVM, Eigen, SLEEF or doctest, and only 64 MiB
# of files travel to it. So the build happens here: Release, with LLVM's static
# component libraries linked into libarrayjit (-DAJ_LLVM_STATIC=ON: no
# libLLVM-19.so needed there), stripped, with the few shared libraries it needs
# that may be missing there (SLEEF, zstd), gzip-compressed (about 15 MB).
#
#   bench/device/pack.sh            build into build-device/, write the archive
#   then, with the device tool:     run(command="bench/device/run.sh", carry=[".device"])
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
B=${AJ_DEVICE_BUILD:-build-device}
./dev deps
cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DAJ_LLVM_STATIC=ON \
  -DAJ_INSTALL=OFF -DAJ_TEST_INSTALL=OFF -DAJ_BUILD_EXAMPLES=ON -DAJ_BUILD_BENCH=ON -DAJ_BENCH_MARCH=x86-64-v3 >/dev/null
cmake --build "$B" --target arrayjit aj_tests bench_cuda bench_host dispatch_plan dispatch_cuda

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/arrayjit/bin" "$stage/arrayjit/lib"
strip -o "$stage/arrayjit/lib/libarrayjit.so.0.1" "$B/libarrayjit.so.0.1.0"
for exe in "$B/aj_tests" "$B/bench/bench_cuda" "$B/bench/bench_host" "$B/bench/dispatch_plan" "$B/bench/dispatch_cuda"; do
  strip -o "$stage/arrayjit/bin/$(basename "$exe")" "$exe"
done
# Shared libraries libarrayjit needs besides libc/libstdc++ (which the GPU
# machine's newer system has): copied under their sonames. OpenBLAS (the host
# matmul) brings libgfortran and libquadmath.
for so in libsleef.so.3 libzstd.so.1 libopenblas.so.0 libgfortran.so.5 libquadmath.so.0; do
  path=$(ldd "$B/libarrayjit.so.0.1.0" | awk -v n="$so" '$1 == n { print $3 }')
  if [[ -n $path ]]; then cp -L "$path" "$stage/arrayjit/lib/$so"; else echo "pack.sh: $so not linked, not packed"; fi
done
git describe --always --dirty > "$stage/arrayjit/COMMIT"
mkdir -p .device
tar -C "$stage" -czf .device/arrayjit-device.tar.gz arrayjit
ls -l .device/arrayjit-device.tar.gz
