// The index pages: #/scaling without a system lists the systems x workloads
// that have scored runs (GET /api/v1/index/systems), #/history without a
// name the spec names (series) with their run counts and last run (GET
// /api/v1/index/series). Both filter in place by workload and by text (the
// system or the name); ?workload=W&q=TEXT in the hash sets the filters a
// link opens with.

import {cell, element, formatTime, getJson, link, stateBadge} from './format.js';
import {hashQuery, historyHref, scalingHref} from './links.js';

// The rows whose workload is `workload` (any when empty) and whose `field`
// holds `text` (any case; any when empty).
export function filterRows(rows, {workload, text}, field) {
  const needle = (text || '').trim().toLowerCase();
  return (rows || [])
      .filter(
          (row) => (!workload || row.workload === workload) &&
              (!needle ||
               String(row[field] || '').toLowerCase().includes(needle)));
}

// The workloads among the rows, sorted, for the filter's choices.
export function workloadsOf(rows) {
  return [...new Set((rows || []).map((row) => row.workload))].sort();
}

// A <form class="index-filters"> of a workload <select> and a text <input>
// named `q`, starting from the hash's query; `onChange` gets {workload,
// text} on every change.
function filterForm(rows, textLabel, onChange) {
  const query = hashQuery();
  const form = element('form', undefined, 'index-filters');
  const select = element('select');
  select.name = 'workload';
  select.appendChild(new Option('every workload', ''));
  for (const workload of workloadsOf(rows)) {
    select.appendChild(new Option(workload, workload));
  }
  select.value = query.get('workload') || '';
  const input = element('input');
  input.name = 'q';
  input.type = 'search';
  input.placeholder = textLabel;
  input.value = query.get('q') || '';
  const labelled = (text, control) => {
    const label = element('label', text);
    label.appendChild(control);
    return label;
  };
  form.append(labelled('Workload ', select), labelled(`${textLabel} `, input));
  form.addEventListener('submit', (event) => event.preventDefault());
  const changed = () => onChange({workload: select.value, text: input.value});
  select.addEventListener('change', changed);
  input.addEventListener('input', changed);
  return {form, filters: {workload: select.value, text: input.value}};
}

// A table with `headers`, whose body `fill(tbody, filters)` redraws.
function indexTable(id, headers) {
  const table = element('table', undefined, 'index cards');
  table.id = id;
  const head = table.createTHead().insertRow();
  for (const title of headers) head.appendChild(element('th', title));
  return table;
}

function systemRow(tbody, row) {
  const tr = tbody.insertRow();
  cell(tr, link(scalingHref(row.system, row.workload), row.system))
      .dataset.label = 'System';
  cell(tr, row.workload).dataset.label = 'Workload';
  cell(tr, String(row.runs), 'num').dataset.label = 'Scored runs';
  cell(tr, link(`#/runs/${row.last_run_id}`, String(row.last_run_id)), 'num')
      .dataset.label = 'Last run';
  cell(tr, formatTime(row.last_finished_ms)).dataset.label = 'Finished';
}

function seriesRow(tbody, row) {
  const tr = tbody.insertRow();
  cell(tr, link(historyHref(row.name), row.name)).dataset.label = 'Name';
  cell(tr, row.workload).dataset.label = 'Workload';
  cell(tr, row.system).dataset.label = 'System';
  cell(tr, `${row.scored} / ${row.runs}`, 'num').dataset.label =
      'Scored / runs';
  const last = cell(
      tr, link(`#/runs/${row.last_run_id}`, String(row.last_run_id)), 'num');
  last.dataset.label = 'Last run';
  last.append(' ', stateBadge(row.last_state));
  cell(tr, formatTime(row.last_created_ms)).dataset.label = 'Submitted';
}

// Fetches `path`'s `key` rows and draws them under `title` with the
// filters, redrawing the body on each change.
async function showIndex(view, spec) {
  const container = document.getElementById(spec.container);
  try {
    const json = await getJson(spec.path);
    if (!view.current()) return false;
    const rows = json[spec.key] || [];
    const table = indexTable(spec.tableId, spec.headers);
    const body = table.createTBody();
    const count = element('p', '', 'about');
    const draw = (filters) => {
      const shown = filterRows(rows, filters, spec.textField);
      body.replaceChildren();
      for (const row of shown) spec.fillRow(body, row);
      count.textContent = rows.length === 0 ?
          spec.empty :
          `${shown.length} of ${rows.length} shown.`;
    };
    const {form, filters} = filterForm(rows, spec.textLabel, draw);
    draw(filters);
    const box = element('div', undefined, 'scroll');
    box.appendChild(table);
    container.replaceChildren(element('h2', spec.title), form, count, box);
    view.showStatus('');
  } catch (error) {
    if (!view.current()) return false;
    container.replaceChildren(link('#/', 'Leaderboard'));
    view.showStatus(`Cannot load the ${spec.title}: ${error.message}`, true);
  }
  return false;
}

export function loadSystems(view) {
  return showIndex(view, {
    container: 'scaling',
    path: '/api/v1/index/systems',
    key: 'systems',
    title: 'Scaling',
    tableId: 'scaling-index',
    headers: ['System', 'Workload', 'Scored runs', 'Last run', 'Finished'],
    textField: 'system',
    textLabel: 'System',
    fillRow: systemRow,
    empty: 'No scored run yet.',
  });
}

export function loadSeries(view) {
  return showIndex(view, {
    container: 'history',
    path: '/api/v1/index/series',
    key: 'series',
    title: 'History',
    tableId: 'history-index',
    headers: [
      'Name', 'Workload', 'System', 'Scored / runs', 'Last run', 'Submitted'
    ],
    textField: 'name',
    textLabel: 'Name',
    fillRow: seriesRow,
    empty: 'No run yet.',
  });
}
