// One submission: its repetitions (each a run, linking to its page) and
// their spread of Valid FLOPS, fed by GET /api/v1/runs?submission=ID. A
// leaderboard row links here.

import {definitionList, element, formatFlops, getJson, isFinished, link} from './format.js';
import {convergenceText, spreadText} from './leaderboard.js';
import {historyHref, scalingHref} from './links.js';
import {renderRow} from './runs.js';

// What the leaderboard judged of the submission once listed (its row:
// repeatability and the convergence check), as definition pairs.
export function judgementPairs(row) {
  if (!row) return [['Leaderboard', 'not listed until every repetition succeeded']];
  const pairs = [];
  const spread = spreadText(row);
  if (spread) pairs.push(['Repeatability', spread]);
  const convergence = convergenceText(row);
  const check = row.convergence || {};
  if (convergence) {
    pairs.push(['Convergence', convergence]);
    if (check.reference) {
      pairs.push(['Reference', `${check.reference} (global batch ${
                                   check.global_batch})`]);
    }
  }
  if (Number(row.valid_flops_unnormalized) !== Number(row.valid_flops)) {
    pairs.push([
      'Valid FLOPS before normalisation', formatFlops(row.valid_flops_unnormalized)
    ]);
  }
  return pairs;
}

function summary(runs, row) {
  const scored = runs.filter((r) => r.score).map((r) => r.score.valid_flops);
  const spec = runs[0].spec || {};
  const pairs = [
    ['Spec', link(historyHref(spec.name), spec.name)],
    ['System', spec.system],
    ['Workload / config', `${spec.workload} / ${spec.config}`],
    ['Level', spec.level],
    ['Repetitions', `${runs.length} of ${spec.repetitions || 1}`],
  ];
  if (scored.length) {
    pairs.push([
      'Valid FLOPS over repetitions',
      `${formatFlops(Math.min(...scored))} – ${
          formatFlops(Math.max(...scored))} (${scored.length} scored)`,
    ]);
  }
  pairs.push(...judgementPairs(row));
  pairs.push([
    'Scaling',
    link(
        scalingHref(spec.system, spec.workload),
        `${spec.system} on ${spec.workload}`),
  ]);
  return definitionList(pairs);
}

function table(runs) {
  const source = document.querySelector('#runs thead');
  const tableNode = element('table', undefined, 'cards');
  tableNode.id = 'submission-runs';
  tableNode.appendChild(source.cloneNode(true));
  const body = tableNode.createTBody();
  body.replaceChildren(...runs.map(renderRow));
  const scroll = element('div', undefined, 'scroll');
  scroll.appendChild(tableNode);
  return scroll;
}

// Loads submission `id`; refreshes while a repetition is unfinished.
export async function load(view, id) {
  const container = document.getElementById('submission');
  try {
    const json = await getJson(
        `/api/v1/runs?submission=${encodeURIComponent(id)}&limit=1000`);
    if (!view.current()) return false;
    const board = await getJson(
        `/api/v1/leaderboard?submission=${encodeURIComponent(id)}`);
    if (!view.current()) return false;
    const runs =
        (json.runs || []).slice().sort((a, b) => Number(a.id) - Number(b.id));
    if (runs.length === 0) throw new Error(`no submission ${id}`);
    container.replaceChildren(
        element('h2', `Submission ${id}: ${(runs[0].spec || {}).name}`),
        summary(runs, (board.rows || [])[0]), table(runs));
    view.showStatus('');
    return runs.some((run) => !isFinished(run.state));
  } catch (error) {
    if (!view.current()) return false;
    container.replaceChildren(link('#/', 'Leaderboard'));
    view.showStatus(`Cannot load submission ${id}: ${error.message}`, true);
    return false;
  }
}
