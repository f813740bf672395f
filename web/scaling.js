// The scaling page of one system and workload (#/scaling?system=S&
// workload=W[&sweep=ID]), from GET /api/v1/scaling, which the coordinator
// computes: per configuration (config, precision, compression, scaling
// mode; never averaged across them) Valid FLOPS and parallel efficiency
// against the number of devices, and where each rank's epoch time went at
// each size. Every configuration is a series of the same charts, so fp32
// and bf16, compression on and off, sit side by side as in the HPC AI500
// figures. Without a system, the index of systems (web/indexes.js).

import {lineChart} from './chart.js';
import {cell, element, fastPathsText, formatFlops, formatSeconds, getJson, link} from './format.js';
import {loadSystems} from './indexes.js';
import {hashQuery, scalingHref} from './links.js';

// A configuration's name in legends and headings: "fp32, no compression,
// strong scaling", led by the config when the page shows several.
export function configurationLabel(c, withConfig) {
  const parts = [
    c.precision,
    c.compression && c.compression !== 'none' ? `${c.compression} compression` :
                                                'no compression',
    c.scaling ? `${c.scaling} scaling` : 'not a sweep',
  ];
  if (c.fast_paths) parts.push(fastPathsText(c.fast_paths));
  if (withConfig) parts.unshift(c.config);
  return parts.join(', ');
}

// One chart series per configuration: {name, points: [{x: devices, y:
// value(point), label}]}.
export function configurationSeries(configurations, value, format) {
  const configs = new Set((configurations || []).map((c) => c.config));
  return (configurations || []).map((c) => {
    const name = configurationLabel(c, configs.size > 1);
    return {
      name,
      points: (c.points || []).map((p) => ({
                                     x: Number(p.devices),
                                     y: value(p),
                                     label: `${name}, ${p.devices} devices: ${
                                         format(value(p))}`,
                                   })),
    };
  });
}

// The shares of a point's epoch time per rank: {compute, input, comm} as
// fractions of their sum, or null when the runs measured none.
export function timeShares(point) {
  const compute = Number(point.compute_seconds) || 0;
  const input = Number(point.input_seconds) || 0;
  const comm = Number(point.comm_seconds) || 0;
  const total = compute + input + comm;
  if (!(total > 0)) return null;
  return {compute: compute / total, input: input / total, comm: comm / total};
}

const percent = (fraction) => `${(fraction * 100).toFixed(1)}%`;

// "2.00 s (75.0%)", or "-" without a measured split.
function splitText(seconds, share) {
  return share === undefined ? '-' :
                               `${formatSeconds(seconds)} (${percent(share)})`;
}

function configurationTable(c, label) {
  const node = element('table', undefined, 'scaling');
  node.dataset.configuration = label;
  node.createCaption().textContent = label;
  const head = node.createTHead().insertRow();
  for (const title
           of ['Devices', 'Nodes × ranks', 'Valid FLOPS', 'Efficiency',
               'Compute', 'Input wait', 'Communication', 'Runs']) {
    head.appendChild(element('th', title));
  }
  const body = node.createTBody();
  for (const p of c.points || []) {
    const shares = timeShares(p) || {};
    const tr = body.insertRow();
    cell(tr, String(p.devices), 'num');
    cell(tr, `${p.nodes} × ${p.ranks_per_node}`, 'num');
    cell(tr, formatFlops(p.valid_flops), 'num');
    cell(tr, percent(Number(p.efficiency) || 0), 'num');
    cell(tr, splitText(p.compute_seconds, shares.compute), 'num');
    cell(tr, splitText(p.input_seconds, shares.input), 'num');
    cell(tr, splitText(p.comm_seconds, shares.comm), 'num');
    cell(tr, String(p.runs), 'num');
  }
  return node;
}

function charts(configurations) {
  const grid = element('div', undefined, 'charts');
  grid.appendChild(lineChart({
    id: 'chart-scaling-vflops',
    title: 'Valid FLOPS against devices',
    yLabel: 'Valid FLOPS',
    xLabel: 'devices',
    series: configurationSeries(
        configurations, (p) => Number(p.valid_flops) || 0, formatFlops),
  }));
  grid.appendChild(lineChart({
    id: 'chart-scaling-efficiency',
    title: 'Parallel efficiency',
    yLabel: 'efficiency (%)',
    xLabel: 'devices',
    series: configurationSeries(
        configurations, (p) => (Number(p.efficiency) || 0) * 100,
        (v) => `${v.toFixed(1)}%`),
    reference: {value: 100, label: 'perfect'},
  }));
  const measured =
      configurations.filter((c) => (c.points || []).some((p) => timeShares(p)));
  if (measured.length > 0) {
    grid.appendChild(lineChart({
      id: 'chart-scaling-comm',
      title: 'Communication share of epoch time',
      yLabel: 'communication (%)',
      xLabel: 'devices',
      series: configurationSeries(
          measured, (p) => ((timeShares(p) || {}).comm || 0) * 100,
          (v) => `${v.toFixed(1)}%`),
    }));
  }
  return grid;
}

// Links to the page of every sweep of the system, and to all of them.
function sweepChooser(json) {
  const nav = element('p', 'Sweep: ', 'sweeps');
  const choices = [['', 'every run'], ...json.sweeps.map((id) => [id, id])];
  choices.forEach(([id, text], i) => {
    if (i > 0) nav.append(' · ');
    const a = link(scalingHref(json.system, json.workload, id), text);
    if (id === json.sweep) a.setAttribute('aria-current', 'true');
    nav.appendChild(a);
  });
  return nav;
}

export async function load(view) {
  const params = hashQuery();
  const system = params.get('system') || '';
  if (!system) return loadSystems(view);
  const container = document.getElementById('scaling');
  const workload = params.get('workload') || 'image_classification';
  const sweep = params.get('sweep') || '';
  try {
    const query = new URLSearchParams({system, workload});
    if (sweep) query.set('sweep', sweep);
    const json = await getJson(`/api/v1/scaling?${query}`);
    if (!view.current()) return false;
    const configurations = json.configurations || [];
    const parts = [element(
        'h2',
        `Scaling of ${system} on ${workload}${
            sweep ? `, sweep ${sweep}` : ''}`)];
    if ((json.sweeps || []).length > 0) parts.push(sweepChooser(json));
    if (configurations.length === 0) {
      parts.push(element('p', 'No scored run of this system yet.'));
    } else {
      parts.push(
          element(
              'p',
              'One series per configuration (precision, compression, ' +
                  'scaling mode), never averaged across them; efficiency is ' +
                  'Valid FLOPS per device against that of the fewest ' +
                  'devices of the same configuration. Time per rank and ' +
                  'epoch.',
              'about'),
          charts(configurations));
      const withConfig = new Set(configurations.map((c) => c.config)).size > 1;
      for (const c of configurations) {
        const box = element('div', undefined, 'scroll');
        box.appendChild(
            configurationTable(c, configurationLabel(c, withConfig)));
        parts.push(box);
      }
    }
    parts.push(link('#/scaling', 'Every system'));
    container.replaceChildren(...parts);
    view.showStatus('');
  } catch (error) {
    if (!view.current()) return false;
    container.replaceChildren(link('#/scaling', 'Every system'));
    view.showStatus(`Cannot show the scaling: ${error.message}`, true);
  }
  return false;
}
