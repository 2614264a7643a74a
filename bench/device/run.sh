#!/usr/bin/env bash
# Runs on the GPU machine (through the device tool), from the repository root,
# with .device/ carried (bench/device/pack.sh made it):
#
#   bench/device/run.sh [STAGE...]     stages: info tests bench torch (default: all four)
#
# info   nvidia-smi, the driver and NVRTC arrayjit finds
# tests  the CUDA tests (the `cuda gpu:` cases no longer skip), then the whole suite
# bench  bench/bench_cuda (arrayjit) and bench_host
# torch  bench/bench_cuda_torch.py (torch eager and torch.compile, same cases)
# Everything is also written to $OUT (the tool brings it back).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
OUT=${OUT:-/tmp/aj-out}
mkdir -p "$OUT"
[[ -f .device/arrayjit-device.tar.gz ]] || { echo "run.sh: .device/arrayjit-device.tar.gz missing: run bench/device/pack.sh here and carry .device"; exit 2; }
D=/tmp/aj-device
rm -rf "$D" && mkdir -p "$D" && tar -xzf .device/arrayjit-device.tar.gz -C "$D"
D=$D/arrayjit
export LD_LIBRARY_PATH=$D/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export AJ_CACHE_DIR=/tmp/aj-cache
stages=("$@")
((${#stages[@]})) || stages=(info tests bench torch)
echo "arrayjit $(cat "$D/COMMIT") on $(hostname)"
rc=0
for s in "${stages[@]}"; do
  echo "== $s"
  case $s in
    info)
      nvidia-smi 2>&1 | tee "$OUT/nvidia-smi.txt"
      ls /usr/local/cuda/lib64/libnvrtc.so* 2>&1 | head -3 ;;
    tests)
      "$D/bin/aj_tests" -tc='cuda*' -s 2>&1 | grep -v '^$' > "$OUT/tests-cuda.log"; r=${PIPESTATUS[0]}
      grep -E 'MESSAGE|ERROR|test cases|assertions|Status' "$OUT/tests-cuda.log" | tail -40
      ((r)) && rc=$r
      "$D/bin/aj_tests" 2>&1 | tail -4; r=${PIPESTATUS[0]}
      ((r)) && rc=$r ;;
    bench)
      "$D/bin/bench_cuda" 2>&1 | tee "$OUT/bench_cuda.txt"; ((PIPESTATUS[0])) && rc=1
      "$D/bin/bench_host" --quick 2>&1 | tee "$OUT/bench_host.txt" ;;
    torch)
      PYTHONUNBUFFERED=1 python3 bench/bench_cuda_torch.py 2>&1 | tee "$OUT/bench_torch.txt"; ((PIPESTATUS[0])) && rc=1 ;;
    *) echo "run.sh: unknown stage '$s' (info tests bench torch)"; rc=2 ;;
  esac
done
exit $rc
