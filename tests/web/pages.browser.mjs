// The pages in real Chromium (Debian's, driven by playwright-core from
// web/node_modules), against the hpcai500d that
// tests/integration/pages_browser_test.cc starts over seeded runs and one
// live smoke run. That test passes, in the environment:
//   HPCAI500_URL            the coordinator's HTTP address
//   HPCAI500_LIVE_RUN       a run training now
//   HPCAI500_STRAGGLER_RUN  a finished 4-rank run whose rank 3 is slow
//   HPCAI500_SCALING_SYSTEM a system with runs at 1, 2, 4 and 8 devices
//   HPCAI500_HISTORY_NAME   a spec with eight nightly runs, one regressed
//   HPCAI500_SCREENSHOTS    where the screenshots go
//   HPCAI500_CHROMIUM       the browser
import assert from 'node:assert/strict';
import {createRequire} from 'node:module';
import {after, before, test} from 'node:test';

const require =
    createRequire(new URL('../../web/package.json', import.meta.url));
const {chromium} = require('playwright-core');

const env = process.env;
const BASE = env.HPCAI500_URL;
const SHOTS = env.HPCAI500_SCREENSHOTS;
const PHONE = {
  width: 390,
  height: 844
};

let browser;

before(async () => {
  assert.ok(
      BASE, 'HPCAI500_URL is not set: run through ctest -R pages_browser');
  browser = await chromium.launch({
    executablePath: env.HPCAI500_CHROMIUM || '/usr/bin/chromium',
    args:
        ['--disable-gpu', '--no-first-run', '--disable-background-networking'],
  });
});

after(async () => {
  if (browser) await browser.close();
});

async function open(path, viewport = {
  width: 1280,
  height: 900
}) {
  const context = await browser.newContext({viewport});
  const page = await context.newPage();
  page.on('pageerror', (error) => {
    throw new Error(`page error on ${path}: ${error.message}`);
  });
  await page.goto(BASE + path);
  return page;
}

async function shot(page, name) {
  await page.screenshot({path: `${SHOTS}/${name}.png`, fullPage: true});
}

async function api(path) {
  const response = await fetch(BASE + path);
  const text = await response.text();
  assert.equal(response.status, 200, `${path}: ${text}`);
  return JSON.parse(text);
}

// The systems of the leaderboard's rows, top to bottom.
function systemsOnPage(page) {
  return page.$$eval(
      '#leaderboard tbody tr',
      (rows) => rows.map(
          (tr) => tr.querySelector('td.system').firstChild.textContent));
}

// Waits until the table shows `systems` in that order.
async function waitForSystems(page, systems) {
  await page.waitForFunction((expected) => {
    const rows = [...document.querySelectorAll('#leaderboard tbody tr')];
    return rows.map(
                   (tr) => tr.querySelector('td.system').firstChild.textContent)
               .join('|') === expected;
  }, systems.join('|'), {timeout: 15000});
}

