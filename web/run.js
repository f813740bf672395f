// The run page: a run's state, per-epoch charts, score inputs, spec and
// attempts, fed by GET /api/v1/runs/ID.

import {lineChart} from './chart.js';
import {cell, definitionList, element, formatFlops, formatQuality, formatScaled, formatSeconds, formatTime, getJson, isFinished, link, stateBadge, worthRetrying} from './format.js';
import {incidentLines} from './health.js';
import {formatVersions, provenanceRows} from './inventory.js';
import {historyHref, scalingHref} from './links.js';
import {energyByEpoch, findStraggler, throughputByRank, timeSplit} from './ranks.js';

function qualityName(workload) {
  return workload === 'extreme_weather' ? 'mAP@0.5' : 'top-1 accuracy';
}

// The straggler named in words, or null.
function stragglerNote(rows) {
  const straggler = findStraggler(rows);
  if (!straggler) return null;
  return element(
      'p',
      `Straggler: rank ${straggler.rank} is ${
          Math.round(straggler.slower * 100)}% slower than the median rank (${
          formatScaled(straggler.throughput, 'samples/s')} against ${
          formatScaled(straggler.median, 'samples/s')}).`,
      'straggler');
}

// The forecast on the quality chart: from the last measured point to the
// median forecast after the last epoch (the coordinator computes it:
// methodology/forecast.h); null without a forecast or with nothing left to
// forecast.
export function forecastSeries(forecast, measured) {
  if (!forecast || !measured.length) return null;
  const last = measured[measured.length - 1];
  if (!(forecast.epochs > last.x)) return null;
  return {
    name: 'forecast (median)',
    points: [last, {x: forecast.epochs, y: forecast.final_quality || 0}],
  };
}

// `ranks` is GET /api/v1/runs/ID/ranks (or {} when it failed).
function charts(run, ranks) {
  const epochs = run.epochs || [];
  const spec = run.spec || {};
  const rows = ranks.epochs || [];
  const quality = qualityName(spec.workload);
  const target = run.score ? run.score.target : ranks.target;
  const grid = element('div', undefined, 'charts');
  grid.appendChild(lineChart({
    id: 'chart-throughput',
    title: 'Throughput',
    yLabel: 'samples/s (all ranks)',
    points: epochs.map((e) => ({x: e.epoch, y: e.throughput})),
  }));
  const perRank = lineChart({
    id: 'chart-rank-throughput',
    title: 'Throughput per rank',
    yLabel: 'samples/s (one rank)',
    series: throughputByRank(rows),
  });
  const note = stragglerNote(rows);
  if (note) perRank.appendChild(note);
  grid.appendChild(perRank);
  grid.appendChild(lineChart({
    id: 'chart-train-loss',
    title: 'Train loss',
    yLabel: 'train loss',
    points: epochs.map((e) => ({x: e.epoch, y: e.train_loss})),
  }));
  const measured = epochs.filter((e) => e.accuracy >= 0)
                       .map((e) => ({x: e.epoch, y: e.accuracy}));
  const forecast = forecastSeries(run.forecast, measured);
  grid.appendChild(lineChart({
    id: 'chart-accuracy',
    title: `Quality (${quality})${run.score ? ' vs target' : ''}`,
    yLabel: quality,
    ...(forecast ? {series: [{name: quality, points: measured}, forecast]} :
                   {points: measured}),
    reference: target > 0 ? {value: target, label: 'target'} : null,
  }));
  const split = timeSplit(rows);
  if (split.length) {
    grid.appendChild(lineChart({
      id: 'chart-time-split',
      title: 'Where the time went',
      yLabel: 's per rank',
      series: split,
    }));
  }
  const energy = energyByEpoch(rows);
  if (energy.length) {
    grid.appendChild(lineChart({
      id: 'chart-energy',
      title: 'Energy',
      yLabel: 'J (all nodes)',
      points: energy,
    }));
  }
  return grid;
}

