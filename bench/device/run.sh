#!/usr/bin/env bash
# Runs on the GPU machine (through the device tool), from the repository root,
# with .device/ carried (bench/device/pack.sh made it):
#
#   bench/device/run.sh [STAGE...]     stages: info tests bench torch (default: all four)
#
# info   the GPU, driver, CPU, NVRTC and PyTorch the run finds
# tests  the `cuda gpu:` tests (no longer skipped), and the differential
#        random graphs in AJ_SHARDS parallel processes (AJ_GRAPHS graphs in
#        all, each shard stopping after AJ_GRAPH_SECONDS; NVRTC compiles run
#        on the machine's cores; shards from AJ_FULL_SHARDS on compile with
#        AJ_NVRTC_FLAGS=-Ofc=mid). The whole suite runs in CI, not here.
# bench  bench/bench_cuda (arrayjit's CUDA cases, the copy bandwidth they are
#        held to)
# torch  bench/bench_cuda_torch.py (torch eager and torch.compile, the same
#        cases) and tests/cuda_torch_stream.py (a stream PyTorch created)
#
# The device time is short: every stage is bounded by `timeout`, prints as it
# goes, and writes its log under $OUT (at most 8 files come back): info.txt,
# tests.log, graphs.log, bench_cuda.txt, torch.txt.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
OUT=${OUT:-/tmp/aj-out}
mkdir -p "$OUT"
[[ -f .device/arrayjit-device.tar.gz ]] || { echo "run.sh: .device/arrayjit-device.tar.gz missing: run bench/device/pack.sh here and carry .device"; exit 2; }
D=/tmp/aj-device
rm -rf "$D" && mkdir -p "$D" && tar -xzf .device/arrayjit-device.tar.gz -C "$D"
D=$D/arrayjit
export LD_LIBRARY_PATH=$D/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export AJ_CACHE_DIR=${AJ_CACHE_DIR:-/tmp/aj-cache}
export AJ_LIB=$D/lib/libarrayjit.so.0.1
export PYTHONUNBUFFERED=1
SHARDS=${AJ_SHARDS:-16}
GRAPHS=${AJ_GRAPHS:-11000}
GRAPH_SECONDS=${AJ_GRAPH_SECONDS:-200}
stages=("$@")
((${#stages[@]})) || stages=(info tests bench torch)
echo "arrayjit $(cat "$D/COMMIT") on $(hostname), $(date -u +%FT%TZ)"
rc=0
t0=$SECONDS
for s in "${stages[@]}"; do
  echo "== $s ($((SECONDS - t0)) s)"
  case $s in
    info)
      {
        nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem,clocks.max.sm --format=csv
        grep -m1 'model name' /proc/cpuinfo; nproc
        ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda/lib64/libcublas.so* 2>&1 | head -6
        timeout 60 python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda, torch.cuda.get_device_name())'
        timeout 30 "$D/bin/aj_tests" --no-intro -tc='cuda: without a driver*,cuda: NVRTC*' -s 2>&1 | grep -E 'MESSAGE|ERROR|Status' | head
      } 2>&1 | tee "$OUT/info.txt" ;;
    tests)
      # The shards: the differential random graphs, GRAPHS in all.
      per=$(((GRAPHS + SHARDS - 1) / SHARDS))
      mkdir -p /tmp/aj-graphs
      pids=()
      # NVRTC's compile of each new kernel (0.1-0.3 s a kernel on one core)
      # is what bounds the count: shards past the first FULL_SHARDS compile
      # with -Ofc=mid (about half the time; the same source, less optimized).
      for ((i = 0; i < SHARDS; i++)); do
        flags=""
        ((i >= ${AJ_FULL_SHARDS:-3})) && flags="-Ofc=mid"
        AJ_NVRTC_FLAGS=$flags AJ_GPU_GRAPHS=$per AJ_GPU_GRAPH_FIRST=$((i * per)) AJ_GPU_GRAPH_SECONDS=$GRAPH_SECONDS \
          timeout $((GRAPH_SECONDS + 30)) "$D/bin/aj_tests" --no-intro -tc='cuda gpu: random graphs*' \
          > /tmp/aj-graphs/$i.log 2>&1 &
        pids+=($!)
      done
      # Meanwhile the other GPU tests, one process.
      timeout $((GRAPH_SECONDS + 30)) "$D/bin/aj_tests" --no-intro -tc='cuda gpu: *,cuda: *' -tce='cuda gpu: random graphs*' -d \
        2>&1 | grep -v '^$' > "$OUT/tests.log"
      r=${PIPESTATUS[0]}
      grep -E 'ERROR|FAILED|Exception|exception|test cases|assertions|Status' "$OUT/tests.log" | tail -60
      echo "skipped messages: $(grep -c 'skipped' "$OUT/tests.log")"
      ((r)) && { echo "tests: exit $r"; rc=1; }
      for p in "${pids[@]}"; do wait "$p" || rc=1; done
      cat /tmp/aj-graphs/*.log > "$OUT/graphs.log"
      for ((i = 0; i < SHARDS; i++)); do
        echo "shard $i: $(grep -h 'random graphs on the GPU:' /tmp/aj-graphs/$i.log | sed 's/.*MESSAGE: //')"
      done
      awk '/random graphs on the GPU:/ { for (i = 1; i <= NF; ++i) if ($i == "compared") n += $(i - 1) } END { print "graphs compared in all:", n + 0 }' /tmp/aj-graphs/*.log
      grep -h -E 'ERROR|seed [0-9]+' /tmp/aj-graphs/*.log | head -40 ;;
    bench)
      timeout 140 "$D/bin/bench_cuda" 2>&1 | tee "$OUT/bench_cuda.txt"
      ((PIPESTATUS[0])) && { echo "bench_cuda: failed"; rc=1; }
      # arrayjit's own host work per call on this CPU (a null driver), and the host JIT's
      { timeout 60 "$D/bin/dispatch_cuda"; timeout 60 "$D/bin/dispatch_plan" | head -9; } 2>&1 | tee -a "$OUT/bench_cuda.txt" ;;
    torch)
      { timeout 40 python3 tests/cuda_torch_stream.py; echo "cuda_torch_stream.py: exit $?"
        timeout 160 python3 bench/bench_cuda_torch.py; echo "bench_cuda_torch.py: exit $?"; } 2>&1 | tee "$OUT/torch.txt" ;;
    *) echo "run.sh: unknown stage '$s' (info tests bench torch)"; rc=2 ;;
  esac
done
echo "== done ($((SECONDS - t0)) s), rc $rc"
exit $rc
