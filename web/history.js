// The history page of one spec name (#/history/NAME): Valid FLOPS,
// throughput and quality of its scored runs over time, oldest first, with
// a tolerance band and the runs that fell below it marked as regressions
// (GET /api/v1/runs?name=NAME).

import {lineChart} from './chart.js';
import {cell, element, formatFlops, formatQuality, formatScaled, formatTime, getJson, link} from './format.js';

// The band: median ± BAND_K x MAD (scaled to a normal's standard deviation)
// of the last BAND_WINDOW good runs before each run, never narrower than
// BAND_MIN_PCT of the median, drawn from BAND_MIN runs of history on: the
// defaults of common/regress_band.h (BandOptions, regress --window), so the
// page marks what `hpcai500 regress` would flag against its learned band.
// (The page computes it rather than asking the coordinator; both sides are
// a few lines: keep them in step.)
export const BAND_WINDOW = 10;
export const BAND_MIN = 5;
export const BAND_MIN_PCT = 2;
export const BAND_K = 3;
const MAD_TO_SIGMA = 1.4826;

function median(values) {
  const sorted = values.slice().sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

// For each value (oldest first): {lo, hi, regression} from the good values
// before it (a regression is not good history), or null while fewer than
// BAND_MIN came before. Higher is better, so only falling below lo is a
// regression. A history without spread gets a band of BAND_MIN_PCT of its
// median.
export function toleranceBand(values) {
  const good = [];
  return values.map((value) => {
    let band = null;
    if (good.length >= BAND_MIN) {
      const recent = good.slice(-BAND_WINDOW);
      const middle = median(recent);
      const mad = median(recent.map((v) => Math.abs(v - middle)));
      const width =
          Math.max(
          BAND_K * MAD_TO_SIGMA * mad, Math.abs(middle) * BAND_MIN_PCT / 100);
      band = {
        lo: middle - width,
        hi: middle + width,
        regression: value < middle - width
      };
    }
    if (!band || !band.regression) good.push(value);
    return band;
  });
}

// The scored, valid runs, oldest first.
function scored(runs) {
  return (runs || [])
      .filter((run) => run.score && !run.invalidated_by)
      .sort((a, b) => Number(a.id) - Number(b.id));
}

// The three metrics of a run.
const METRICS = [
  {
    id: 'chart-history-vflops',
    title: 'Valid FLOPS',
    value: (run) => Number(run.score.valid_flops) || 0,
    format: formatFlops,
  },
  {
    id: 'chart-history-throughput',
    title: 'Throughput',
    value: (run) => Number(run.score.train_seconds) > 0 ?
        Number(run.score.samples) / Number(run.score.train_seconds) :
        0,
    format: (v) => formatScaled(v, 'samples/s'),
  },
  {
    id: 'chart-history-quality',
    title: 'Quality',
    value: (run) => Number(run.score.quality) || 0,
    format: (v) => formatQuality(v),
  },
];

function chart(metric, runs, regressions) {
  const values = runs.map(metric.value);
  const bands = toleranceBand(values);
  const band = [];
  const points = runs.map((run, i) => {
    if (bands[i]) band.push({x: i + 1, lo: bands[i].lo, hi: bands[i].hi});
    const flag = Boolean(bands[i] && bands[i].regression);
    if (flag) regressions.push({run, metric, value: values[i], band: bands[i]});
    return {
      x: i + 1,
      y: values[i],
      flag,
      label: `run ${run.id}, ${formatTime(run.finished_ms)}: ${
          metric.format(values[i])}${flag ? ' (regression)' : ''}`,
    };
  });
  return lineChart({
    id: metric.id,
    title: metric.title,
    yLabel: metric.title,
    xLabel: 'run (oldest first)',
    points,
    band,
  });
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
    cell(tr, `${r.metric.format(r.band.lo)} – ${r.metric.format(r.band.hi)}`);
  }
  return table;
}

export async function load(view, name) {
  const container = document.getElementById('history');
  try {
    const json = await getJson(
        `/api/v1/runs?name=${encodeURIComponent(name)}&limit=1000`);
    if (!view.current()) return false;
    const runs = scored(json.runs);
    const parts = [element('h2', `History of ${name}`)];
    if (runs.length === 0) {
      parts.push(element('p', 'No scored run of this spec yet.'));
    } else {
      parts.push(element(
          'p',
          `${runs.length} scored runs. The band is the median ± ${BAND_K} ` +
              `robust standard deviations (MAD) of the last ${BAND_WINDOW} ` +
              `good runs before each, from ${BAND_MIN} runs of history on.`,
          'about'));
      const regressions = [];
      const grid = element('div', undefined, 'charts');
      for (const metric of METRICS) {
        grid.appendChild(chart(metric, runs, regressions));
      }
      parts.push(grid);
      parts.push(element('h3', 'Regressions'));
      const box = element('div', undefined, 'scroll');
      box.appendChild(
          regressions.length ?
              regressionList(regressions) :
              element('p', 'None: every run within its band.'));
      parts.push(box);
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
