// The addresses of the scaling and history pages, the one place that spells
// them: the top bar, the leaderboard's rows, the index pages, the run and
// runs pages and the submission page link there.

// #/scaling?system=S&workload=W[&sweep=ID]; #/scaling (the index) without a
// system.
export function scalingHref(system, workload, sweep) {
  if (!system) return '#/scaling';
  const query = new URLSearchParams({system, workload});
  if (sweep) query.set('sweep', sweep);
  return `#/scaling?${query}`;
}

// #/history/NAME; #/history (the index) without a name.
export function historyHref(name) {
  return name ? `#/history/${encodeURIComponent(name)}` : '#/history';
}

// The query of the hash (#/page?a=1&b=2), read from the hash itself rather
// than the router's decoded argument, so that a name holding '&' stays
// whole.
export function hashQuery() {
  const hash = window.location.hash;
  const at = hash.indexOf('?');
  return new URLSearchParams(at < 0 ? '' : hash.slice(at + 1));
}
