#!/usr/bin/env bash
# The GPU checks of issue 14 on a lent GPU machine, in one call (results: bench/RESULTS.md,
# "2026-11-27 (second session)"):
#   1. the dana-fig3 paper preset (variant_runs = 0, as the CPU timings) in float64, then in
#      certified float32, each with an empty compilation cache, wall time and claims;
#   2. `python bench/bench_gpu.py` (the engine against the device's large GEMM and a
#      PyTorch loop on the same GPU);
#   3. the test suite on the GPU, in the time left (the log tells which tests ran).
# Run from the repository root, after the Python packages the machine lacks are installed
# (wheels in .whl/, if any, go to /tmp/site). Writes logs and JSON to $OUT (default: a temporary
# folder). Usage: bench/device_check.sh [total seconds, default 540]; PRESET=quick for a dry run;
# STAGES="paper64 paper32 bench tests" (the default) or a part of it.
set -u
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
budget=${1:-540}
t0=$(date +%s)
elapsed() { echo $(( $(date +%s) - t0 )); }
log() { echo "[$(elapsed) s] $*"; }
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
nvidia-smi -L
python3 -c "import jax, shallowflow.cli.commands; print('jax', jax.__version__, jax.devices())" || exit 1
stages=${STAGES:-paper64 paper32 bench tests}
want() { [[ " $stages " == *" $1 "* ]]; }
# the tests run the command line as `shallowflow` beside the interpreter
exe="$(dirname "$(python3 -c 'import sys; print(sys.executable)')")/shallowflow"
[ -e "$exe" ] || printf '#!%s\nfrom shallowflow.cli.commands import main\nmain()\n' \
  "$(python3 -c 'import sys; print(sys.executable)')" >"$exe" && chmod +x "$exe"

preset() {  # name, seconds at most, extra arguments
  local name=$1 cap=$2; shift 2
  local left=$(( budget - $(elapsed) - 5 ))
  [ "$left" -lt "$cap" ] && cap=$left
  [ "$cap" -lt 20 ] && { log "preset $name: no time left"; return; }
  export SHALLOWFLOW_CACHE_DIR
  SHALLOWFLOW_CACHE_DIR=$(mktemp -d)
  local start
  start=$(date +%s.%N)
  timeout "$cap" python3 -m shallowflow.cli.commands reproduce dana-fig3 --preset "${PRESET:-paper}" \
    --set variant_runs=0 --out "/tmp/$name" "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  log "preset $name: rc $rc, $(python3 -c "import time; print(f'{time.time() - $start:.1f}')") s"
  tail -n 4 "$OUT/$name.log"
  for f in claims.json report.md; do
    [ -f "/tmp/$name/dana-fig3/$f" ] && cp "/tmp/$name/dana-fig3/$f" "$OUT/$name-$f"
    [ -f "/tmp/$name/$f" ] && cp "/tmp/$name/$f" "$OUT/$name-$f"
  done
}

want paper64 && preset paper64 "${CAP64:-170}"
want paper32 && preset paper32 "${CAP32:-150}" --dtype float32 --precision-certificate 1
if want bench; then
  log "gpu benchmark"
  timeout 150 python3 bench/bench_gpu.py --out "$OUT" >"$OUT/gpu.log" 2>&1
  log "gpu benchmark: rc $?"
  tail -n 20 "$OUT/gpu.log"
fi

left=$(( budget - $(elapsed) - 10 ))
if want tests && [ "$left" -gt 30 ]; then
  log "tests, $left s at most"
  XLA_PYTHON_CLIENT_PREALLOCATE=false timeout "$left" python3 -m pytest -n 12 -p no:cacheprovider \
    -o addopts="" -v -rf --durations=5 tests >"$OUT/tests.log" 2>&1
  log "tests: rc $?"
  grep -E "FAILED|ERROR" "$OUT/tests.log" | head -40
  grep -c PASSED "$OUT/tests.log"
  tail -n 3 "$OUT/tests.log"
fi
log "done"
