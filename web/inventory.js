// What a node is (its inventory: devices, driver, CPU, memory, software
// versions) in short text, for the nodes page and each attempt's provenance
// on the run page. Pure functions over the API's JSON (int64 fields come as
// strings); they say what the CLI's FormatDevices and FormatInventory
// (cli/text/format.h) say.

const BINARY_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB', 'EiB'];

// 141 * 2**30 -> "141GiB", 1.5 * 2**40 -> "1.5TiB": whole from 10 up.
export function formatBytes(bytes) {
  let value = Number(bytes) || 0;
  let unit = 0;
  while (Math.abs(value) >= 1023.5 && unit < BINARY_UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  const text = unit === 0 || Math.abs(value) >= 9.95 ?
      value.toFixed(0) :
      value.toFixed(1).replace(/\.0$/, '');
  return `${text}${BINARY_UNITS[unit]}`;
}

// "AMD EPYC 9654 96-Core Processor (192 cores)", "192 cores", or '-'.
function cpuSummary(inventory) {
  const cores = Number(inventory.cpu_cores) || 0;
  const model = inventory.cpu_model || '';
  if (!model) return cores > 0 ? `${cores} cores` : '-';
  return cores > 0 ? `${model} (${cores} cores)` : model;
}

// The devices grouped by model, memory and active NVLink links, in index
// order: "2x NVIDIA H200 141GiB (18 NVLinks)" ("2x NVIDIA H200 141GiB"
// without NVLink); without devices the CPU; '-' when the inventory says
// neither.
export function summarizeDevices(inventory) {
  const devices = (inventory && inventory.devices) || [];
  if (devices.length === 0) return cpuSummary(inventory || {});
  const groups = new Map();
  for (const device of devices) {
    let name = device.model || device.kind || 'device';
    if (Number(device.memory_bytes) > 0) {
      name += ` ${formatBytes(device.memory_bytes)}`;
    }
    const links = Number(device.nvlink_links) || 0;
    if (links > 0) name += ` (${links} NVLink${links === 1 ? '' : 's'})`;
    groups.set(name, (groups.get(name) || 0) + 1);
  }
  return [...groups].map(([name, count]) => `${count}x ${name}`).join(', ');
}

// "hpcai500 0.1.0, nccl 2.21.5": the versions sorted by name, or ''.
export function formatVersions(versions) {
  return Object.entries(versions || {})
      .sort(
          ([a], [b]) =>
              (a < b     ? -1 :
                   a > b ? 1 :
                           0))
      .map(([name, value]) => `${name} ${value}`)
      .join(', ');
}

// One line: devices and driver; CPU and memory; versions. '-' when empty.
export function formatInventory(inventory) {
  const inv = inventory || {};
  const parts = [];
  if ((inv.devices || []).length > 0) {
    const driver = inv.driver_version ? `, driver ${inv.driver_version}` : '';
    parts.push(summarizeDevices(inv) + driver);
  }
  let host = cpuSummary(inv);
  if (Number(inv.memory_bytes) > 0) {
    const memory = formatBytes(inv.memory_bytes);
    host = host === '-' ? memory : `${host}, ${memory}`;
  }
  if (host !== '-') parts.push(host);
  const versions = formatVersions(inv.versions);
  if (versions) parts.push(versions);
  return parts.length ? parts.join('; ') : '-';
}

// A node's scheduling state with its reason: "drained: fan replaced",
// "idle", or '-' while the coordinator gives none.
export function nodeState(node) {
  if (!node.state) return '-';
  return node.state_reason ? `${node.state}: ${node.state_reason}` : node.state;
}

// Each attempt's nodes with their inventory, in the attempt's node order:
// [{attempt: 1, node: 'node-a', inventory: '2x ...'}]; nodes without a
// kept inventory are left out.
export function provenanceRows(attempts) {
  const rows = [];
  for (const attempt of attempts || []) {
    const kept = attempt.inventory || {};
    for (const node of attempt.nodes || []) {
      if (!(node in kept)) continue;
      rows.push({
        attempt: attempt.number,
        node,
        inventory: formatInventory(kept[node]),
      });
    }
  }
  return rows;
}
