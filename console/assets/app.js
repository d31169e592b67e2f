// The page of `rlmm console`: reads the console's JSON API (same origin, GET
// only) and draws tables and the SVG timeline. Every text from the log is set
// with textContent, never parsed as HTML.
'use strict';

const SVG = 'http://www.w3.org/2000/svg';
// Ten colours told apart easily (Tableau 10), one per leader epoch modulo 10.
const EPOCH_COLOURS = ['#4e79a7', '#f28e2b', '#59a14f', '#b07aa1', '#76b7b2', '#edc948', '#e15759', '#9c755f', '#ff9da7', '#bab0ac'];
const STARTED = 'COPY_SEGMENT_STARTED';
const DELETING = 'DELETE_SEGMENT_STARTED';

function epochColour(epoch) {
  const n = EPOCH_COLOURS.length;
  return EPOCH_COLOURS[((epoch % n) + n) % n];
}

async function getJSON(path) {
  const r = await fetch(path, { cache: 'no-store' });
  const body = await r.json();
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}

function el(name, attrs, text) {
  const e = document.createElement(name);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = String(text);
  return e;
}

function svgEl(name, attrs, text) {
  const e = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = String(text);
  return e;
}

function row(cells, attrs) {
  const tr = el('tr', attrs);
  for (const c of cells) {
    const td = typeof c === 'object' && c !== null ? el('td', c.attrs || {}, c.text) : el('td', {}, c);
    tr.append(td);
  }
  return tr;
}

const num = (v) => ({ text: v, attrs: { class: 'num' } });
const mono = (v) => ({ text: v, attrs: { class: 'mono' } });

function bytes(n) {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return i === 0 ? `${n} B` : `${v.toFixed(1)} ${units[i]}`;
}

const time = (ms) => (ms < 0 ? '' : new Date(ms).toISOString().replace('.000Z', 'Z'));
const offsets = (a) => (a.firstOffset === undefined ? '' : `${a.firstOffset}–${a.lastOffset}`);
const partitionName = (p) => `${p.topic}-${p.partition}`;
const keyOf = (topicId, partition) => `${topicId}/${partition}`;

let overview = null;

function drawOverview(o) {
  overview = o;
  document.getElementById('source').textContent = `${o.source}, read ${o.readAt}` +
    (o.refreshEveryMs > 0 ? `, re-read every ${o.refreshEveryMs / 1000} s` : ', read once at start');
  document.getElementById('status').textContent = `${o.counts.records} records, ${o.userPartitions} user partitions, ` +
    `${o.anomalyCount} anomalies, ${o.warningCount} warnings; stuck means older than ${o.stuckAfterMs / 60000} min at ${time(o.referenceTimeMs)}`;
  const errP = document.getElementById('refresh-error');
  errP.hidden = !o.lastRefreshError;
  errP.textContent = o.lastRefreshError ? `the last re-reading failed (${o.lastRefreshErrorAt}): ${o.lastRefreshError}` : '';

  const topics = document.querySelector('#topics tbody');
  topics.replaceChildren(...o.topics.map((t) => row([t.topic, mono(t.topicId), num(t.partitions), num(t.segments),
    num(bytes(t.remoteBytes)), num(t.oldestOffset < 0 ? '' : t.oldestOffset), time(t.oldestTimestampMs)])));

  const counts = new Map();
  fetchedAnomalies.forEach((a) => { if (a.topicIdPartition) counts.set(a.topicIdPartition, (counts.get(a.topicIdPartition) || 0) + 1); });
  const parts = document.querySelector('#partitions tbody');
  parts.replaceChildren(...o.partitions.map((p) => {
    const tr = row([partitionName(p), num(p.segments), num(bytes(p.remoteBytes)), num(p.oldestOffset < 0 ? '' : p.oldestOffset),
      num(counts.get(`${p.topicId}:${p.topic}-${p.partition}`) || 0)], { 'data-key': keyOf(p.topicId, p.partition) });
    tr.addEventListener('click', () => { location.hash = `p=${keyOf(p.topicId, p.partition)}`; });
    return tr;
  }));
}

let fetchedAnomalies = [];

