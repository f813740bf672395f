// The hpcai500d web pages: a hash router over the views fed by the JSON
// API. #/ (the default) is the leaderboard, #/runs the queue, #/runs/ID one
// run, #/submissions/ID one submission's repetitions, #/scaling the systems
// and #/scaling?system=S&workload=W one system's scaling, #/history the spec
// names and #/history/NAME one spec's runs over time, #/nodes the agents.
// Protobuf JSON prints int64 fields as strings: a page that sorts or adds
// them converts them with Number() first.

import * as history from './history.js';
import * as indexes from './indexes.js';
import * as leaderboard from './leaderboard.js';
import * as nodes from './nodes.js';
import * as run from './run.js';
import * as runs from './runs.js';
import * as scaling from './scaling.js';
import * as submission from './submission.js';


// How often a page with something still changing reloads itself.
const REFRESH_MS = 3000;

// `section` is the id of the page's <section>, `nav` the navigation link
// shown as current.
const ROUTES = [
  {
    pattern: /^#?\/?$/,
    section: 'page-leaderboard',
    nav: 'leaderboard',
    title: 'hpcai500 leaderboard',
    load: leaderboard.load
  },
  {
    pattern: /^#\/runs\/?$/,
    section: 'page-runs',
    nav: 'runs',
    title: 'hpcai500 runs',
    load: runs.load
  },
  {
    pattern: /^#\/runs\/([^/]+)$/,
    section: 'page-run',
    nav: 'runs',
    title: 'hpcai500 run',
    load: run.load
  },
  {
    pattern: /^#\/submissions\/([^/]+)$/,
    section: 'page-submission',
    nav: 'leaderboard',
    title: 'hpcai500 submission',
    load: submission.load
  },
  {
    pattern: /^#\/scaling\/?(?:\?(.*))?$/,
    section: 'page-scaling',
    nav: 'scaling',
    title: 'hpcai500 scaling',
    load: scaling.load
  },
  {
    pattern: /^#\/history\/?(?:\?.*)?$/,
    section: 'page-history',
    nav: 'history',
    title: 'hpcai500 history',
    load: indexes.loadSeries
  },
  {
    pattern: /^#\/history\/([^/?]+)$/,
    section: 'page-history',
    nav: 'history',
    title: 'hpcai500 history',
    load: history.load
  },
  {
    pattern: /^#\/nodes\/?$/,
    section: 'page-nodes',
    nav: 'nodes',
    title: 'hpcai500 nodes',
    load: nodes.load
  },
];

let generation = 0;  // bumped on every navigation; older loads stand down
let timer = null;

function showStatus(text, isError) {
  const status = document.getElementById('status');
  status.textContent = text;
  status.classList.toggle('error', Boolean(isError));
}

function match(hash) {
  for (const route of ROUTES) {
    const found = route.pattern.exec(hash);
    if (found) return {route, argument: found[1]};
  }
  return null;
}

function show(route) {
  for (const section of document.querySelectorAll('main > section')) {
    section.hidden = section.id !== route.section;
  }
  for (const a of document.querySelectorAll('nav a')) {
    if (a.dataset.nav === route.nav) {
      a.setAttribute('aria-current', 'page');
    } else {
      a.removeAttribute('aria-current');
    }
  }
  document.title = route.title;
}

// Loads the page of this navigation, then again every REFRESH_MS for as long
// as the page says something may still change.
async function refresh(mine, route, argument) {
  const view = {
    current: () => mine === generation,
    showStatus: (text, err) => {
      if (mine === generation) showStatus(text, err);
    }
  };
  const again = await route.load(view, decodeURIComponent(argument || ''));
  if (again && view.current()) {
    timer = setTimeout(() => refresh(mine, route, argument), REFRESH_MS);
  }
}

function navigate() {
  generation += 1;
  clearTimeout(timer);
  const found = match(window.location.hash);
  if (!found) {
    show({section: '', nav: '', title: 'hpcai500'});
    showStatus(`No such page: ${window.location.hash}`, true);
    return;
  }
  show(found.route);
  showStatus('Loading...');
  refresh(generation, found.route, found.argument);
}

function start() {
  leaderboard.setUp(navigate);
  window.addEventListener('hashchange', navigate);
  navigate();
}

if (typeof document !== 'undefined') start();
