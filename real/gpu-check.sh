#!/usr/bin/env bash
# The GPU check of the real backend's CUDA engine, for a GPU machine without Debian's packages
# (the device tool's nvidia-h200): builds replisim without the simulator (REPLISIM_WITH_SIM=OFF)
# and with the CUDA engine, using that machine's own nvcc, cuBLAS, compiler and CMake and the
# dependencies packed beside the script (the header-only libraries, OpenBLAS and what it needs,
# zlib, OpenSSL's libcrypto and headers, GoogleTest's sources); runs the CUDA engine's tests,
# prints bench_gpu's figures (the engine's FLOP/s on the plan's GEMM shapes, a step's and its three
# largest products', next to a bare cuBLAS loop and cuBLAS at 8192^3, its copies next to a bare
# cudaMemcpy), then calibrates that machine and really runs a worker with a tower per GPU (two at
# most) and a PS there, leaving the calibration, the scenario and the run's trace in one folder
# ($GPU_CHECK_OUT, default gpu-check-out/) for `replisim validate SCENARIO --measured TRACE` on a
# machine with the simulator. About 4 minutes on 16 cores.
#
#   real/gpu-check.sh --pack   here (scripts/setup's packages installed): writes
#                              .gpu-deps/deps.tar.xz (git ignores .gpu-deps; the device tool
#                              carries it: carry [".gpu-deps"])
#   real/gpu-check.sh          there (or here: the same build and tests; what needs a GPU says
#                              it skipped and why)
# Everything it builds goes to build-gpu/; the packed dependencies unpack into build-gpu/deps/.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
pack=.gpu-deps/deps.tar.xz

if [ "${1:-}" = "--pack" ]; then
  stage=$(mktemp -d)
  trap 'rm -rf "$stage"' EXIT
  mkdir -p "$stage/include/openblas" "$stage/include/openssl" "$stage/lib"
  cp -r /usr/include/nlohmann /usr/include/CLI /usr/include/asio /usr/include/asio.hpp \
    "$stage/include/"
  cp /usr/include/x86_64-linux-gnu/openblas-pthread/*.h "$stage/include/openblas/"
  cp /usr/include/zlib.h /usr/include/zconf.h "$stage/include/"
  cp /usr/include/openssl/*.h /usr/include/x86_64-linux-gnu/openssl/*.h "$stage/include/openssl/"
  cp -L /usr/lib/x86_64-linux-gnu/libopenblas.so.0 /usr/lib/x86_64-linux-gnu/libcrypto.so.3 \
    /lib/x86_64-linux-gnu/libgfortran.so.5 /lib/x86_64-linux-gnu/libquadmath.so.0 \
    /lib/x86_64-linux-gnu/libz.so.1 "$stage/lib/"
  ln -s libcrypto.so.3 "$stage/lib/libcrypto.so"
  cp -r /usr/src/googletest "$stage/googletest"
  mkdir -p .gpu-deps
  tar -C "$stage" -cJf "$pack" .
  echo "gpu-check: packed $(du -h "$pack" | cut -f1) into $pack"
  exit 0
fi

for tool in cmake nvcc c++; do
  command -v "$tool" > /dev/null || { echo "gpu-check: $tool is not on the PATH" >&2; exit 2; }
done
[ -f "$pack" ] || { echo "gpu-check: $pack is missing: run real/gpu-check.sh --pack first" >&2; exit 2; }
deps="$root/build-gpu/deps"
rm -rf "$deps"
mkdir -p "$deps"
tar -C "$deps" -xJf "$pack"
export LD_LIBRARY_PATH="$deps/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
jobs=$(nproc)
start=$(date +%s)
echo "== configure and build (no simulator, CUDA engine)"
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DREPLISIM_WITH_SIM=OFF \
  -DREPLISIM_WITH_CUDA=ON -DREPLISIM_DEPS_DIR="$deps" -DREPLISIM_BUILD_BENCH=ON \
  > build-gpu/configure.log || { cat build-gpu/configure.log; exit 1; }
grep -E "REPLISIM_WITH" build-gpu/configure.log || true
cmake --build build-gpu -j"$jobs" --target replisim real_tests bench_gpu > build-gpu/build.log ||
  { tail -40 build-gpu/build.log; exit 1; }
echo "== the CUDA engine's tests"
build-gpu/bin/real_tests --gtest_filter='GemmShapes.*:GpuEngine.*:DeviceMemory.*:RealRun.AsyncWorkers*'
echo "== bench_gpu"
build-gpu/bin/bench_gpu --scenario scenarios/seed/two_machines.json --repeat 5
# The calibration and a measured run in one folder ($GPU_CHECK_OUT, default gpu-check-out/), for
# `replisim validate SCENARIO --measured TRACE` on a machine with the simulator.
out=${GPU_CHECK_OUT:-gpu-check-out}
mkdir -p "$out"
echo "== calibrate (this machine: its cores, its first GPU, loopback) into $out/calibration.json"
# --accept-unstable: the file is written whatever the host's load (it records its stability).
build-gpu/bin/replisim calibrate --out "$out/calibration.json" --force --accept-unstable \
  --progress none
gpus=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU' || true)
scenario=one_tower
[ "${gpus:-0}" -ge 2 ] && scenario=two_towers
cp "real/gpu-check/$scenario.json" "$out/$scenario.json"
echo "== a real run of a worker ($scenario) and a PS on this machine: $out/run.trace"
build-gpu/bin/replisim run "$out/$scenario.json" --strategy between_graph \
  --trace-out "$out/run.trace" --force --progress none
echo "gpu-check: done in $(($(date +%s) - start)) s. With the simulator (scripts/setup's build):"
echo "  replisim validate $out/$scenario.json --measured $out/run.trace"
