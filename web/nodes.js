// The nodes page: the agents the coordinator knows, fed by
// GET /api/v1/nodes.

import {cell, element, formatTime, getJson} from './format.js';
import {healthText, preflightText} from './health.js';
import {nodeState, summarizeDevices} from './inventory.js';

function formatLabels(labels) {
  const pairs = Object.entries(labels || {});
  return pairs.length ?
      pairs.map(([key, value]) => `${key}=${value}`).join(', ') :
      '-';
}

function renderRow(node) {
  const tr = document.createElement('tr');
  cell(tr, node.name);
  cell(tr, node.address);
  cell(tr, `${node.used_slots} / ${node.slots}`, 'num');
  cell(tr, String(node.cpus), 'num');
  cell(tr, String(node.gpus), 'num');
  cell(tr, summarizeDevices(node.inventory));
  cell(tr, (node.inventory || {}).driver_version || '-');
  cell(tr, formatLabels(node.labels));
  cell(tr, nodeState(node));
  cell(tr, healthText(node));
  cell(tr, preflightText(node.last_preflight));
  cell(
      tr,
      element(
          'span', node.connected ? 'connected' : 'disconnected',
          `badge ${node.connected ? 'state-succeeded' : 'state-failed'}`));
  cell(tr, formatTime(node.last_seen_ms));
  return tr;
}

// Loads the table; returns true: slots and connections change all the time.
export async function load(view) {
  const body = document.querySelector('#nodes tbody');
  try {
    const json = await getJson('/api/v1/nodes');
    if (!view.current()) return false;
    const nodes = json.nodes || [];
    body.replaceChildren(...nodes.map(renderRow));
    view.showStatus(nodes.length === 0 ? 'No agent has connected yet.' : '');
  } catch (error) {
    if (!view.current()) return false;
    body.replaceChildren();
    view.showStatus(`Cannot load the nodes: ${error.message}`, true);
  }
  return true;
}
