#!/usr/bin/env bash
# Reference convergence points (docs/design.md "Convergence check"): trains
# one registry config RUNS times with seeds 1..RUNS on one rank whose batch
# is the global batch, and prints the [rcp] section of methodology/registry.ini
# with each run's epochs to target (the first evaluated epoch whose quality
# reached the config's target; a run that never did within the epochs is
# printed as such and left out, as MLCommons leaves out references that do
# not converge).
#
#   bench/make_rcp.sh [--bin-dir build/bin] [--epochs N] [--threads N]
#                     WORKLOAD/CONFIG GLOBAL_BATCH RUNS
#
# --epochs: how long each run may take to reach the target (default twice
# the config's budget), --threads: the worker's threads (default 1, so two
# runs on a 2-core machine do not slow each other). The learning rate
# follows the batch as in any run (the registry's lr is per 256 images).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN_DIR="$ROOT/build/bin"
EPOCHS=""
THREADS=1
while (($# > 0)); do
  case "$1" in
  --bin-dir) BIN_DIR="$(realpath -- "$2")"; shift 2 ;;
  --epochs) EPOCHS="$2"; shift 2 ;;
  --threads) THREADS="$2"; shift 2 ;;
  -*) echo "make_rcp.sh: unknown flag $1" >&2; exit 64 ;;
  *) break ;;
  esac
done
if (($# != 3)); then
  echo "usage: bench/make_rcp.sh [--bin-dir D] [--epochs N] [--threads N]" \
    "WORKLOAD/CONFIG GLOBAL_BATCH RUNS" >&2
  exit 64
fi
WORKLOAD="${1%%/*}"
CONFIG="${1#*/}"
BATCH="$2"
RUNS="$3"
PYTHON="$ROOT/.venv/bin/python3"
[[ -x "$PYTHON" ]] || PYTHON=python3

# The config's target and epoch budget, from the registry the worker has.
read -r TARGET BUDGET < <("$PYTHON" - "$ROOT/methodology/registry.ini" \
  "$WORKLOAD/$CONFIG" <<'PY'
import sys
section, found = None, {}
for line in open(sys.argv[1]):
    line = line.split('#', 1)[0].strip()
    if line.startswith('['):
        section = line.strip('[]').strip()
    elif '=' in line and section == 'config ' + sys.argv[2]:
        key, value = (part.strip() for part in line.split('=', 1))
        found[key] = value
if 'target' not in found:
    sys.exit(f'make_rcp.sh: no config {sys.argv[2]} in the registry')
print(found['target'], found['epochs'])
PY
)
EPOCHS="${EPOCHS:-$((2 * BUDGET))}"

epochs_list=()
for ((seed = 1; seed <= RUNS; ++seed)); do
  reached="$("$BIN_DIR/hpcai500-worker" --workload "$WORKLOAD" \
    --config "$CONFIG" --batch-size "$BATCH" --epochs "$EPOCHS" \
    --seed "$seed" --threads "$THREADS" 2>/dev/null |
    "$PYTHON" -c '
import json, sys
target, first = float(sys.argv[1]), None
for line in sys.stdin:  # all of it: the worker must not die of SIGPIPE
    start = line.find("{")
    if start < 0 or first is not None:
        continue
    event = json.loads(line[start:])
    if event.get("key") == "eval_accuracy" and event["value"] >= target:
        first = event["metadata"]["epoch_num"]
if first is not None:
    print(first)
' "$TARGET")"
  if [[ -z "$reached" ]]; then
    echo "# seed $seed: did not reach $TARGET in $EPOCHS epochs" >&2
  else
    echo "# seed $seed: $reached epochs" >&2
    epochs_list+=("$reached")
  fi
done

echo "[rcp $WORKLOAD/$CONFIG]"
echo "global_batch = $BATCH"
(
  IFS=,
  echo "epochs_to_target = ${epochs_list[*]}" | sed 's/,/, /g'
)
echo "made_by = bench/make_rcp.sh --epochs $EPOCHS $WORKLOAD/$CONFIG $BATCH $RUNS" \
  "($(date -u +%F), seeds 1-$RUNS, one rank, $(nproc) cores)"
