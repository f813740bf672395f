// The leaderboard page: one page of GET /api/v1/leaderboard at a time,
// filtered by workload, config, level and ranked, ordered by any column (a
// click on its header; the server sorts, so paging stays right). The state
// lives in the URL's query (?workload=&level=&sort=&order=&offset=...) so a
// link shows the same table.

import {cell, element, fastPathsText, formatFlops, formatQuality, formatSeconds, formatTime, getJson, link} from './format.js';
import {formatVersions} from './inventory.js';
import {historyHref, scalingHref} from './links.js';

// Rows per page.
export const PAGE_SIZE = 25;

// The filters the URL and the form share, with their defaults.
const FILTERS = {
  workload: 'image_classification',
  config: '',
  level: '',
  ranked: '',
};

// The columns: header text, the API's sort key, the first direction a
// click sorts in (best first), and how a row fills the cell.
const COLUMNS = [
  {title: 'Rank', key: 'rank', first: 'asc', num: true, fill: rankCell},
  {title: 'System', key: 'system', first: 'asc', fill: systemCell},
  {title: 'Nodes × devices', key: 'devices', first: 'desc', fill: devicesCell},
  {
    title: 'Valid FLOPS',
    key: 'valid_flops',
    first: 'desc',
    num: true,
    fill: validFlopsCell
  },
  {
    title: 'Valid FLOPS/W',
    key: 'valid_flops_per_watt',
    first: 'desc',
    num: true,
    fill: (tr, row) => cell(
        tr,
        Number(row.valid_flops_per_watt) > 0 ?
            `${formatFlops(row.valid_flops_per_watt)}/W` :
            '-',
        'num'),
  },
  {
    title: 'FLOPS',
    key: 'flops',
    first: 'desc',
    num: true,
    fill: (tr, row) => cell(tr, formatFlops(row.flops), 'num'),
  },
  {
    title: 'Quality / target',
    key: 'quality',
    first: 'desc',
    num: true,
    fill: (tr, row) => cell(
        tr, formatQuality(row.quality, row.target),
        Number(row.quality) < Number(row.target) ? 'num below-target' : 'num'),
  },
  {
    title: 'Training time',
    key: 'train_seconds',
    first: 'asc',
    num: true,
    fill: (tr, row) => cell(tr, formatDuration(row.train_seconds), 'num'),
  },
  {
    title: 'Precision',
    key: 'precision',
    first: 'asc',
    fill: (tr, row) => cell(tr, precisionText(row)),
  },
  {title: 'Software', key: 'versions', first: 'asc', fill: versionsCell},
  {
    title: 'User',
    key: 'user',
    first: 'asc',
    fill: (tr, row) => cell(tr, row.user || '-', 'user')
  },
  {
    title: 'Date',
    key: 'date',
    first: 'desc',
    fill: (tr, row) => cell(tr, formatTime(row.finished_ms))
  },
];

// 95 -> "1m 35s", 12.3 -> "12.30 s", 7300 -> "2h 1m".
export function formatDuration(seconds) {
  const s = Number(seconds) || 0;
  if (s < 60) return formatSeconds(s);
  const minutes = Math.floor(s / 60);
  if (minutes < 60) return `${minutes}m ${Math.round(s - minutes * 60)}s`;
  return `${Math.floor(minutes / 60)}h ${minutes % 60}m`;
}

function rankCell(tr, row) {
  return cell(tr, row.ranked && row.rank > 0 ? String(row.rank) : '-', 'num');
}

function systemCell(tr, row) {
  const td = cell(tr, row.system, 'system');
  const about = element('div', undefined, 'muted');
  about.appendChild(
      link(`#/submissions/${encodeURIComponent(row.submission_id)}`, row.name));
  about.appendChild(document.createTextNode(
      ` · ${row.config} · ${row.level}${row.ranked ? '' : ' · unranked'}`));
  // Where the system's other sizes and the spec's earlier runs are.
  const pages = element('div', undefined, 'muted row-links');
  pages.append(
      link(scalingHref(row.system, row.workload), 'scaling'), ' · ',
      link(historyHref(row.name), 'history'));
  td.append(about, pages);
  return td;
}

function devicesCell(tr, row) {
  const td = cell(tr, `${row.nodes} × ${row.ranks_per_node} ${row.device}`);
  if (row.device_model) {
    td.appendChild(element('div', row.device_model, 'muted'));
  }
  return td;
}

