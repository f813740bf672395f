// The runs page: every run newest first with its state and progress, fed by
// GET /api/v1/runs; with "regressions only" ticked, only the runs where a
// change point in a metric's bad direction began (GET
// /api/v1/changes?regressions=1).

import {cell, element, formatFlops, formatQuality, getJson, isFinished, link, stateBadge} from './format.js';
import {historyHref} from './links.js';

// The last evaluated quality of a run that is not scored yet, or undefined.
function lastAccuracy(run) {
  const evaluated = (run.epochs || []).filter((e) => e.accuracy >= 0);
  return evaluated.length ? evaluated[evaluated.length - 1].accuracy :
                            undefined;
}

function qualityCell(tr, run) {
  if (run.score) {
    return cell(
        tr, formatQuality(run.score.quality, run.score.target),
        run.score.reached_target ? 'num' : 'num below-target');
  }
  const accuracy = lastAccuracy(run);
  return cell(
      tr, accuracy === undefined ? '-' : formatQuality(accuracy), 'num');
}

// The column names of a runs table, which a row's cells carry as
// data-label for the phone layout: those of #runs' header in index.html
// (a submission's table copies that header too).
function columnLabels() {
  return [...document.querySelectorAll('#runs thead th')].map(
      (th) => th.textContent);
}

// One run as a table row, linking to its page.
export function renderRow(run) {
  const spec = run.spec || {};
  const tr = document.createElement('tr');
  tr.dataset.runId = run.id;
  cell(tr, link(`#/runs/${encodeURIComponent(run.id)}`, String(run.id)), 'num');
  cell(
      tr,
      spec.name ?
          link(historyHref(spec.name), spec.name) :
          '');
  const config = cell(tr, spec.config);
  config.appendChild(element('div', spec.workload, 'muted'));
  cell(tr, spec.level);
  cell(tr, stateBadge(run.state));
  cell(tr, run.user || '-');
  cell(tr, `${spec.nodes} \u00d7 ${spec.ranks_per_node}`, 'num');
  cell(tr, `${(run.epochs || []).length} / ${spec.epochs}`, 'num');
  qualityCell(tr, run);
  cell(tr, run.score ? formatFlops(run.score.valid_flops) : '-', 'num');
  const labels = columnLabels();
  [...tr.cells].forEach((td, i) => {
    td.dataset.label = labels[i] || '';
  });
  return tr;
}

// The runs of `runs` where one of `changes` began.
export function runsWhereChangesBegan(runs, changes) {
  const ids = new Set((changes || []).map((c) => String(c.run_id)));
  return (runs || []).filter((run) => ids.has(String(run.id)));
}

// Loads the table; returns true while some run is unfinished, so that the
// page refreshes itself.
export async function load(view) {
  const body = document.querySelector('#runs tbody');
  const regressionsOnly = document.getElementById('runs-regressions');
  if (regressionsOnly && !regressionsOnly.dataset.bound) {
    regressionsOnly.dataset.bound = 'yes';
    regressionsOnly.addEventListener('change', () => load(view));
  }
  try {
    const json = await getJson('/api/v1/runs');
    if (!view.current()) return false;
    let runs =
        (json.runs || []).slice().sort((a, b) => Number(b.id) - Number(a.id));
    if (regressionsOnly && regressionsOnly.checked) {
      const changes = await getJson('/api/v1/changes?regressions=1');
      if (!view.current()) return false;
      runs = runsWhereChangesBegan(runs, changes.changes);
    }
    body.replaceChildren(...runs.map(renderRow));
    view.showStatus(
        runs.length === 0 ?
            'No runs yet: submit one with `hpcai500 submit SPEC`.' :
            '');
    return runs.some((run) => !isFinished(run.state));
  } catch (error) {
    if (!view.current()) return false;
    body.replaceChildren();
    view.showStatus(`Cannot load the runs: ${error.message}`, true);
    return true;
  }
}