function overview(run) {
  const spec = run.spec || {};
  return definitionList([
    ['State', stateBadge(run.state)],
    ['Workload / config', `${spec.workload} / ${spec.config}`],
    [
      'System',
      link(scalingHref(spec.system, spec.workload), spec.system)
    ],
    [
      'Spec history',
      link(historyHref(spec.name), spec.name)
    ],
    [
      'Submission',
      link(
          `#/submissions/${encodeURIComponent(run.submission_id)}`,
          `${run.submission_id} (repetition ${run.repetition || 1})`)
    ],
    ['Seed', String(spec.seed)],
    ['User', run.user || '-'],
    ['Queue', `${run.queue || 'default'}, priority ${run.priority || 0}`],
    ...(run.reason ? [['Waiting', run.reason]] : []),
    ...(run.invalidated_by ? [[
      'Invalidated',
      `by ${run.invalidated_by} at ${formatTime(run.invalidated_ms)}: ${
          run.invalidation_reason} (not on the leaderboard)`,
    ]] :
                             []),
    ['Epochs', `${(run.epochs || []).length} / ${spec.epochs}`],
    ...(run.forecast ? [['Forecast', run.forecast.summary || '']] : []),
    ...(run.incidents && run.incidents.length ?
            [['Stragglers', incidentLines(run.incidents).join('\n')]] :
            []),
    ['Created', formatTime(run.created_ms)],
    ['Started', formatTime(run.started_ms)],
    ['Finished', formatTime(run.finished_ms)],
  ]);
}

function scoreInputs(score) {
  const pairs = [
    ['Quality / target', formatQuality(score.quality, score.target)],
    ['Reached target', score.reached_target ? 'yes' : 'no'],
    ['Exponent n', String(score.exponent)],
    ['FLOPS', formatFlops(score.flops)],
    // The run's own: the leaderboard may divide its submission's by the
    // convergence check's factor (and says so there).
    [
      'Valid FLOPS',
      `${formatFlops(score.valid_flops)} (this run's, before the ` +
          `leaderboard's convergence check)`
    ],
    ['Training samples (all ranks)', String(score.samples)],
    [
      'Forward FLOPs per sample',
      formatScaled(score.forward_flops_per_sample, 'FLOP')
    ],
    ['Train time', formatSeconds(score.train_seconds)],
    ['Eval time', formatSeconds(score.eval_seconds)],
  ];
  if (Number(score.energy_joules) > 0) {
    pairs.push(['Energy', formatScaled(score.energy_joules, 'J')]);
    pairs.push([
      'Valid FLOPS per watt', formatFlops(score.valid_flops_per_watt) + '/W'
    ]);
  }
  pairs.push(['FLOP counting', score.convention]);
  return definitionList(pairs);
}

// A spec field's value as the provenance shows it: yes/no, a map (the
// constraints) as "key=value, ..." in key order, anything else as text.
export function specValueText(value) {
  if (typeof value === 'boolean') return value ? 'yes' : 'no';
  if (value !== null && typeof value === 'object') {
    return Object.keys(value)
        .sort()
        .map((key) => `${key}=${specValueText(value[key])}`)
        .join(', ');
  }
  return String(value);
}

function specList(spec) {
  return definitionList(Object.entries(spec).map(
      ([key, value]) => [key, specValueText(value)]));
}

// Where an attempt's training started: epoch 1, or after the checkpoint of
// an earlier attempt it resumed from.
function startedFrom(attempt) {
  if (attempt.resumed_epoch > 0) {
    return `epoch ${attempt.resumed_epoch + 1} (resumed from attempt ` +
        `${attempt.resume_from_attempt})`;
  }
  if (attempt.resume_from_epoch > 0) {
    return `asked to resume after epoch ${attempt.resume_from_epoch}`;
  }
  return 'epoch 1';
}

function attemptsTable(attempts) {
  const table = element('table', undefined, 'attempts');
  const head = table.createTHead().insertRow();
  for (const title
           of ['#', 'State', 'Nodes', 'Master', 'Started', 'Finished',
               'Started from', 'Software', 'Ended by']) {
    head.appendChild(element('th', title));
  }
  const body = table.createTBody();
  for (const attempt of attempts) {
    const tr = body.insertRow();
    cell(tr, String(attempt.number), 'num');
    cell(tr, attempt.state);
    cell(tr, (attempt.nodes || []).join(', '));
    cell(
        tr,
        attempt.master_addr ? `${attempt.master_addr}:${attempt.master_port}` :
                              '-');
    cell(tr, formatTime(attempt.started_ms));
    cell(tr, formatTime(attempt.finished_ms));
    cell(tr, startedFrom(attempt));
    cell(tr, softwareOf(attempt) || '-', 'versions');
    cell(
        tr, attempt.error || (attempt.state === 'succeeded' ? 'finished' : ''),
        attempt.error ? 'error' : '');
  }
  return table;
}

