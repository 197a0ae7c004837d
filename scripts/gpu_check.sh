#!/usr/bin/env bash
# The GPU checks, run on a machine with an NVIDIA GPU (the device tool's lent machines):
# the device tests (the CPU codegen suites re-run on the GPU, the driver, sessions on
# /gpu:0), then the GPU benchmarks. Logs and the benchmark JSON go to $OUT (or ./gpu-out).
#   bash scripts/gpu_check.sh [test seconds] [benchmark seconds]
set -uo pipefail
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
TEST_SECONDS=${1:-240}
BENCH_SECONDS=${2:-200}
cd "$(dirname "$0")/.."
# Wheels and packed packages carried in .whl/ (see the device notes): installed only where
# the machine's own are older than what tfc was generated or tested with.
SITE=/tmp/tfc-site
mkdir -p "$SITE"
if ls .whl/protobuf-*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target "$SITE" .whl/protobuf-*.whl
fi
if [ -f .whl/llvmlite.tar.xz ] && ! python3 -c "import llvmlite, sys; sys.exit(tuple(map(int, llvmlite.__version__.split('.')[:2])) < (0, 50))"; then
  tar -xJf .whl/llvmlite.tar.xz -C "$SITE"
fi
export PYTHONPATH="$SITE:$PWD"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/device.txt"
# The host CPU's bf16 features: native bf16 kernels (issue 17) need AMX or AVX512-BF16 to test.
echo "host cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2) bf16 features: $(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(amx|avx512_bf16)' | sort -u | tr '\n' ' ')" | tee -a "$OUT/device.txt"
python3 -c "import llvmlite, numpy, google.protobuf as p; print('llvmlite', llvmlite.__version__, 'numpy', numpy.__version__, 'protobuf', p.__version__)" | tee -a "$OUT/device.txt"
python3 -c "from tfc.runtime.cuda import driver; d = driver(); print('driver', d.name, d.device_name(), d.compute_capability())" 2>&1 | tee -a "$OUT/device.txt"
PYTEST_ARGS=""
python3 -c "import xdist" 2>/dev/null && PYTEST_ARGS="-n 8 --dist load"
python3 -c "import pytest_timeout" 2>/dev/null && PYTEST_ARGS="$PYTEST_ARGS --timeout 180"
timeout "$TEST_SECONDS" python3 -m pytest -q -p no:cacheprovider $PYTEST_ARGS --maxfail=40 -rfE \
  tests/runtime/cuda tests/codegen/gpu/test_device_ops.py tests/codegen/gpu/test_device_fusions.py \
  tests/codegen/gpu/test_device_checks.py tests/codegen/gpu/test_device_control_flow.py \
  tests/codegen/gpu/test_device_cooperative.py tests/codegen/gpu/test_compile_target.py tests/codegen/gpu/test_ptx.py \
  tests/fuzz/test_gpu_graph_fuzz.py::test_fuzzed_graphs_on_a_cuda_device 2>&1 | tee "$OUT/tests.log" | tail -40
timeout "$BENCH_SECONDS" python3 -m benchmarks.gpu --reps 10 --profile 6 --variant row-loops --variant narrow-items --variant split-32 --variant small-tiles --variant scalar-shared --json "$OUT/bench.json" 2>&1 | tee "$OUT/bench.log"