// Polls run `id` until it ended; resolves to its final state.
async function waitForRunEnd(id, timeoutMs) {
  const ended =
      ['RUN_STATE_SUCCEEDED', 'RUN_STATE_FAILED', 'RUN_STATE_CANCELLED'];
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const run = await api(`/api/v1/runs/${id}`);
    if (ended.includes(run.state)) return run.state;
    assert.ok(Date.now() < deadline, `run ${id} still ${run.state}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

function circles(page, chart) {
  return page.$$eval(`#${chart} circle`, (nodes) => nodes.length);
}

// First, while the live run is young: its page gains an epoch on its own.
test('a live run page gains an epoch without a reload', async () => {
  const page = await open(`/#/runs/${env.HPCAI500_LIVE_RUN}`);
  await page.waitForSelector('#chart-throughput');
  const state = await page.$eval('#run .badge', (b) => b.textContent);
  const before = await circles(page, 'chart-throughput');
  assert.ok(
      !['succeeded', 'failed', 'cancelled'].includes(state),
      `the live run was already ${state} when its page opened`);
  await page.evaluate(() => {
    window.stillTheSameDocument = true;
  });
  await page.waitForFunction(
      (n) => document.querySelectorAll('#chart-throughput circle').length > n,
      before, {timeout: 150000, polling: 500});
  assert.equal(
      await page.evaluate(() => window.stillTheSameDocument), true,
      'the page was reloaded');
  await shot(page, 'run-live');
  await page.context().close();
  // The tests below compare the leaderboard's rows with the API's: the live
  // run (ranked, on that board) must not join it between the two reads.
  assert.equal(
      await waitForRunEnd(env.HPCAI500_LIVE_RUN, 150000),
      'RUN_STATE_SUCCEEDED');
});

test(
    'the leaderboard lists ranked rows by Valid FLOPS, best first',
    async () => {
      const board = await api(
          '/api/v1/leaderboard?workload=image_classification&limit=25&offset=0');
      const ranked = board.rows.filter((row) => row.ranked);
      assert.ok(ranked.length >= 4, JSON.stringify(board));
      for (let i = 1; i < ranked.length; i += 1) {
        assert.ok(ranked[i - 1].valid_flops >= ranked[i].valid_flops);
      }
      const page = await open('/');
      await waitForSystems(page, board.rows.map((row) => row.system));
      const ranks = await page.$$eval(
          '#leaderboard tbody tr:not(.unranked) td:first-child',
          (cells) => cells.map((td) => td.textContent));
      assert.deepEqual(ranks, ranked.map((_, i) => String(i + 1)));
      assert.equal(
          await page.getAttribute('th[data-key="rank"]', 'aria-sort'),
          'ascending');
      // Each row carries devices, spread, versions and links its submission.
      const alpha =
          page.locator('#leaderboard tbody tr', {hasText: 'alpha-bf16'})
              .filter({hasText: '3 runs'});
      assert.match(await alpha.textContent(), /NVIDIA H200/);
      assert.match(await alpha.textContent(), /nccl 2\.21\.5/);
      await shot(page, 'leaderboard');
      await alpha.locator('a').first().click();
      await page.waitForSelector('#submission-runs tbody tr');
      assert.equal(
          await page.$$eval('#submission-runs tbody tr', (rows) => rows.length),
          3);
      await page.context().close();
    });

test('a click on a header re-sorts by that column, both ways', async () => {
  const page = await open('/');
  await page.waitForSelector('#leaderboard tbody tr');
  const byFlops = await api(
      '/api/v1/leaderboard?workload=image_classification&sort=flops&order=desc' +
      '&limit=25&offset=0');
  await page.click('th[data-key="flops"] button');
  await waitForSystems(page, byFlops.rows.map((row) => row.system));
  assert.equal(
      await page.getAttribute('th[data-key="flops"]', 'aria-sort'),
      'descending');
  assert.equal(
      await page.getAttribute('th[data-key="rank"]', 'aria-sort'), 'none');
  const flops = byFlops.rows.map((row) => row.flops);
  assert.deepEqual(flops, flops.slice().sort((a, b) => b - a));
  assert.match(page.url(), /sort=flops/);
  await shot(page, 'leaderboard-by-flops');

  await page.click('th[data-key="flops"] button');
  const ascending = await api(
      '/api/v1/leaderboard?workload=image_classification&sort=flops&order=asc' +
      '&limit=25&offset=0');
  await waitForSystems(page, ascending.rows.map((row) => row.system));
  assert.equal(
      await page.getAttribute('th[data-key="flops"]', 'aria-sort'),
      'ascending');
  await page.context().close();
});

test('the level filter keeps only that level, ranked within it', async () => {
  const page = await open('/');
  await page.waitForSelector('#leaderboard tbody tr');
  const hardware = await api(
      '/api/v1/leaderboard?workload=image_classification&level=hardware' +
      '&limit=25&offset=0');
  await page.selectOption('select[name="level"]', 'hardware');
  await waitForSystems(page, hardware.rows.map((row) => row.system));
  const levels = await page.$$eval(
      '#leaderboard tbody tr', (rows) => rows.map((tr) => tr.dataset.level));
  assert.ok(levels.length > 0);
  assert.deepEqual(new Set(levels), new Set(['hardware']));
  assert.equal(
      await page.$eval(
          '#leaderboard tbody tr td:first-child', (td) => td.textContent),
      '1');
  assert.match(page.url(), /level=hardware/);
  await shot(page, 'leaderboard-hardware');
  await page.context().close();
});

test('a run page draws its charts and names the straggler', async () => {
  const run = env.HPCAI500_STRAGGLER_RUN;
  const page = await open(`/#/runs/${run}`);
  await page.waitForSelector('#chart-rank-throughput svg');
  assert.equal(await circles(page, 'chart-throughput'), 2, 'one per epoch');
  assert.equal(
      await page.$$eval(
          '#chart-rank-throughput g[data-series]', (g) => g.length),
      4, 'one series per rank');
  assert.match(
      await page.textContent('#chart-rank-throughput .straggler'),
      /rank 3 is \d+% slower than the median rank/);
  assert.equal(
      await page.$$eval('#chart-accuracy line.target', (l) => l.length), 1);
  assert.equal(
      await page.$$eval('#chart-time-split g[data-series]', (g) => g.length),
      3);
  assert.equal(await circles(page, 'chart-energy'), 2);
  assert.match(await page.textContent('#run'), /nccl 2\.21\.5/);

  const links = await page.$$eval(
      '#run table.logs a', (as) => as.map((a) => a.getAttribute('href')));
  assert.equal(links.length, 8, 'events and stderr of 4 ranks');
  const events = await fetch(BASE + links[0]);
  assert.equal(events.status, 200);
  assert.match(events.headers.get('content-disposition'), /^attachment/);
  assert.match(await events.text(), /hpcai500_epoch_stats/);
  const stderr = await fetch(BASE + links[7]);
  assert.equal(await stderr.text(), 'rank 3: trained\n');
  await shot(page, 'run-straggler');
  await page.context().close();
});

test(
    'the scaling page plots Valid FLOPS and efficiency by devices',
    async () => {
      const page = await open(`/#/scaling?system=${
          encodeURIComponent(
              env.HPCAI500_SCALING_SYSTEM)}&workload=image_classification`);
      await page.waitForSelector('#chart-scaling-efficiency svg');
      assert.equal(
          await circles(page, 'chart-scaling-vflops'), 4, '1, 2, 4, 8');
      const devices = await page.$$eval(
          '#scaling table.scaling tbody tr td:first-child',
          (cells) => cells.map((td) => td.textContent));
      assert.deepEqual(devices, ['1', '2', '4', '8']);
      await shot(page, 'scaling');
      await page.context().close();
    });

test(
    'the history page draws the served band and marks the regression',
    async () => {
      // The coordinator judges each run against its band (the C++ of regress):
      // of the eight nightly runs, the seventh fell below it.
      const history = await api(`/api/v1/history?name=${
          encodeURIComponent(env.HPCAI500_HISTORY_NAME)}`);
      assert.equal(history.runs.length, 8, JSON.stringify(history));
      const flops = history.runs.map((run) => run.metrics.valid_flops);
      assert.deepEqual(
          flops.map((m) => m.regression),
          [false, false, false, false, false, false, true, false]);
      assert.equal(flops[4].low, null, 'no band before five runs of history');
      assert.ok(
          flops[6].low > flops[6].value && flops[6].low < 0.98e12,
          JSON.stringify(flops[6]));

      const page = await open(
          `/#/history/${encodeURIComponent(env.HPCAI500_HISTORY_NAME)}`);
      await page.waitForSelector('#chart-history-vflops svg');
      assert.equal(await circles(page, 'chart-history-vflops'), 8);
      const flagged = await page.$$eval(
          '#chart-history-vflops circle.flagged',
          (c) => c.map((dot) => dot.querySelector('title').textContent));
      assert.equal(flagged.length, 1, flagged.join('; '));
      assert.match(flagged[0], new RegExp(`^run ${history.runs[6].id}, `));
      assert.equal(
          await page.$$eval(
              '#chart-history-vflops polygon.band', (p) => p.length),
          1);
      const regressions = await page.$$eval(
          '#history table.regressions tbody tr',
          (rows) => rows.map((tr) => tr.cells[0].textContent));
      assert.ok(
          regressions.includes(String(history.runs[6].id)), regressions.join());
      await shot(page, 'history');
      await page.context().close();
    });

test('at phone width a select sorts the cards', async () => {
  const page = await open('/', PHONE);
  await page.waitForSelector('#leaderboard tbody tr');
  assert.equal(await page.isVisible('#sort-by'), true);
  assert.equal(await page.isVisible('#leaderboard thead'), false);
  const byTime = await api(
      '/api/v1/leaderboard?workload=image_classification&sort=train_seconds' +
      '&order=asc&limit=25&offset=0');
  await page.selectOption('#sort-by', 'train_seconds:asc');
  await waitForSystems(page, byTime.rows.map((row) => row.system));
  await page.context().close();
});

test('at phone width no page scrolls sideways', async () => {
  const pages = {
    'phone-leaderboard': ['/', '#leaderboard tbody tr'],
    'phone-runs': ['/#/runs', '#runs tbody tr'],
    'phone-run':
        [`/#/runs/${env.HPCAI500_STRAGGLER_RUN}`, '#chart-rank-throughput svg'],
    'phone-history': [
      `/#/history/${encodeURIComponent(env.HPCAI500_HISTORY_NAME)}`,
      '#chart-history-vflops svg',
    ],
  };
  for (const [name, [path, ready]] of Object.entries(pages)) {
    const page = await open(path, PHONE);
    await page.waitForSelector(ready);
    const widths =
        await page.evaluate(() => ({
                              page: document.documentElement.scrollWidth,
                              body: document.body.scrollWidth,
                              window: window.innerWidth,
                            }));
    assert.ok(
        widths.page <= widths.window && widths.body <= widths.window,
        `${path} is ${widths.page}px wide in a ${widths.window}px window`);
    if (name === 'phone-runs') {
      // Each card line is labelled with its column, from the table's header.
      assert.deepEqual(
          await page.$eval(
              '#runs tbody tr',
              (tr) => [...tr.cells].map((td) => td.dataset.label)),
          await page.$$eval(
              '#runs thead th', (ths) => ths.map((th) => th.textContent)));
    }
    await shot(page, name);
    await page.context().close();
  }
});
