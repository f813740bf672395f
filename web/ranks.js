// What the run page draws from each rank's epochs (GET
// /api/v1/runs/ID/ranks, RankEpoch rows): per-rank throughput, the
// straggler, where the time went (compute, input wait, communication) and
// energy. Pure functions over the API's JSON (int64 fields come as
// strings).

// A rank slower than the median rank by more than this is a straggler.
export const STRAGGLER_THRESHOLD = 0.10;

function median(values) {
  const sorted = values.slice().sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

// [{name: 'rank 0', points: [{x: epoch, y: samples/s}]}, ...] by rank.
export function throughputByRank(rows) {
  const byRank = new Map();
  for (const row of rows || []) {
    const rank = Number(row.rank) || 0;
    if (!byRank.has(rank)) byRank.set(rank, []);
    byRank.get(rank).push({x: row.epoch, y: Number(row.throughput) || 0});
  }
  return [...byRank.entries()]
      .sort(([a], [b]) => a - b)
      .map(([rank, points]) => ({
             name: `rank ${rank}`,
             points: points.sort((p, q) => p.x - q.x),
           }));
}

// The slowest rank when its mean throughput over the epochs is more than
// STRAGGLER_THRESHOLD below the median rank's: {rank, slower, median,
// throughput} (slower: 0.23 for 23% slower); null with fewer than two ranks
// or none that slow.
export function findStraggler(rows) {
  const series = throughputByRank(rows);
  if (series.length < 2) return null;
  const means = series.map(
      (s) => ({
        rank: Number(s.name.replace('rank ', '')),
        throughput: s.points.reduce((t, p) => t + p.y, 0) / s.points.length,
      }));
  const middle = median(means.map((m) => m.throughput));
  if (!(middle > 0)) return null;
  const slowest = means.reduce((a, b) => (b.throughput < a.throughput ? b : a));
  const slower = 1 - slowest.throughput / middle;
  if (slower <= STRAGGLER_THRESHOLD) return null;
  return {
    rank: slowest.rank,
    slower,
    median: middle,
    throughput: slowest.throughput
  };
}

// Mean seconds per rank of each epoch in compute, input wait and
// communication: three series, or [] when the events carry none.
export function timeSplit(rows) {
  const byEpoch = new Map();
  for (const row of rows || []) {
    const e = byEpoch.get(row.epoch) || {n: 0, compute: 0, input: 0, comm: 0};
    e.n += 1;
    e.compute += Number(row.compute_seconds) || 0;
    e.input += Number(row.input_wait_seconds) || 0;
    e.comm += Number(row.comm_wait_seconds) || 0;
    byEpoch.set(row.epoch, e);
  }
  const epochs = [...byEpoch.entries()].sort(([a], [b]) => a - b);
  if (!epochs.some(([, e]) => e.compute + e.input + e.comm > 0)) return [];
  const series = (name, field) => ({
    name,
    points: epochs.map(([epoch, e]) => ({x: epoch, y: e[field] / e.n})),
  });
  return [
    series('compute', 'compute'), series('input wait', 'input'),
    series('communication', 'comm')
  ];
}

// Joules of each epoch summed over ranks ([{x: epoch, y}]); [] when no rank
// measured energy.
export function energyByEpoch(rows) {
  const byEpoch = new Map();
  for (const row of rows || []) {
    byEpoch.set(
        row.epoch,
        (byEpoch.get(row.epoch) || 0) + (Number(row.energy_joules) || 0));
  }
  const points =
      [...byEpoch.entries()].sort(([a], [b]) => a - b).map(([x,
                                                             y]) => ({x, y}));
  return points.some((p) => p.y > 0) ? points : [];
}
