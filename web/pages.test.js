// Unit tests of the pure parts of the leaderboard, run, scaling and history
// pages (node --test). The pages themselves run in Chromium:
// tests/web/pages_browser.py.
import assert from 'node:assert/strict';
import {test} from 'node:test';

import {healthText, incidentLines, preflightText} from './health.js';
import {changeMarks, historySeries} from './history.js';
import {filterRows, workloadsOf} from './indexes.js';
import {convergenceText, formatDuration, leaderboardPath, PAGE_SIZE, precisionText, spreadText} from './leaderboard.js';
import {historyHref, scalingHref} from './links.js';
import {energyByEpoch, findStraggler, throughputByRank, timeSplit} from './ranks.js';
import {forecastSeries, specValueText} from './run.js';
import {runsWhereChangesBegan} from './runs.js';
import {configurationLabel, configurationSeries, timeShares} from './scaling.js';

// Rows of GET /api/v1/runs/ID/ranks: `speeds[rank]` samples/s every epoch.
function rankRows(speeds, epochs = 2) {
  const rows = [];
  for (let epoch = 1; epoch <= epochs; epoch += 1) {
    speeds.forEach((speed, rank) => {
      rows.push({
        epoch,
        rank,
        throughput: speed,
        compute_seconds: 2,
        input_wait_seconds: 1,
        comm_wait_seconds: rank,
      });
    });
  }
  return rows;
}

test('throughputByRank gives one series per rank, epochs in order', () => {
  const rows = rankRows([100, 90]).reverse();
  const series = throughputByRank(rows);
  assert.deepEqual(series.map((s) => s.name), ['rank 0', 'rank 1']);
  assert.deepEqual(series[1].points, [{x: 1, y: 90}, {x: 2, y: 90}]);
});

test('findStraggler names a rank more than 10% below the median', () => {
  const straggler = findStraggler(rankRows([100, 101, 99, 70]));
  assert.equal(straggler.rank, 3);
  assert.ok(Math.abs(straggler.slower - 0.3) < 0.01, String(straggler.slower));
});

test('findStraggler is null within 10%, and for one rank', () => {
  assert.equal(findStraggler(rankRows([100, 95, 92, 100])), null);
  assert.equal(findStraggler(rankRows([100])), null);
  assert.equal(findStraggler([]), null);
});

test('timeSplit averages each part over ranks, and is empty without', () => {
  const split = timeSplit(rankRows([1, 1]));
  assert.deepEqual(
      split.map((s) => s.name), ['compute', 'input wait', 'communication']);
  assert.deepEqual(split[2].points, [{x: 1, y: 0.5}, {x: 2, y: 0.5}]);
  assert.deepEqual(timeSplit([{epoch: 1, rank: 0}]), []);
});

test('energyByEpoch sums the ranks and is empty when none measured', () => {
  assert.deepEqual(
      energyByEpoch([
        {epoch: 1, rank: 0, energy_joules: 10},
        {epoch: 1, rank: 1, energy_joules: 5}
      ]),
      [{x: 1, y: 15}]);
  assert.deepEqual(energyByEpoch([{epoch: 1, rank: 0}]), []);
});

// Configurations as GET /api/v1/scaling serves them.
const CONFIGURATIONS = [
  {
    config: 'fashion_mnist_smoke',
    precision: 'bf16',
    compression: 'powersgd',
    scaling: 'strong',
    points: [
      {devices: 1, valid_flops: 100, efficiency: 1},
      {devices: 2, valid_flops: 180, efficiency: 0.9},
    ],
  },
  {
    config: 'fashion_mnist_smoke',
    precision: 'fp32',
    compression: 'none',
    scaling: '',
    points: [{
      devices: 4,
      valid_flops: 50,
      efficiency: 1,
      compute_seconds: 3,
      input_seconds: 0,
      comm_seconds: 1,
    }],
  },
];

test('configurationLabel names precision, compression and scaling', () => {
  assert.equal(
      configurationLabel(CONFIGURATIONS[0], false),
      'bf16, powersgd compression, strong scaling');
  assert.equal(
      configurationLabel(CONFIGURATIONS[1], true),
      'fashion_mnist_smoke, fp32, no compression, not a sweep');
  assert.equal(
      configurationLabel(
          {...CONFIGURATIONS[1], fast_paths: 'fused_bn,cuda_graph'}, false),
      'fp32, no compression, not a sweep, fast paths fused_bn + cuda_graph');
});

test('precisionText adds compression and fast paths only when there', () => {
  assert.equal(precisionText({precision: 'fp32', compression: 'none'}), 'fp32');
  assert.equal(
      precisionText({
        precision: 'bf16',
        compression: 'powersgd',
        fast_paths: ['fused_bn'],
      }),
      'bf16, powersgd compression, fast paths fused_bn');
  assert.equal(precisionText({}), '-');
});

