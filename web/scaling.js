// The scaling page of one system and workload (#/scaling?system=S&
// workload=W): Valid FLOPS and parallel efficiency against the number of
// devices (nodes x ranks per node), from the stored runs that succeeded
// with a score (GET /api/v1/runs).

import {lineChart} from './chart.js';
import {cell, element, formatFlops, getJson, link} from './format.js';

// The runs of `system` that count: succeeded, scored, not invalidated.
function counted(runs, system) {
  return (runs || [])
      .filter(
          (run) => run.score && !run.invalidated_by &&
              (run.spec || {}).system === system);
}

// One point per device count, fewest first: {devices, validFlops (the mean
// over its runs), runs, efficiency}. Parallel efficiency is Valid FLOPS per
// device against that of the fewest devices measured: 1 is perfect scaling.
export function scalingPoints(runs, system) {
  const byDevices = new Map();
  for (const run of counted(runs, system)) {
    const spec = run.spec;
    const devices =
        (Number(spec.nodes) || 1) * (Number(spec.ranks_per_node) || 1);
    const entry = byDevices.get(devices) || {sum: 0, runs: 0};
    entry.sum += Number(run.score.valid_flops) || 0;
    entry.runs += 1;
    byDevices.set(devices, entry);
  }
  const points = [...byDevices.entries()]
                     .sort(([a], [b]) => a - b)
                     .map(([devices, e]) => ({
                            devices,
                            validFlops: e.sum / e.runs,
                            runs: e.runs,
                          }));
  if (points.length === 0) return points;
  const base = points[0].validFlops / points[0].devices;
  for (const p of points) {
    p.efficiency = base > 0 ? p.validFlops / p.devices / base : 0;
  }
  return points;
}

function table(points) {
  const node = element('table', undefined, 'scaling');
  const head = node.createTHead().insertRow();
  for (const title of ['Devices', 'Valid FLOPS (mean)', 'Efficiency', 'Runs']) {
    head.appendChild(element('th', title));
  }
  const body = node.createTBody();
  for (const p of points) {
    const tr = body.insertRow();
    cell(tr, String(p.devices), 'num');
    cell(tr, formatFlops(p.validFlops), 'num');
    cell(tr, `${(p.efficiency * 100).toFixed(1)}%`, 'num');
    cell(tr, String(p.runs), 'num');
  }
  return node;
}

// Reads system and workload from the hash's query, not from the router's
// decoded argument, so that a name holding '&' stays whole.
function wanted() {
  const hash = window.location.hash;
  const at = hash.indexOf('?');
  return new URLSearchParams(at < 0 ? '' : hash.slice(at + 1));
}

export async function load(view) {
  const container = document.getElementById('scaling');
  const params = wanted();
  const system = params.get('system') || '';
  const workload = params.get('workload') || 'image_classification';
  try {
    if (!system) throw new Error('say which system: #/scaling?system=NAME');
    const json = await getJson(`/api/v1/runs?workload=${
        encodeURIComponent(workload)}&state=succeeded&limit=1000`);
    if (!view.current()) return false;
    const points = scalingPoints(json.runs, system);
    const parts = [element('h2', `Scaling of ${system} on ${workload}`)];
    if (points.length === 0) {
      parts.push(element('p', 'No scored run of this system yet.'));
    } else {
      const grid = element('div', undefined, 'charts');
      grid.appendChild(lineChart({
        id: 'chart-scaling-vflops',
        title: 'Valid FLOPS against devices',
        yLabel: 'Valid FLOPS',
        xLabel: 'devices',
        points: points.map(
            (p) => ({
              x: p.devices,
              y: p.validFlops,
              label: `${p.devices} devices: ${formatFlops(p.validFlops)}`,
            })),
      }));
      grid.appendChild(lineChart({
        id: 'chart-scaling-efficiency',
        title: 'Parallel efficiency',
        yLabel: 'efficiency (%)',
        xLabel: 'devices',
        points: points.map((p) => ({x: p.devices, y: p.efficiency * 100})),
        reference: {value: 100, label: 'perfect'},
      }));
      parts.push(grid, table(points));
    }
    parts.push(link('#/', 'Leaderboard'));
    container.replaceChildren(...parts);
    view.showStatus('');
  } catch (error) {
    if (!view.current()) return false;
    container.replaceChildren(link('#/', 'Leaderboard'));
    view.showStatus(`Cannot show the scaling: ${error.message}`, true);
  }
  return false;
}