// What each attempt's nodes were when it was placed: devices, driver, CPU,
// memory and software versions (the result's provenance).
function provenanceTable(rows) {
  const table = element('table', undefined, 'provenance');
  const head = table.createTHead().insertRow();
  for (const title of ['Attempt', 'Node', 'Inventory']) {
    head.appendChild(element('th', title));
  }
  const body = table.createTBody();
  for (const row of rows) {
    const tr = body.insertRow();
    cell(tr, String(row.attempt), 'num');
    cell(tr, row.node);
    cell(tr, row.inventory);
  }
  return table;
}

// The software an attempt ran: the versions of the node of rank 0 (the
// worker revision is the hpcai500 its agent was built from).
function softwareOf(attempt) {
  const inventory = (attempt.inventory || {})[(attempt.nodes || [])[0]];
  return inventory ? formatVersions(inventory.versions) : '';
}

// Each rank's event log and stderr of each attempt, as downloads.
function logsTable(run) {
  const spec = run.spec || {};
  const world = (Number(spec.nodes) || 1) * (Number(spec.ranks_per_node) || 1);
  const table = element('table', undefined, 'logs');
  const head = table.createTHead().insertRow();
  for (const title of ['Attempt', 'Rank', 'Event log', 'stderr']) {
    head.appendChild(element('th', title));
  }
  const body = table.createTBody();
  for (const attempt of run.attempts || []) {
    for (let rank = 0; rank < world; rank += 1) {
      const base = `/api/v1/runs/${encodeURIComponent(run.id)}/attempts/${
          attempt.number}/ranks/${rank}`;
      const tr = body.insertRow();
      cell(tr, String(attempt.number), 'num');
      cell(tr, String(rank), 'num');
      const events = link(`${base}/events`, 'events');
      events.setAttribute('download', '');
      cell(tr, events);
      const stderr = link(`${base}/stderr`, 'stderr');
      stderr.setAttribute('download', '');
      cell(tr, stderr);
    }
  }
  return table;
}

function scroll(content) {
  const box = element('div', undefined, 'scroll');
  box.appendChild(content);
  return box;
}

function section(title, content) {
  const node = element('section');
  node.appendChild(element('h3', title));
  node.appendChild(content);
  return node;
}

function render(run, ranks) {
  const parts = [];
  const heading = element('h2', `Run ${run.id}: ${(run.spec || {}).name}`);
  parts.push(heading);
  if (run.error) parts.push(element('p', run.error, 'error run-error'));
  parts.push(overview(run));
  parts.push(section('Per epoch', charts(run, ranks)));
  parts.push(section(
      'Score inputs',
      run.score ?
          scoreInputs(run.score) :
          element('p', 'Not scored yet: the score comes when the run ends.')));
  parts.push(section('Spec', specList(run.spec || {})));
  const attempts = run.attempts || [];
  parts.push(section(
      'Attempts',
      attempts.length ? scroll(attemptsTable(attempts)) :
                        element('p', 'Not placed yet.')));
  const provenance = provenanceRows(attempts);
  if (provenance.length) {
    parts.push(section('Provenance', scroll(provenanceTable(provenance))));
  }
  if (attempts.length) {
    parts.push(section('Logs of each rank', scroll(logsTable(run))));
  }
  return parts;
}

// Loads run `id` into #run; returns true while the run is unfinished, so
// that the page refreshes itself.
export async function load(view, id) {
  const container = document.getElementById('run');
  try {
    const path = `/api/v1/runs/${encodeURIComponent(id)}`;
    const [run, ranks] = await Promise.all([
      getJson(path),
      // The per-rank charts are extra: the page stands without them.
      getJson(`${path}/ranks`).catch(() => ({})),
    ]);
    if (!view.current()) return false;
    container.replaceChildren(...render(run, ranks));
    container.dataset.runId = id;
    view.showStatus('');
    document.title = `hpcai500 run ${run.id}`;
    return !isFinished(run.state);
  } catch (error) {
    if (!view.current()) return false;
    view.showStatus(`Cannot load run ${id}: ${error.message}`, true);
    // One failed poll of a live run keeps the page as it was and tries
    // again; a run that is not there is not waited for.
    const retry = worthRetrying(error);
    if (!retry || container.dataset.runId !== id) {
      container.replaceChildren(link('#/runs', 'All runs'));
      delete container.dataset.runId;
    }
    return retry;
  }
}
