// Number, time and state formatting shared by the pages, and the DOM helpers
// that put API text on the page. API text goes in through textContent only:
// run names, systems and labels come from users.

const PREFIXES = ['', 'K', 'M', 'G', 'T', 'P', 'E'];

// 1234567 -> {value: 1.234567, prefix: 'M'}; values that would print as
// 1000.00 move up to 1.00 of the next prefix.
function scaled(value) {
  let result = Number(value) || 0;
  let index = 0;
  while (Math.abs(result) >= 999.995 && index < PREFIXES.length - 1) {
    result /= 1000;
    index += 1;
  }
  return {value: result, prefix: PREFIXES[index]};
}

// (1.23e12, 'FLOPS') -> "1.23 TFLOPS".
export function formatScaled(value, unit) {
  const s = scaled(value);
  return `${s.value.toFixed(2)} ${s.prefix}${unit}`;
}

// 1.23e12 -> "1.23 TFLOPS".
export function formatFlops(value) {
  return formatScaled(value, 'FLOPS');
}

// An axis tick, with the digits that tell ticks `step` apart:
// (12000, 1000) -> "12K", (1205, 5) -> "1.205K", (0.74, 0.02) -> "0.74".
export function formatTick(value, step) {
  const s = scaled(value);
  const factor = s.value === 0 ? 1 : Number(value) / s.value;
  const digits = Math.ceil(-Math.log10(step / factor) - 1e-9);
  return `${s.value.toFixed(Math.min(Math.max(digits, 0), 6))}${s.prefix}`;
}

export function formatQuality(quality, target) {
  const q = Number(quality).toFixed(4);
  return target === undefined ? q : `${q} / ${Number(target).toFixed(4)}`;
}

// The fast paths a run had on (a list, or the scaling API's comma-joined
// text) -> "fast paths fused_bn + cuda_graph"; '' when none.
export function fastPathsText(paths) {
  const list = Array.isArray(paths) ? paths :
                                      String(paths || '').split(',');
  const on = list.filter((p) => p);
  return on.length ? `fast paths ${on.join(' + ')}` : '';
}

export function formatSeconds(seconds) {
  return `${Number(seconds).toFixed(2)} s`;
}

// Milliseconds since the epoch (a protobuf int64 string) -> local time, or
// "-" when unset.
export function formatTime(ms) {
  const value = Number(ms);
  return value > 0 ? new Date(value).toLocaleString() : '-';
}

// "RUN_STATE_SUCCEEDED" -> "succeeded".
function stateName(state) {
  return String(state || '').replace(/^RUN_STATE_/, '').toLowerCase();
}

export function isFinished(state) {
  return ['succeeded', 'failed', 'cancelled', 'aborted'].includes(
      stateName(state));
}

// An element with the given text and class.
export function element(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (className) node.className = className;
  return node;
}

// Appends a <td> with `text` (a string or a node) to the row.
export function cell(tr, text, className) {
  const td = element('td', undefined, className);
  if (text instanceof Node) {
    td.appendChild(text);
  } else {
    td.textContent = text;
  }
  tr.appendChild(td);
  return td;
}

export function link(href, text) {
  const a = element('a', text);
  a.href = href;
  return a;
}

// The run state as a coloured badge.
export function stateBadge(state) {
  const name = stateName(state) || 'unknown';
  return element('span', name, `badge state-${name}`);
}

// A <dl> of [term, description] pairs; descriptions may be nodes.
export function definitionList(pairs) {
  const dl = element('dl');
  for (const [term, description] of pairs) {
    dl.appendChild(element('dt', term));
    const dd = element('dd');
    if (description instanceof Node) {
      dd.appendChild(description);
    } else {
      dd.textContent = description;
    }
    dl.appendChild(dd);
  }
  return dl;
}

// GET an API path; resolves to the JSON body, or rejects with the API's
// error message and the HTTP status as `status` (none when the request got
// no answer).
export async function getJson(path) {
  const response = await fetch(path);
  let json = {};
  try {
    json = await response.json();
  } catch (error) {
    if (response.ok) throw error;
  }
  if (!response.ok) {
    const error = new Error(json.error || response.statusText);
    error.status = response.status;
    throw error;
  }
  return json;
}

// Whether a failed load may succeed if tried again: not for a 4xx answer
// (no such run, a bad request), yes for anything else (no answer, the
// coordinator restarting, its connection cap).
export function worthRetrying(error) {
  return !(error.status >= 400 && error.status < 500);
}