test('configurationSeries keeps each configuration its own series', () => {
  const series = configurationSeries(
      CONFIGURATIONS, (p) => p.valid_flops, (v) => String(v));
  assert.deepEqual(series.map((s) => s.name), [
    'bf16, powersgd compression, strong scaling',
    'fp32, no compression, not a sweep'
  ]);
  assert.deepEqual(
      series[0].points.map((p) => [p.x, p.y]), [[1, 100], [2, 180]]);
  assert.deepEqual(series[1].points.map((p) => [p.x, p.y]), [[4, 50]]);
  assert.match(series[1].points[0].label, /4 devices: 50$/);
});

test('timeShares splits a point\'s epoch time, null when unmeasured', () => {
  assert.deepEqual(
      timeShares(CONFIGURATIONS[1].points[0]),
      {compute: 0.75, input: 0, comm: 0.25});
  assert.equal(timeShares(CONFIGURATIONS[0].points[0]), null);
});

test('filterRows keeps a workload and a text in any case', () => {
  const rows = [
    {system: 'Alpha', workload: 'image_classification'},
    {system: 'beta', workload: 'image_classification'},
    {system: 'alphabet', workload: 'extreme_weather'},
  ];
  assert.deepEqual(
      filterRows(rows, {workload: '', text: 'ALPHA'}, 'system')
          .map((r) => r.system),
      ['Alpha', 'alphabet']);
  assert.deepEqual(
      filterRows(rows, {workload: 'extreme_weather', text: ''}, 'system')
          .map((r) => r.system),
      ['alphabet']);
  assert.equal(filterRows(rows, {}, 'system').length, 3);
  assert.deepEqual(
      workloadsOf(rows), ['extreme_weather', 'image_classification']);
});

test('scaling and history addresses encode their names', () => {
  assert.equal(scalingHref(''), '#/scaling');
  assert.equal(
      scalingHref('a&b c', 'image_classification'),
      '#/scaling?system=a%26b+c&workload=image_classification');
  assert.equal(
      scalingHref('a', 'w', 's-1'), '#/scaling?system=a&workload=w&sweep=s-1');
  assert.equal(historyHref(''), '#/history');
  assert.equal(historyHref('a/b'), '#/history/a%2Fb');
});

// Runs as GET /api/v1/history serves them: `values` of valid_flops, a band
// from the sixth on, the sixth a regression.
function historyRuns(values) {
  return values.map((value, i) => ({
                      id: i + 1,
                      finished_ms: 1764547200000 + i,
                      metrics: {
                        valid_flops: {
                          value,
                          low: i < 5 ? null : 98,
                          high: i < 5 ? null : 102,
                          regression: i === 5,
                        },
                      },
                    }));
}

test('historySeries draws the served band and flags the regression', () => {
  const series = historySeries(
      historyRuns([100, 102, 98, 101, 99, 50, 100]), 'valid_flops');
  assert.deepEqual(
      series.points.map((p) => p.y), [100, 102, 98, 101, 99, 50, 100]);
  assert.deepEqual(
      series.points.map((p) => p.flag),
      [false, false, false, false, false, true, false]);
  assert.deepEqual(
      series.band, [{x: 6, lo: 98, hi: 102}, {x: 7, lo: 98, hi: 102}]);
  assert.equal(series.regressions.length, 1);
  assert.equal(series.regressions[0].run.id, 6);
  assert.equal(series.regressions[0].value, 50);
});

test('historySeries of a metric the runs lack draws zeros and no band', () => {
  const series = historySeries(historyRuns([1, 2]), 'quality');
  assert.deepEqual(series.points.map((p) => p.y), [0, 0]);
  assert.deepEqual(series.band, []);
  assert.deepEqual(historySeries(undefined, 'quality').points, []);
});

test(
    'leaderboardPath pages and sends the sort only when not rank order', () => {
      const state = {
        workload: 'image_classification',
        config: '',
        level: 'hardware',
        ranked: '',
        sort: 'rank',
        order: 'asc',
        offset: 50,
      };
      assert.equal(
          leaderboardPath(state),
          '/api/v1/leaderboard?workload=image_classification&level=hardware' +
              `&limit=${PAGE_SIZE}&offset=50`);
      assert.match(
          leaderboardPath({...state, sort: 'flops', order: 'desc'}),
          /&sort=flops&order=desc&/);
    });

test('formatDuration switches to minutes and hours', () => {
  assert.equal(formatDuration(12.3), '12.30 s');
  assert.equal(formatDuration(95), '1m 35s');
  assert.equal(formatDuration(7300), '2h 1m');
});