function drawAnomalies(a) {
  fetchedAnomalies = a.anomalies;
  document.getElementById('anomaly-summary').textContent = a.anomalyCount === 0 && a.warningCount === 0
    ? 'No anomalies.' : `${a.anomalyCount} anomalies, ${a.warningCount} warnings.`;
  document.querySelector('#anomalies tbody').replaceChildren(...a.anomalies.map((x) =>
    row([x.warning ? `warning: ${x.kind}` : x.kind, x.topicIdPartition || (x.record ? `metadata partition ${x.record.metadataPartition} offset ${x.record.offset}` : ''),
      offsets(x), x.detail], { class: x.warning ? 'warning' : 'failure', 'data-kind': x.kind })));
}

function drawScrub(s) {
  const p = document.getElementById('scrub-summary');
  const table = document.getElementById('findings');
  if (!s.enabled) {
    p.textContent = 'No remote storage given (start the console with --layout and --remote-dir or --s3-bucket to see scrub\'s findings).';
    table.hidden = true;
    return;
  }
  if (!s.report) {
    p.textContent = `Listing ${s.store} failed: ${s.error}`;
    table.hidden = true;
    return;
  }
  const m = s.report.summary;
  p.textContent = `${s.store} (layout ${s.report.layout}): ${m.objects} objects, ${bytes(m.bytes)}; ${m.missing} missing, ` +
    `${m.orphans} orphans (${bytes(m.orphanBytes)}, ${m.protectedOrphans} protected), ${m.mismatches} mismatches.`;
  const rows = [];
  for (const w of s.report.warnings || []) rows.push(row(['warning', '', '', w], { class: 'warning' }));
  for (const part of s.report.partitions) {
    for (const x of part.missing) rows.push(row(['missing', part.topicIdPartition, mono(x.segmentId), `${x.state} offsets ${x.startOffset}–${x.endOffset}: no ${x.missingKeys.join(', ')}`], { class: 'failure' }));
    for (const x of part.orphans) rows.push(row([x.protected ? 'orphan (protected)' : 'orphan', part.topicIdPartition, mono(x.key), `${bytes(x.size)}, ${x.reason}, modified ${x.modified}`], { class: x.protected ? 'warning' : 'failure' }));
    for (const x of part.mismatches) rows.push(row([`mismatch: ${x.kind}`, part.topicIdPartition, mono(x.key || x.segmentId),
      x.kind === 'partial' ? `lacks ${x.missingKeys.join(', ')}` : `${x.actualSize} bytes, the metadata says ${x.expectedSize}`], { class: 'failure' }));
  }
  table.hidden = rows.length === 0;
  table.querySelector('tbody').replaceChildren(...rows);
  if (rows.length === 0) p.textContent += ' The storage matches the metadata.';
}

// The timeline's geometry, in SVG user units.
const W = 1000;
const LEFT = 10;
const RIGHT = 10;
const LANE_H = 26;
const LANE_GAP = 6;
const TOP = 8;
const MARK_H = 10;

function patterns() {
  const defs = svgEl('defs');
  // White stripes over the epoch colour: a copy not finished.
  const copy = svgEl('pattern', { id: 'hatch-copy', width: 8, height: 8, patternUnits: 'userSpaceOnUse', patternTransform: 'rotate(45)' });
  copy.append(svgEl('rect', { width: 4, height: 8, fill: '#ffffff', 'fill-opacity': 0.7 }));
  // Dark stripes the other way: a deletion not finished.
  const del = svgEl('pattern', { id: 'hatch-delete', width: 8, height: 8, patternUnits: 'userSpaceOnUse', patternTransform: 'rotate(-45)' });
  del.append(svgEl('rect', { width: 3, height: 8, fill: '#222222', 'fill-opacity': 0.55 }));
  defs.append(copy, del);
  return defs;
}

