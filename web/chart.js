// A small line chart drawn as inline SVG: one <circle class="point"> per
// value (class "point flagged" for a point marked `flag`), axes with tick
// labels, one or more series (a legend when more than one), an optional
// dashed horizontal reference line (a target) and an optional shaded band
// (a tolerance: lo..hi at each x).

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

// How many series colours style.css defines (.series-0 ...).
const SERIES_COLOURS = 8;

function legend(series) {
  const list = document.createElement('ul');
  list.className = 'legend';
  series.forEach((one, i) => {
    const item = document.createElement('li');
    item.className = `series-${i % SERIES_COLOURS}`;
    item.textContent = one.name;
    list.appendChild(item);
  });
  return list;
}

// A <figure> with the chart. Either `points` (one series) or `series`
// ([{name, points}]); points are {x, y, flag?, label?}. `reference` is
// {value, label} or null; `band` is [{x, lo, hi}] or null. `marks` are
// vertical lines [{x, label, bad}] (change points; bad ones drawn as
// such) or null. `xLabel` names the x axis ('epoch' unless given).
export function lineChart(
    {id, title, yLabel, xLabel, points, series, reference, band, marks}) {
  const figure = document.createElement('figure');
  figure.id = id;
  figure.className = 'chart';
  const caption = document.createElement('figcaption');
  caption.textContent = title;
  figure.appendChild(caption);
  const all = (series || [
                {name: yLabel, points: points || []}
              ]).filter((one) => one.points.length > 0);
  if (all.length === 0) {
    const empty = document.createElement('p');
    empty.className = 'empty';
    empty.textContent = xLabel ? 'No data yet.' : 'No epochs yet.';
    figure.appendChild(empty);
    return figure;
  }
  if (all.length > 1) figure.appendChild(legend(all));

  const every = all.flatMap((one) => one.points);
  const values = every.map((p) => p.y);
  if (reference) values.push(reference.value);
  for (const b of band || []) values.push(b.lo, b.hi);
  const {lo: yLo, hi: yHi, step: yStep, ticks} = yAxis(values);
  const xs = every.map((p) => p.x);
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
  // About X_LABELS labels, however many x values.
  const xEvery = Math.max(1, Math.ceil((xHi - xLo + 1) / X_LABELS));
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
      MARGIN.left + plotW / 2, HEIGHT - 4, xLabel || 'epoch',
      {'text-anchor': 'middle', class: 'axis-label'}));
  svg.appendChild(text(11, MARGIN.top + plotH / 2, yLabel, {
    'text-anchor': 'middle',
    class: 'axis-label',
    transform: `rotate(-90 11 ${MARGIN.top + plotH / 2})`,
  }));

  if (band && band.length > 0) {
    const upper = band.map((b) => `${sx(b.x)},${sy(b.hi)}`);
    const lower = band.slice().reverse().map((b) => `${sx(b.x)},${sy(b.lo)}`);
    svg.appendChild(svgElement('polygon', {
      points: [...upper, ...lower].join(' '),
      class: 'band',
    }));
  }
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
  for (const mark of marks || []) {
    const x = sx(mark.x);
    const line = svgElement('line', {
      x1: x,
      x2: x,
      y1: MARGIN.top,
      y2: bottom,
      class: mark.bad ? 'change bad' : 'change',
      'stroke-dasharray': '3 3',
    });
    const tip = svgElement('title');
    tip.textContent = mark.label;
    line.appendChild(tip);
    svg.appendChild(line);
  }
  all.forEach((one, i) => {
    const group = svgElement('g', {class: `series-${i % SERIES_COLOURS}`});
    group.dataset.series = one.name;
    group.appendChild(svgElement('polyline', {
      points: one.points.map((p) => `${sx(p.x)},${sy(p.y)}`).join(' '),
      class: 'series',
    }));
    for (const p of one.points) {
      const dot = svgElement('circle', {
        cx: sx(p.x),
        cy: sy(p.y),
        r: p.flag ? 5 : 3.5,
        class: p.flag ? 'point flagged' : 'point',
      });
      const tip = svgElement('title');
      tip.textContent = p.label || `${xLabel || 'epoch'} ${p.x}: ${p.y}`;
      dot.appendChild(tip);
      group.appendChild(dot);
    }
    svg.appendChild(group);
  });
  figure.appendChild(svg);
  return figure;
}
