// Unit tests of the inventory text (node --test); the same cases as the
// CLI's tests/cli/text/format_test.cc where both say the same thing.
import assert from 'node:assert/strict';
import {test} from 'node:test';

import {formatBytes, formatInventory, formatVersions, nodeState, provenanceRows, summarizeDevices} from './inventory.js';

const GIB = 2 ** 30;

// A node as GET /api/v1/nodes sends it: int64 fields as strings.
function gpuNode() {
  return {
    cpu_model: 'AMD EPYC 9654 96-Core Processor',
    cpu_cores: 192,
    memory_bytes: String(1.5 * 2 ** 40),
    driver_version: '550.54.15',
    devices: [0, 1].map((index) => ({
                          index,
                          kind: 'cuda',
                          model: 'NVIDIA H200',
                          memory_bytes: String(141 * GIB),
                        })),
    versions: {nccl: '2.21.5', hpcai500: '0.1.0'},
  };
}

test('formatBytes picks the binary unit, whole from ten', () => {
  assert.equal(formatBytes(512), '512B');
  assert.equal(formatBytes(String(141 * GIB)), '141GiB');
  assert.equal(formatBytes(143771 * 2 ** 20), '140GiB');  // a real H200
  assert.equal(formatBytes(1.5 * 2 ** 40), '1.5TiB');
  assert.equal(formatBytes(2 * GIB), '2GiB');
  assert.equal(formatBytes('junk'), '0B');
});

test('summarizeDevices groups equal devices or shows the CPU', () => {
  const node = gpuNode();
  assert.equal(summarizeDevices(node), '2x NVIDIA H200 141GiB');
  node.devices.push(
      {model: 'NVIDIA A100-SXM4-80GB', memory_bytes: String(81920 * 2 ** 20)},
      node.devices[0]);
  assert.equal(
      summarizeDevices(node),
      '3x NVIDIA H200 141GiB, 1x NVIDIA A100-SXM4-80GB 80GiB');
  node.devices = [];
  assert.equal(
      summarizeDevices(node), 'AMD EPYC 9654 96-Core Processor (192 cores)');
  delete node.cpu_model;
  assert.equal(summarizeDevices(node), '192 cores');
  assert.equal(summarizeDevices({}), '-');
  assert.equal(summarizeDevices(undefined), '-');
});

test('summarizeDevices shows active NVLink links where a GPU has any', () => {
  const node = gpuNode();
  node.devices[0].nvlink_links = 18;
  node.devices[1].nvlink_links = 18;
  assert.equal(summarizeDevices(node), '2x NVIDIA H200 141GiB (18 NVLinks)');
  node.devices[1].nvlink_links = 1;
  assert.equal(
      summarizeDevices(node),
      '1x NVIDIA H200 141GiB (18 NVLinks), 1x NVIDIA H200 141GiB (1 NVLink)');
  node.devices[1].nvlink_links = 0;
  assert.equal(
      summarizeDevices(node),
      '1x NVIDIA H200 141GiB (18 NVLinks), 1x NVIDIA H200 141GiB');
});

test('formatInventory is one line like the CLI provenance', () => {
  assert.equal(
      formatInventory(gpuNode()),
      '2x NVIDIA H200 141GiB, driver 550.54.15; AMD EPYC 9654 96-Core ' +
          'Processor (192 cores), 1.5TiB; hpcai500 0.1.0, nccl 2.21.5');
  assert.equal(formatInventory({memory_bytes: String(16 * GIB)}), '16GiB');
  assert.equal(formatInventory({}), '-');
  assert.equal(formatVersions({}), '');
});

test('nodeState shows the state with its reason, or a dash', () => {
  assert.equal(
      nodeState({state: 'drained', state_reason: 'fan replaced'}),
      'drained: fan replaced');
  assert.equal(nodeState({state: 'idle', state_reason: ''}), 'idle');
  assert.equal(nodeState({state: ''}), '-');
});

test('provenanceRows lists each attempt\'s nodes in order', () => {
  const rows = provenanceRows([
    {
      number: 1,
      nodes: ['node-b', 'node-a'],
      inventory: {'node-a': {cpu_cores: 4}, 'node-b': {cpu_cores: 8}}
    },
    {number: 2, nodes: ['node-c'], inventory: {}},
  ]);
  assert.deepEqual(rows, [
    {attempt: 1, node: 'node-b', inventory: '8 cores'},
    {attempt: 1, node: 'node-a', inventory: '4 cores'},
  ]);
  assert.deepEqual(provenanceRows(undefined), []);
});
