// The history page of one spec name (#/history/NAME): Valid FLOPS,
// throughput and quality of its scored runs over time, oldest first, with
// the tolerance band each run was judged against and the runs that fell
// below it marked as regressions. The coordinator computes the band with
// the C++ of `hpcai500 regress` (methodology/regress_band.h BandsOverHistory)
// and serves it with the values (GET /api/v1/history?name=NAME); this page only
// draws it. The change points the coordinator keeps for the spec's series
// (GET /api/v1/changes?name=NAME) are drawn as vertical lines where each
// began, and listed with what changed in the runs' fingerprints.

import {lineChart} from './chart.js';
import {cell, element, formatFlops, formatQuality, formatScaled, formatTime, getJson, link} from './format.js';

// The metrics drawn: their key in the API's "metrics" of a run.
const METRICS = [
  {
    key: 'valid_flops',
    id: 'chart-history-vflops',
    title: 'Valid FLOPS',
    format: formatFlops,
  },
  {
    key: 'throughput',
    id: 'chart-history-throughput',
    title: 'Throughput',
    format: (v) => formatScaled(v, 'samples/s'),
  },
  {
    key: 'quality',
    id: 'chart-history-quality',
    title: 'Quality',
    format: (v) => formatQuality(v),
  },
];

// One metric of the API's runs (oldest first) as a chart's parts: points
// (x: 1.. in run order, flagged when a regression), the band where the run
// had one, and the regressions as {run, value, lo, hi}.
export function historySeries(runs, key) {
  const points = [];
  const band = [];
  const regressions = [];
  (runs || []).forEach((run, i) => {
    const m = (run.metrics || {})[key] || {};
    const value = Number(m.value) || 0;
    const hasBand = m.low !== null && m.low !== undefined && m.high !== null &&
        m.high !== undefined;
    if (hasBand) band.push({x: i + 1, lo: Number(m.low), hi: Number(m.high)});
    const flag = Boolean(m.regression);
    if (flag) {
      regressions.push({run, value, lo: Number(m.low), hi: Number(m.high)});
    }
    points.push({x: i + 1, y: value, flag});
  });
  return {points, band, regressions};
}

// The change points of one metric as chart marks: x is the place (1..) of
// the change's first run among `runs` (oldest first); changes of runs the
// page does not show are left out.
export function changeMarks(changes, runs, key) {
  const place = new Map((runs || []).map((run, i) => [String(run.id), i + 1]));
  const marks = [];
  for (const change of changes || []) {
    const x = place.get(String(change.run_id));
    if (change.metric !== key || x === undefined) continue;
    const pct = Number(change.change_pct) || 0;
    marks.push({
      x,
      bad: Boolean(change.regression),
      label: `change at run ${change.run_id}: ${pct > 0 ? '+' : ''}${
          pct.toFixed(1)}% (${change.gradual ? 'drift' : 'step'}); ${
          change.attribution || ''}`,
    });
  }
  return marks;
}

function chart(metric, runs, regressions, changes) {
  const series = historySeries(runs, metric.key);
  for (const r of series.regressions) regressions.push({...r, metric});
  const points = series.points.map(
      (p, i) => ({
        ...p,
        label: `run ${runs[i].id}, ${formatTime(runs[i].finished_ms)}: ${
            metric.format(p.y)}${p.flag ? ' (regression)' : ''}`,
      }));
  return lineChart({
    id: metric.id,
    title: metric.title,
    yLabel: metric.title,
    xLabel: 'run (oldest first)',
    points,
    band: series.band,
    marks: changeMarks(changes, runs, metric.key),
  });
}

function changeList(changes) {
  const table = element('table', undefined, 'changes');
  const head = table.createTHead().insertRow();
  for (const title
           of ['Run', 'Finished', 'Metric', 'Change', 'Kind', 'What changed']) {
    head.appendChild(element('th', title));
  }
  const body = table.createTBody();
  for (const c of changes) {
    const tr = body.insertRow();
    cell(tr, link(`#/runs/${encodeURIComponent(c.run_id)}`, String(c.run_id)));
    cell(tr, formatTime(c.finished_ms));
    cell(tr, c.metric);
    const pct = (v) =>
        `${Number(v) > 0 ? '+' : ''}${(Number(v) || 0).toFixed(1)}%`;
    cell(
        tr,
        `${pct(c.change_pct)} [${pct(c.change_pct_low)}, ${
            pct(c.change_pct_high)}]`,
        c.regression ? 'num below-target' : 'num');
    cell(
        tr,
        `${c.regression ? 'regression' : 'improvement'}, ${
            c.gradual ? 'drift' : 'step'}`);
    cell(tr, c.attribution || '');
  }
  return table;
}

// The spec's change points; none when the coordinator keeps none.
async function loadChanges(name) {
  try {
    const json =
        await getJson(`/api/v1/changes?name=${encodeURIComponent(name)}`);
    return json.changes || [];
  } catch (error) {
    return [];
  }
}

function regressionList(regressions) {
  const table = element('table', undefined, 'regressions');
  const head = table.createTHead().insertRow();
  for (const title of ['Run', 'Finished', 'Metric', 'Value', 'Band']) {
    head.appendChild(element('th', title));
  }
  const body = table.createTBody();
  for (const r of regressions) {
    const tr = body.insertRow();
    cell(tr, link(`#/runs/${encodeURIComponent(r.run.id)}`, String(r.run.id)));
    cell(tr, formatTime(r.run.finished_ms));
    cell(tr, r.metric.title);
    cell(tr, r.metric.format(r.value), 'num below-target');
    cell(tr, `${r.metric.format(r.lo)} – ${r.metric.format(r.hi)}`);
  }
  return table;
}

// How the band is drawn, from the API's "band".
function about(count, band) {
  const width = `${band.threshold} robust standard deviations ` +
      `(1.4826 × MAD, at least ${band.min_band_pct}%)`;
  return `${count} scored runs. The band is the median ± ${width} of the ` +
      `last ${band.window} good runs before each, from ${band.min_history} ` +
      'runs of history on (the band of hpcai500 regress, with its defaults).';
}

export async function load(view, name) {
  const container = document.getElementById('history');
  try {
    const json =
        await getJson(`/api/v1/history?name=${encodeURIComponent(name)}`);
    if (!view.current()) return false;
    const runs = json.runs || [];
    const changes = await loadChanges(name);
    if (!view.current()) return false;
    const parts = [element('h2', `History of ${name}`)];
    if (runs.length === 0) {
      parts.push(element('p', 'No scored run of this spec yet.'));
    } else {
      parts.push(element('p', about(runs.length, json.band || {}), 'about'));
      const regressions = [];
      const grid = element('div', undefined, 'charts');
      for (const metric of METRICS) {
        grid.appendChild(chart(metric, runs, regressions, changes));
      }
      parts.push(grid);
      parts.push(element('h3', 'Regressions'));
      const box = element('div', undefined, 'scroll');
      box.appendChild(
          regressions.length ?
              regressionList(regressions) :
              element('p', 'None: every run within its band.'));
      parts.push(box);
      parts.push(element('h3', 'Change points'));
      const changeBox = element('div', undefined, 'scroll');
      changeBox.appendChild(
          changes.length ? changeList(changes) :
                           element('p', 'None found in this series.'));
      parts.push(changeBox);
    }
    container.replaceChildren(...parts);
    view.showStatus('');
  } catch (error) {
    if (!view.current()) return false;
    container.replaceChildren(link('#/runs', 'All runs'));
    view.showStatus(
        `Cannot load the history of ${name}: ${error.message}`, true);
  }
  return false;
}
