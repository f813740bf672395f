// The plain leaderboard page: one table fed by GET /api/v1/leaderboard.
// Protobuf JSON prints int64 fields as strings; they are only displayed or
// put in links here, never computed with.

const UNITS = ['FLOPS', 'KFLOPS', 'MFLOPS', 'GFLOPS', 'TFLOPS', 'PFLOPS',
  'EFLOPS'];

// 1.23e12 -> "1.23 TFLOPS".
export function formatFlops(value) {
  let scaled = Number(value) || 0;
  let unit = 0;
  // 999.995 rounds to "1000.00": show it as 1.00 of the next unit instead.
  while (Math.abs(scaled) >= 999.995 && unit < UNITS.length - 1) {
    scaled /= 1000;
    unit += 1;
  }
  return `${scaled.toFixed(2)} ${UNITS[unit]}`;
}

function formatQuality(row) {
  return `${Number(row.quality).toFixed(4)} / ${Number(row.target).toFixed(4)}`;
}

function cell(tr, text, className) {
  const td = document.createElement('td');
  td.textContent = text;
  if (className) td.className = className;
  tr.appendChild(td);
  return td;
}

function renderRow(row) {
  const tr = document.createElement('tr');
  if (!row.ranked) tr.classList.add('unranked');
  cell(tr, row.ranked && row.rank > 0 ? String(row.rank) : '-');
  cell(tr, row.system);
  const name = cell(tr, '');
  const firstRun = (row.run_ids || [])[0];
  if (firstRun !== undefined) {
    const link = document.createElement('a');
    link.href = `/api/v1/runs/${encodeURIComponent(firstRun)}`;
    link.textContent = row.name;
    name.appendChild(link);
  } else {
    name.textContent = row.name;
  }
  cell(tr, row.config);
  cell(tr, row.level);
  const vflops = cell(tr, formatFlops(row.valid_flops), 'num');
  if (row.runs > 1) {
    vflops.title = `${formatFlops(row.valid_flops_min)} .. ` +
        `${formatFlops(row.valid_flops_max)} over ${row.runs} runs`;
  }
  cell(tr, formatQuality(row),
      Number(row.quality) < Number(row.target) ? 'num below-target' : 'num');
  cell(tr, String(row.runs), 'num');
  cell(tr, row.ranked ? 'ranked' : 'unranked');
  return tr;
}

function showStatus(text, isError) {
  const status = document.getElementById('status');
  status.textContent = text;
  status.classList.toggle('error', Boolean(isError));
}

async function load(workload) {
  const body = document.querySelector('#leaderboard tbody');
  showStatus('Loading...');
  try {
    const response = await fetch(
        `/api/v1/leaderboard?workload=${encodeURIComponent(workload)}`);
    const json = await response.json();
    if (!response.ok) throw new Error(json.error || response.statusText);
    const rows = json.rows || [];
    body.replaceChildren(...rows.map(renderRow));
    showStatus(rows.length === 0 ? `No results for ${workload} yet.` : '');
  } catch (error) {
    body.replaceChildren();
    showStatus(`Cannot load the leaderboard: ${error.message}`, true);
  }
}

function start() {
  const select = document.getElementById('workload');
  const params = new URLSearchParams(window.location.search);
  const wanted = params.get('workload');
  if (wanted && [...select.options].some((o) => o.value === wanted)) {
    select.value = wanted;
  }
  select.addEventListener('change', () => {
    const url = new URL(window.location.href);
    url.searchParams.set('workload', select.value);
    window.history.replaceState(null, '', url);
    load(select.value);
  });
  load(select.value);
}

if (typeof document !== 'undefined') start();
