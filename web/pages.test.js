// Unit tests of the pure parts of the leaderboard, run, scaling and history
// pages (node --test). The pages themselves run in Chromium:
// tests/web/pages_browser.py.
import assert from 'node:assert/strict';
import {test} from 'node:test';

import {historySeries} from './history.js';
import {formatDuration, leaderboardPath, PAGE_SIZE} from './leaderboard.js';
import {energyByEpoch, findStraggler, throughputByRank, timeSplit} from './ranks.js';
import {forecastSeries} from './run.js';
import {scalingPoints} from './scaling.js';

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

function run(id, system, nodes, ranks, validFlops) {
  return {
    id: String(id),
    spec: {system, nodes, ranks_per_node: ranks},
    score: {valid_flops: validFlops},
  };
}

test('scalingPoints averages per device count and rates efficiency', () => {
  const points = scalingPoints(
      [
        run(1, 'a', 1, 1, 100), run(2, 'a', 1, 1, 120), run(3, 'a', 1, 2, 200),
        run(4, 'a', 2, 2, 330), run(5, 'b', 1, 4, 1e9),
        {id: '6', spec: {system: 'a', nodes: 8}},  // not scored
      ],
      'a');
  assert.deepEqual(points.map((p) => p.devices), [1, 2, 4]);
  assert.equal(points[0].validFlops, 110);
  assert.equal(points[0].runs, 2);
  assert.equal(points[0].efficiency, 1);
  assert.ok(Math.abs(points[2].efficiency - 330 / 4 / 110) < 1e-12);
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

test('forecastSeries runs from the last measured point to the forecast', () => {
  const measured = [{x: 1, y: 0.5}, {x: 3, y: 0.6}];
  const series = forecastSeries({epochs: 8, final_quality: 0.71}, measured);
  assert.equal(series.name, 'forecast (median)');
  assert.deepEqual(series.points, [{x: 3, y: 0.6}, {x: 8, y: 0.71}]);
  assert.equal(forecastSeries(undefined, measured), null);
  assert.equal(forecastSeries({epochs: 3, final_quality: 0.6}, measured), null);
  assert.equal(forecastSeries({epochs: 8}, []), null);
});
