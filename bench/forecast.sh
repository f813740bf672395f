#!/usr/bin/env bash
# Early abort measured on runs whose outcome is known: the real worker
# trains fashion_mnist_curve (8 epochs, target 0.75) at four batch sizes, a
# well-tuned one and badly tuned ones (lr is per 256 images, so a larger
# batch takes fewer, larger steps; 640 diverges), for each seed; then
# hpcai500-forecast-replay replays each quality curve through the
# coordinator's forecast epoch by epoch and prints, in Markdown, how often it
# was right and what abort_if_hopeless would have saved (bench/RESULTS.md).
# --deterministic and one thread: a rerun draws the same curves.
#
# Usage: bench/forecast.sh [BUILD_DIR]  (default ./build, configured with
#   -DHPCAI500_BUILD_BENCH=ON; needs bin/hpcai500-worker and
#   bin/hpcai500-forecast-replay). SEEDS="1 2 3" and BATCHES="32 64 256 640"
#   override the runs. About 20 s a run on one core.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${1:-$ROOT/build}"
SEEDS="${SEEDS:-1 2 3}"
BATCHES="${BATCHES:-32 64 256 640}"
CONFIG=fashion_mnist_curve
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
runs=()
for batch in $BATCHES; do
  for seed in $SEEDS; do
    events="$OUT/batch$batch-seed$seed.events"
    "$BUILD/bin/hpcai500-worker" --workload image_classification \
      --config "$CONFIG" --batch-size "$batch" --seed "$seed" --threads 1 \
      --deterministic >"$events" 2>/dev/null
    runs+=("batch $batch seed $seed=$events")
  done
done
"$BUILD/bin/hpcai500-forecast-replay" "image_classification/$CONFIG" \
  "${runs[@]}"