// The precision column: "bf16", then the compression and the fast paths
// when the row has them ("bf16, powersgd compression, fast paths fused_bn").
export function precisionText(row) {
  const parts = [row.precision || '-'];
  if (row.compression && row.compression !== 'none') {
    parts.push(`${row.compression} compression`);
  }
  const fast = fastPathsText(row.fast_paths);
  if (fast) parts.push(fast);
  return parts.join(', ');
}

// The repetitions' spread as the coordinator judged it: "CV 1.4%" of
// throughput (and of epochs to target when known); '' for one run.
export function spreadText(row) {
  if (!(row.runs > 1)) return '';
  const percent = (cv) => `${(100 * (Number(cv) || 0)).toFixed(1)}%`;
  let text = `throughput CV ${percent(row.throughput_cv)}`;
  if (Number(row.epochs_to_target_cv) > 0) {
    text += `, epochs CV ${percent(row.epochs_to_target_cv)}`;
  }
  return row.unrepeatable ? `${text} — unrepeatable` : text;
}

// The convergence check against the reference points (MLCommons' RCP
// check): '' without a reference, else its verdict and, when Valid FLOPS
// was normalised, by what, why, and the figure before (the runs' own, which
// the run pages show).
export function convergenceText(row) {
  const check = row.convergence || {};
  if (!check.verdict || check.verdict === 'unchecked') return '';
  const factor = Number(check.factor) || 1;
  const reference = Number(check.reference_epochs) || 0;
  const epochs = Number(row.epochs_to_target) || 0;
  const normalised =
      `normalised by the convergence check ÷${factor.toFixed(3)}`;
  const before = Number(row.valid_flops_unnormalized) > 0 ?
      `; ${formatFlops(row.valid_flops_unnormalized)} before` :
      '';
  switch (check.verdict) {
    case 'normalized':
      return `${normalised}: converged in ${epochs.toFixed(2)} epochs, ` +
          `faster than the reference's ${reference.toFixed(2)}${before}`;
    case 'review':
      return `for review, ${normalised}: converged in ${
          epochs.toFixed(2)} epochs, beyond the reference's fastest ${
          (Number(check.min_epochs) || 0).toFixed(2)}${before}`;
    case 'pass':
      return `convergence checked (${epochs.toFixed(2)} epochs, ` +
          `reference ${reference.toFixed(2)})`;
    default:
      return `convergence: ${check.verdict}`;
  }
}

function validFlopsCell(tr, row) {
  const td = cell(tr, formatFlops(row.valid_flops), 'num');
  if (row.runs > 1) {
    const spread = `${formatFlops(row.valid_flops_min)} – ` +
        `${formatFlops(row.valid_flops_max)}, ${row.runs} runs`;
    td.appendChild(element('div', spread, 'muted spread'));
    const cv = element(
        'div', spreadText(row),
        row.unrepeatable ? 'muted cv unrepeatable' : 'muted cv');
    cv.title = 'Coefficient of variation over the repetitions; marked ' +
        'unrepeatable above the coordinator\'s limit';
    td.appendChild(cv);
  }
  const convergence = convergenceText(row);
  if (convergence) {
    const verdict = (row.convergence || {}).verdict;
    td.appendChild(element(
        'div', convergence,
        verdict === 'pass' ? 'muted convergence' :
                             `muted convergence ${verdict}`));
  }
  return td;
}

function versionsCell(tr, row) {
  const all = formatVersions(row.versions);
  const td = cell(tr, all || '-', 'versions');
  td.title = all;
  return td;
}

function renderRow(row) {
  const tr = document.createElement('tr');
  tr.dataset.submission = row.submission_id;
  tr.dataset.level = row.level;
  if (!row.ranked) tr.classList.add('unranked');
  for (const column of COLUMNS) {
    const td = column.fill(tr, row);
    td.dataset.label = column.title;
  }
  return tr;
}

// The page's state from the URL: filters, sort, order, offset.
function readState() {
  const query = new URLSearchParams(window.location.search);
  const state = {};
  for (const [name, fallback] of Object.entries(FILTERS)) {
    state[name] = query.get(name) || fallback;
  }
  state.sort = COLUMNS.some((c) => c.key === query.get('sort')) ?
      query.get('sort') :
      'rank';
  state.order = query.get('order') === 'desc' ? 'desc' : 'asc';
  state.offset = Math.max(0, parseInt(query.get('offset'), 10) || 0);
  return state;
}

