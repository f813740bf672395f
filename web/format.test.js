// Unit tests of the pages' formatting (node --test, no dependencies). The
// pages themselves are tested in a real browser by
// tests/integration/browser_test.cc and tests/web/pages_browser.py.
import assert from 'node:assert/strict';
import {test} from 'node:test';

import {fastPathsText, formatFlops, formatQuality, formatScaled, formatSeconds, formatTick, getJson, isFinished, worthRetrying} from './format.js';

test('formatFlops picks the decimal prefix with two decimals', () => {
  assert.equal(formatFlops(0), '0.00 FLOPS');
  assert.equal(formatFlops(950), '950.00 FLOPS');
  assert.equal(formatFlops(1.234e12), '1.23 TFLOPS');
  assert.equal(formatFlops(2.5e15), '2.50 PFLOPS');
  assert.equal(formatFlops(3e21), '3000.00 EFLOPS');
});

test(
    'formatFlops rounds up into the next prefix rather than printing 1000.00',
    () => {
      assert.equal(formatFlops(999.999e6), '1.00 GFLOPS');
    });

test('formatFlops agrees with the CLI on what the CLI tests', () => {
  // tests/cli/text/format_test.cc: FormatFlops(45.6e9) == "45.60 GFLOPS".
  assert.equal(formatFlops(45.6e9), '45.60 GFLOPS');
});

test('formatScaled takes any unit and treats junk as zero', () => {
  assert.equal(formatScaled(1500, 'samples/s'), '1.50 Ksamples/s');
  assert.equal(formatScaled('not a number', 'J'), '0.00 J');
});

test('formatTick shows the digits that tell ticks apart', () => {
  assert.equal(formatTick(12000, 1000), '12K');
  assert.equal(formatTick(1205, 5), '1.205K');
  assert.equal(formatTick(0.74, 0.02), '0.74');
  assert.equal(formatTick(0, 0.2), '0.0');
});

test('formatQuality shows four decimals and the target when known', () => {
  assert.equal(formatQuality(0.7345678, 0.7), '0.7346 / 0.7000');
  assert.equal(formatQuality(0.5), '0.5000');
});

test('formatSeconds keeps two decimals', () => {
  assert.equal(formatSeconds(12.345), '12.35 s');
});

test('isFinished is true for the three end states only', () => {
  for (const s
           of ['RUN_STATE_SUCCEEDED', 'RUN_STATE_FAILED',
               'RUN_STATE_CANCELLED']) {
    assert.equal(isFinished(s), true, s);
  }
  for (const s
           of ['RUN_STATE_QUEUED', 'RUN_STATE_STARTING', 'RUN_STATE_RUNNING',
               '', undefined]) {
    assert.equal(isFinished(s), false, String(s));
  }
});

test('getJson rejects with the API error and the HTTP status', async () => {
  const realFetch = globalThis.fetch;
  try {
    globalThis.fetch = async () => new Response(
        JSON.stringify({error: 'too many connections'}), {status: 503});
    const busy = await getJson('/api/v1/runs/7').catch((error) => error);
    assert.equal(busy.message, 'too many connections');
    assert.equal(busy.status, 503);
    assert.equal(worthRetrying(busy), true, 'a busy coordinator may answer');
    globalThis.fetch = async () =>
        new Response(JSON.stringify({error: 'no run 7'}), {status: 404});
    const missing = await getJson('/api/v1/runs/7').catch((error) => error);
    assert.equal(missing.status, 404);
    assert.equal(worthRetrying(missing), false, 'waiting makes no run');
    assert.equal(
        worthRetrying(new TypeError('fetch failed')), true, 'no answer');
  } finally {
    globalThis.fetch = realFetch;
  }
});

test('fastPathsText names the fast paths on, from a list or joined text', () => {
  assert.equal(fastPathsText(undefined), '');
  assert.equal(fastPathsText([]), '');
  assert.equal(fastPathsText(''), '');
  assert.equal(fastPathsText(['fused_bn']), 'fast paths fused_bn');
  assert.equal(
      fastPathsText('fused_bn,cuda_graph'), 'fast paths fused_bn + cuda_graph');
});