test('spreadText shows the repetitions\' CV and marks an unrepeatable row', () => {
  assert.equal(spreadText({runs: 1, throughput_cv: 0}), '');
  assert.equal(
      spreadText({runs: 3, throughput_cv: 0.0141}), 'throughput CV 1.4%');
  assert.equal(
      spreadText({
        runs: 5,
        throughput_cv: 0.031,
        epochs_to_target_cv: 0.2485,
        unrepeatable: true,
      }),
      'throughput CV 3.1%, epochs CV 24.9% — unrepeatable');
});

test('convergenceText says what the reference check did to Valid FLOPS', () => {
  assert.equal(convergenceText({}), '');
  assert.equal(convergenceText({convergence: {verdict: 'unchecked'}}), '');
  assert.equal(
      convergenceText({
        epochs_to_target: 32,
        valid_flops_unnormalized: 116.29e9,
        convergence:
            {verdict: 'normalized', factor: 34.5 / 32, reference_epochs: 34.5},
      }),
      'normalised by the convergence check ÷1.078: converged in 32.00 ' +
          'epochs, faster than the reference\'s 34.50; 116.29 GFLOPS before');
  assert.match(
      convergenceText({
        epochs_to_target: 26,
        convergence: {verdict: 'review', factor: 1.327, min_epochs: 30.94},
      }),
      /^for review, normalised by the convergence check ÷1.327: .* beyond the reference's fastest 30.94$/);
});

test('forecastSeries runs from the last measured point to the forecast', () => {
  const measured = [{x: 1, y: 0.5}, {x: 3, y: 0.6}];
  const series = forecastSeries({epochs: 8, final_quality: 0.71}, measured);
  assert.equal(series.name, 'forecast (median)');
  assert.deepEqual(series.points, [{x: 3, y: 0.6}, {x: 8, y: 0.71}]);
  assert.equal(forecastSeries(undefined, measured), null);
  assert.equal(forecastSeries({epochs: 3, final_quality: 0.6}, measured), null);
  assert.equal(forecastSeries({epochs: 8}, []), null);
});

test('specValueText writes the constraints map, not [object Object]', () => {
  assert.equal(
      specValueText({rack: 'r2', gpu_model: 'H200'}), 'gpu_model=H200, rack=r2');
  assert.equal(specValueText(true), 'yes');
  assert.equal(specValueText(4), '4');
});

test('changeMarks places each change of the metric at its first run', () => {
  const runs = [{id: 7}, {id: 9}, {id: 12}];
  const changes = [
    {
      metric: 'throughput',
      run_id: '9',
      change_pct: -8.1,
      regression: true,
      attribution: 'libtorch 2.11.0 -> 2.12.0 in every run after',
    },
    {metric: 'quality', run_id: '12', change_pct: 1.0},
    {metric: 'throughput', run_id: '99', change_pct: 3},
  ];
  const marks = changeMarks(changes, runs, 'throughput');
  assert.equal(marks.length, 1);
  assert.equal(marks[0].x, 2);
  assert.equal(marks[0].bad, true);
  assert.match(
      marks[0].label, /-8\.1% \(step\); libtorch 2\.11\.0 -> 2\.12\.0/);
  assert.equal(changeMarks(changes, runs, 'valid_flops').length, 0);
});

test('runsWhereChangesBegan keeps the runs a change began at', () => {
  const runs = [{id: '3'}, {id: '5'}, {id: '8'}];
  const kept = runsWhereChangesBegan(runs, [{run_id: '5'}, {run_id: '9'}]);
  assert.deepEqual(kept.map((run) => run.id), ['5']);
  assert.deepEqual(runsWhereChangesBegan(runs, undefined), []);
});

test('healthText shows a flag with its evidence and counts incidents', () => {
  assert.equal(
      healthText({flag: 'preflight: gemm_gflops 25 GFLOP/s: -74%',
                  incidents: 2}),
      'flagged: preflight: gemm_gflops 25 GFLOP/s: -74% (2 incidents)');
  assert.equal(healthText({incidents: 1}), '1 incident');
  assert.equal(healthText({}), '-');
});

test('preflightText gives the figures measured, or the error', () => {
  assert.equal(
      preflightText({node: 'a', seconds: 3.66, flagged: true,
                     figures: {gemm_gflops: 241.7, memory_gbps: 8.5}}),
      'gemm 242 GFLOP/s, memory 8.50 GB/s in 3.7 s (flagged)');
  assert.equal(preflightText({node: 'a', error: 'killed'}), 'failed: killed');
  assert.equal(preflightText(undefined), '-');
});

test('incidentLines names node, attempt and rank of each straggler', () => {
  assert.deepEqual(
      incidentLines([{node: 'c', attempt: 1, rank: 2, detail: 'slow'}]),
      ['c (attempt 1, rank 2): slow']);
  assert.deepEqual(incidentLines(undefined), []);
});
