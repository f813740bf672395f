// The leaderboard page: one table fed by GET /api/v1/leaderboard, filtered by
// workload (kept in the URL's ?workload= so a link shows the same table).

import {cell, formatFlops, formatQuality, getJson, link} from './format.js';

function renderRow(row) {
  const tr = document.createElement('tr');
  if (!row.ranked) tr.classList.add('unranked');
  cell(tr, row.ranked && row.rank > 0 ? String(row.rank) : '-');
  cell(tr, row.system);
  const firstRun = (row.run_ids || [])[0];
  cell(
      tr,
      firstRun === undefined ?
          row.name :
          link(`#/runs/${encodeURIComponent(firstRun)}`, row.name));
  cell(tr, row.config);
  cell(tr, row.level);
  const vflops = cell(tr, formatFlops(row.valid_flops), 'num');
  if (row.runs > 1) {
    vflops.title = `${formatFlops(row.valid_flops_min)} .. ` +
        `${formatFlops(row.valid_flops_max)} over ${row.runs} runs`;
  }
  cell(
      tr, formatQuality(row.quality, row.target),
      Number(row.quality) < Number(row.target) ? 'num below-target' : 'num');
  cell(tr, String(row.runs), 'num');
  cell(tr, row.ranked ? 'ranked' : 'unranked');
  return tr;
}

// Reads ?workload= into the select once and keeps the URL in step with it;
// `reload` is called when the user picks another workload.
export function setUp(reload) {
  const select = document.getElementById('workload');
  const wanted = new URLSearchParams(window.location.search).get('workload');
  if (wanted && [...select.options].some((o) => o.value === wanted)) {
    select.value = wanted;
  }
  select.addEventListener('change', () => {
    const url = new URL(window.location.href);
    url.searchParams.set('workload', select.value);
    window.history.replaceState(null, '', url);
    reload();
  });
}

// Loads the table; the leaderboard only changes when a run ends, so it does
// not refresh itself (returns false).
export async function load(view) {
  const workload = document.getElementById('workload').value;
  const body = document.querySelector('#leaderboard tbody');
  try {
    const json = await getJson(
        `/api/v1/leaderboard?workload=${encodeURIComponent(workload)}`);
    if (!view.current()) return false;
    const rows = json.rows || [];
    body.replaceChildren(...rows.map(renderRow));
    view.showStatus(rows.length === 0 ? `No results for ${workload} yet.` : '');
  } catch (error) {
    if (!view.current()) return false;
    body.replaceChildren();
    view.showStatus(`Cannot load the leaderboard: ${error.message}`, true);
  }
  return false;
}
