// A small per-epoch line chart drawn as inline SVG: one <circle
// class="point"> per value, axes with tick labels, and an optional dashed
// horizontal reference line (a target).

import {formatTick} from './format.js';

const SVG = 'http://www.w3.org/2000/svg';
const WIDTH = 360;
const HEIGHT = 220;
const MARGIN = {
  top: 12,
  right: 16,
  bottom: 40,
  left: 72
};
const Y_TICKS = 4;
const X_LABELS = 10;

function svgElement(tag, attributes) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes || {})) {
    node.setAttribute(name, String(value));
  }
  return node;
}

function text(x, y, content, attributes) {
  const node = svgElement('text', {x, y, ...attributes});
  node.textContent = content;
  return node;
}

// A round tick step that cuts `span` into about `count` parts.
function niceStep(span, count) {
  const raw = span / count;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const normalized = raw / magnitude;
  const nice = normalized <= 1 ? 1 :
      normalized <= 2          ? 2 :
      normalized <= 5          ? 5 :
                                 10;
  return nice * magnitude;
}

// {lo, hi, ticks}: a domain on round numbers around the values; a flat
// series gets a band around it.
function yAxis(values) {
  let lo = Math.min(...values);
  let hi = Math.max(...values);
  if (lo === hi) {
    const pad = Math.abs(lo) * 0.1 || 1;
    lo -= pad;
    hi += pad;
  }
  const step = niceStep(hi - lo, Y_TICKS);
  lo = Math.floor(lo / step) * step;
  hi = Math.ceil(hi / step) * step;
  const ticks = [];
  for (let i = 0; lo + i * step <= hi + step / 2; i += 1) {
    ticks.push(lo + i * step);
  }
  return {lo, hi, step, ticks};
}

// A <figure> with the chart. `points` are {x: epoch, y: value}; `reference`
// is {value, label} or null.
export function lineChart({id, title, yLabel, points, reference}) {
  const figure = document.createElement('figure');
  figure.id = id;
  figure.className = 'chart';
  const caption = document.createElement('figcaption');
  caption.textContent = title;
  figure.appendChild(caption);
  if (points.length === 0) {
    const empty = document.createElement('p');
    empty.className = 'empty';
    empty.textContent = 'No epochs yet.';
    figure.appendChild(empty);
    return figure;
  }

  const values = points.map((p) => p.y);
  if (reference) values.push(reference.value);
  const {lo: yLo, hi: yHi, step: yStep, ticks} = yAxis(values);
  const xs = points.map((p) => p.x);
  const xLo = Math.min(...xs);
  const xHi = Math.max(...xs);
  const plotW = WIDTH - MARGIN.left - MARGIN.right;
  const plotH = HEIGHT - MARGIN.top - MARGIN.bottom;
  const sx = (x) => MARGIN.left +
      (xHi === xLo ? plotW / 2 : ((x - xLo) / (xHi - xLo)) * plotW);
  const sy = (y) => MARGIN.top + (1 - (y - yLo) / (yHi - yLo)) * plotH;

  const svg = svgElement('svg', {
    viewBox: `0 0 ${WIDTH} ${HEIGHT}`,
    role: 'img',
    'aria-label': title,
  });
  const bottom = MARGIN.top + plotH;
  for (const value of ticks) {
    const y = sy(value);
    svg.appendChild(svgElement('line', {
      x1: MARGIN.left,
      x2: MARGIN.left + plotW,
      y1: y,
      y2: y,
      class: 'grid',
    }));
    svg.appendChild(text(
        MARGIN.left - 6, y + 4, formatTick(value, yStep),
        {'text-anchor': 'end', class: 'tick'}));
  }
  // About X_LABELS epoch labels, however long the run.
  const xEvery = Math.ceil((xHi - xLo + 1) / X_LABELS);
  for (const x of new Set(xs)) {
    if ((x - xLo) % xEvery !== 0 && x !== xHi) continue;
    svg.appendChild(text(
        sx(x), bottom + 16, String(x),
        {'text-anchor': 'middle', class: 'tick'}));
  }
  svg.appendChild(svgElement('line', {
    x1: MARGIN.left,
    x2: MARGIN.left,
    y1: MARGIN.top,
    y2: bottom,
    class: 'axis',
  }));
  svg.appendChild(svgElement('line', {
    x1: MARGIN.left,
    x2: MARGIN.left + plotW,
    y1: bottom,
    y2: bottom,
    class: 'axis',
  }));
  svg.appendChild(text(
      MARGIN.left + plotW / 2, HEIGHT - 4, 'epoch',
      {'text-anchor': 'middle', class: 'axis-label'}));
  svg.appendChild(text(11, MARGIN.top + plotH / 2, yLabel, {
    'text-anchor': 'middle',
    class: 'axis-label',
    transform: `rotate(-90 11 ${MARGIN.top + plotH / 2})`,
  }));

  if (reference) {
    const y = sy(reference.value);
    const line = svgElement('line', {
      x1: MARGIN.left,
      x2: MARGIN.left + plotW,
      y1: y,
      y2: y,
      class: 'target',
      'stroke-dasharray': '6 4',
    });
    const tip = svgElement('title');
    tip.textContent = `${reference.label}: ${reference.value}`;
    line.appendChild(tip);
    svg.appendChild(line);
    svg.appendChild(text(
        MARGIN.left + plotW - 2, y - 4, reference.label,
        {'text-anchor': 'end', class: 'target-label'}));
  }
  svg.appendChild(svgElement('polyline', {
    points: points.map((p) => `${sx(p.x)},${sy(p.y)}`).join(' '),
    class: 'series',
  }));
  for (const p of points) {
    const dot = svgElement(
        'circle', {cx: sx(p.x), cy: sy(p.y), r: 3.5, class: 'point'});
    const tip = svgElement('title');
    tip.textContent = `epoch ${p.x}: ${p.y}`;
    dot.appendChild(tip);
    svg.appendChild(dot);
  }
  figure.appendChild(svg);
  return figure;
}
