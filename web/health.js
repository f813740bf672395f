// Node health on the pages (docs/design.md "Node health"): what the nodes
// page shows of a node's flag, incidents and last pre-flight, and the run
// page's line for its stragglers. Pure functions.

// "flagged: <evidence> (2 incidents)", "2 incidents", or "-".
export function healthText(node) {
  const count = Number(node.incidents || 0);
  const incidents = count ? `${count} incident${count === 1 ? '' : 's'}` : '';
  if (node.flag) {
    return `flagged: ${node.flag}${incidents ? ` (${incidents})` : ''}`;
  }
  return incidents || '-';
}

// The last pre-flight's figures in one line ("gemm 241 GFLOP/s, memory 8.5
// GB/s, all-reduce 0.35 GB/s in 3.7 s"), its error, or "-" without one.
export function preflightText(result) {
  if (!result || !result.node) return '-';
  if (result.error) return `failed: ${result.error}`;
  const figures = result.figures || {};
  const parts = [
    ['gemm', 'gemm_gflops', 'GFLOP/s'],
    ['memory', 'memory_gbps', 'GB/s'],
    ['h2d', 'h2d_gbps', 'GB/s'],
    ['all-reduce', 'allreduce_busbw_gbps', 'GB/s'],
  ].filter(([, key]) => key in figures)
                    .map(([name, key, unit]) =>
                             `${name} ${Number(figures[key]).toPrecision(3)} ${
                                 unit}`);
  const seconds = Number(result.seconds || 0).toFixed(1);
  return `${parts.join(', ')} in ${seconds} s${
      result.flagged ? ' (flagged)' : ''}`;
}

// One line per incident of a run: "node-c (attempt 1, rank 2): <detail>".
export function incidentLines(incidents) {
  return (incidents || []).map(
      (i) => `${i.node} (attempt ${i.attempt || 0}, rank ${i.rank || 0}): ${
          i.detail}`);
}