function drawTimeline(p) {
  const svg = document.getElementById('timeline');
  document.getElementById('timeline-title').textContent = `Timeline of ${partitionName(p.summary)} (${p.topicIdPartition})`;
  const note = document.getElementById('timeline-note');
  note.textContent = `${p.segmentCount} segments not DELETE_SEGMENT_FINISHED` + (p.truncated ? `, the first ${p.segments.length} drawn` : '') +
    (p.segments.length ? `, offsets ${p.firstOffset}–${p.lastOffset}` : '') + '. Hover a segment for its details.';
  const lanes = Math.max(p.lanes, 1);
  const lanesBottom = TOP + lanes * (LANE_H + LANE_GAP);
  const height = lanesBottom + MARK_H * 2 + 30;
  svg.setAttribute('viewBox', `0 0 ${W} ${height}`);
  svg.replaceChildren(patterns());
  const first = p.firstOffset;
  const span = Math.max(p.lastOffset + 1 - first, 1);
  const x = (off) => LEFT + ((off - first) / span) * (W - LEFT - RIGHT);
  const laneY = (lane) => TOP + lane * (LANE_H + LANE_GAP);

  // Gaps and overlaps: bands across the lanes (drawn over the segments) and marks under them.
  const marks = svgEl('g', { class: 'marks' });
  for (const a of p.anomalies) {
    if (a.firstOffset === undefined) continue;
    let cls = null;
    if (a.kind === 'offset_gap') cls = 'gap';
    else if (a.kind === 'overlapping_segments') cls = 'overlap';
    if (!cls) continue;
    const x0 = x(a.firstOffset);
    const w = Math.max(x(a.lastOffset + 1) - x0, 2);
    const title = svgEl('title', {}, `${a.kind}: ${a.detail}`);
    const band = svgEl('rect', { class: `${cls}-band`, x: x0, y: TOP - 4, width: w, height: lanesBottom - TOP + 4 });
    const mark = svgEl('rect', { class: cls, x: x0, y: lanesBottom + (cls === 'gap' ? 0 : MARK_H), width: w, height: MARK_H - 2,
      'data-first': a.firstOffset, 'data-last': a.lastOffset, 'data-epoch': a.leaderEpoch ?? '' });
    mark.append(title);
    marks.append(band, mark);
  }

  const segs = svgEl('g', { class: 'segments' });
  for (const s of p.segments) {
    const g = svgEl('g', { class: s.stuck ? 'seg stuck' : 'seg', 'data-segment-id': s.segmentId, 'data-state': s.state, 'data-lane': s.lane });
    const y = laneY(s.lane);
    const epochs = s.leaderEpochs.map((e) => e.leaderEpoch).join(', ');
    g.append(svgEl('title', {}, `${s.segmentId}\n${s.state}${s.stuck ? ' (STUCK)' : ''}\noffsets ${s.startOffset}–${s.endOffset}\n` +
      `leader epochs ${epochs}\n${bytes(s.sizeInBytes)}, broker ${s.brokerId}\nnewest record ${time(s.maxTimestampMs)}\nstate since ${time(s.eventTimestampMs)}`));
    for (const e of s.leaderEpochs) {
      g.append(svgEl('rect', { class: 'span', x: x(e.startOffset), y, width: Math.max(x(e.endOffset + 1) - x(e.startOffset), 1), height: LANE_H,
        fill: epochColour(e.leaderEpoch), 'data-epoch': e.leaderEpoch }));
    }
    const x0 = x(s.startOffset);
    const w = Math.max(x(s.endOffset + 1) - x0, 1);
    if (s.state === STARTED || s.state === DELETING) {
      g.append(svgEl('rect', { class: 'hatch', x: x0, y, width: w, height: LANE_H, fill: s.state === STARTED ? 'url(#hatch-copy)' : 'url(#hatch-delete)' }));
    }
    g.append(svgEl('rect', { class: 'outline', x: x0, y, width: w, height: LANE_H }));
    if (s.stuck) g.append(svgEl('text', { class: 'stuck-label', x: x0 + 4, y: y + LANE_H - 8 }, 'stuck'));
    segs.append(g);
  }
  svg.append(segs, marks);

  // The offset axis: the ends and a few ticks between.
  const axis = svgEl('g', { class: 'axis' });
  const axisY = lanesBottom + MARK_H * 2 + 4;
  axis.append(svgEl('line', { x1: LEFT, x2: W - RIGHT, y1: axisY, y2: axisY }));
  if (p.segments.length) {
    const ticks = 5;
    for (let i = 0; i <= ticks; i++) {
      const off = Math.round(first + (span * i) / ticks);
      const tx = x(off);
      axis.append(svgEl('line', { x1: tx, x2: tx, y1: axisY, y2: axisY + 4 }));
      axis.append(svgEl('text', { x: tx, y: axisY + 16, 'text-anchor': i === 0 ? 'start' : i === ticks ? 'end' : 'middle' }, off));
    }
  }
  svg.append(axis);
  svg.setAttribute('data-drawn', p.topicIdPartition);

  drawLegend(p);
  document.querySelector('#segments tbody').replaceChildren(...p.segments.map((s) => row([mono(s.segmentId), s.stuck ? `${s.state} (stuck)` : s.state,
    num(s.startOffset), num(s.endOffset), s.leaderEpochs.map((e) => `${e.leaderEpoch}: ${e.startOffset}–${e.endOffset}`).join('; '),
    num(s.sizeInBytes), num(s.brokerId), time(s.maxTimestampMs), time(s.eventTimestampMs)])));
}