function writeState(state) {
  const url = new URL(window.location.href);
  for (const [name, value] of Object.entries(state)) {
    const isDefault = name in FILTERS ? value === FILTERS[name] :
        name === 'sort'               ? value === 'rank' :
        name === 'order'              ? value === 'asc' :
                                        value === 0;
    if (isDefault) {
      url.searchParams.delete(name);
    } else {
      url.searchParams.set(name, String(value));
    }
  }
  window.history.replaceState(null, '', url);
}

// The API path of one page of the table in `state`.
export function leaderboardPath(state) {
  const query = new URLSearchParams();
  for (const name of Object.keys(FILTERS)) {
    if (state[name]) query.set(name, state[name]);
  }
  if (state.sort !== 'rank' || state.order !== 'asc') {
    query.set('sort', state.sort);
    query.set('order', state.order);
  }
  query.set('limit', String(PAGE_SIZE));
  query.set('offset', String(state.offset));
  return `/api/v1/leaderboard?${query}`;
}

function headerRow(reload) {
  const tr = document.createElement('tr');
  for (const column of COLUMNS) {
    const th = element('th', undefined, column.num ? 'num' : '');
    th.scope = 'col';
    th.dataset.key = column.key;
    const button = element('button', column.title, 'sort');
    button.type = 'button';
    button.addEventListener('click', () => {
      const state = readState();
      state.order = state.sort === column.key ?
          (state.order === 'asc' ? 'desc' : 'asc') :
          column.first;
      state.sort = column.key;
      state.offset = 0;
      writeState(state);
      reload();
    });
    th.appendChild(button);
    tr.appendChild(th);
  }
  return tr;
}

// The phone layout has no header row to click: a select of every column in
// both directions stands in for it.
function sortSelect(reload) {
  const select = document.getElementById('sort-by');
  for (const column of COLUMNS) {
    for (const order of ['desc', 'asc']) {
      const option =
          element('option', `${column.title} ${order === 'asc' ? '↑' : '↓'}`);
      option.value = `${column.key}:${order}`;
      select.appendChild(option);
    }
  }
  select.addEventListener('change', () => {
    const next = readState();
    [next.sort, next.order] = select.value.split(':');
    next.offset = 0;
    writeState(next);
    reload();
  });
}

function showSort(state) {
  document.getElementById('sort-by').value = `${state.sort}:${state.order}`;
  for (const th of document.querySelectorAll('#leaderboard thead th')) {
    th.setAttribute(
        'aria-sort',
        th.dataset.key !== state.sort ? 'none' :
            state.order === 'asc'     ? 'ascending' :
                                        'descending');
  }
}

// Builds the header and wires the filters and pager once; `reload` is
// called whenever the state changes.
export function setUp(reload) {
  document.querySelector('#leaderboard thead')
      .replaceChildren(headerRow(reload));
  sortSelect(reload);
  const form = document.getElementById('filters');
  const state = readState();
  for (const name of Object.keys(FILTERS)) {
    const input = form.elements[name];
    input.value = state[name];
    input.addEventListener('change', () => {
      const next = readState();
      next[name] = input.value;
      next.offset = 0;
      writeState(next);
      reload();
    });
  }
  for (const [id, step] of [['page-prev', -1], ['page-next', 1]]) {
    document.getElementById(id).addEventListener('click', () => {
      const next = readState();
      next.offset = Math.max(0, next.offset + step * PAGE_SIZE);
      writeState(next);
      reload();
    });
  }
}

function showPager(state, shown, total) {
  const pager = document.getElementById('pager');
  pager.hidden = total <= PAGE_SIZE && state.offset === 0;
  document.getElementById('page-info').textContent = shown === 0 ?
      `none of ${total}` :
      `${state.offset + 1}–${state.offset + shown} of ${total}`;
  document.getElementById('page-prev').disabled = state.offset === 0;
  document.getElementById('page-next').disabled = state.offset + shown >= total;
}

// Loads one page of the table; the leaderboard only changes when a run
// ends, so it does not refresh itself (returns false).
export async function load(view) {
  const state = readState();
  const body = document.querySelector('#leaderboard tbody');
  showSort(state);
  try {
    const json = await getJson(leaderboardPath(state));
    if (!view.current()) return false;
    const rows = json.rows || [];
    body.replaceChildren(...rows.map(renderRow));
    const total = Number(json.total) || 0;
    showPager(state, rows.length, total);
    view.showStatus(
        total === 0 ? `No results for ${state.workload} with these filters.` :
                      '');
  } catch (error) {
    if (!view.current()) return false;
    body.replaceChildren();
    view.showStatus(`Cannot load the leaderboard: ${error.message}`, true);
  }
  return false;
}