function legendItem(draw, label) {
  const span = el('span');
  const svg = svgEl('svg', { width: 28, height: 14, viewBox: '0 0 28 14' });
  draw(svg);
  span.append(svg, document.createTextNode(` ${label}`));
  return span;
}

function drawLegend(p) {
  const epochs = [...new Set(p.segments.flatMap((s) => s.leaderEpochs.map((e) => e.leaderEpoch)))].sort((a, b) => a - b);
  const items = epochs.map((e) => legendItem((s) => s.append(svgEl('rect', { width: 28, height: 14, fill: epochColour(e) })), `leader epoch ${e}`));
  items.push(legendItem((s) => { s.append(patterns(), svgEl('rect', { width: 28, height: 14, fill: '#888' }), svgEl('rect', { width: 28, height: 14, fill: 'url(#hatch-copy)' })); }, STARTED));
  items.push(legendItem((s) => { s.append(svgEl('rect', { width: 28, height: 14, fill: '#888' }), svgEl('rect', { width: 28, height: 14, fill: 'url(#hatch-delete)' })); }, DELETING));
  items.push(legendItem((s) => s.append(svgEl('rect', { x: 1, y: 1, width: 26, height: 12, fill: 'none', stroke: '#d00', 'stroke-width': 2, 'stroke-dasharray': '6 3' })), 'stuck'));
  items.push(legendItem((s) => s.append(svgEl('rect', { width: 28, height: 8, y: 3, fill: '#d00' })), 'gap'));
  items.push(legendItem((s) => s.append(svgEl('rect', { width: 28, height: 8, y: 3, fill: '#e69500' })), 'overlap'));
  document.getElementById('legend').replaceChildren(...items);
}

function selectedKey() {
  const m = /^#p=(.+)$/.exec(location.hash);
  if (m) return decodeURIComponent(m[1]);
  if (overview && overview.partitions.length) return keyOf(overview.partitions[0].topicId, overview.partitions[0].partition);
  return null;
}

async function showPartition() {
  const key = selectedKey();
  document.querySelectorAll('#partitions tbody tr').forEach((tr) => tr.classList.toggle('selected', tr.dataset.key === key));
  if (!key) return;
  const [topicId, partition] = key.split('/');
  try {
    drawTimeline(await getJSON(`/api/partitions/${encodeURIComponent(topicId)}/${encodeURIComponent(partition)}`));
  } catch (e) {
    document.getElementById('timeline-note').textContent = `Partition ${key}: ${e.message}`;
  }
}

async function load() {
  try {
    const [o, a, s] = await Promise.all([getJSON('/api/overview'), getJSON('/api/anomalies'), getJSON('/api/scrub')]);
    drawAnomalies(a);
    drawOverview(o);
    drawScrub(s);
    await showPartition();
    document.body.setAttribute('data-loaded', o.readAt);
  } catch (e) {
    document.getElementById('source').textContent = `The console could not be read: ${e.message}`;
  }
}

window.addEventListener('hashchange', showPartition);
document.getElementById('reload').addEventListener('click', load);
load();
