// Conflux's live job view. Reads Flink's REST API only (/overview, /jobs/overview, /jobs/:id,
// /taskmanagers) of this page's server, or of ?jobmanager=URL, every ?refresh=MS ms.
'use strict';

const params = new URLSearchParams(location.search);
const BASE = (params.get('jobmanager') || '').replace(/\/+$/, '');
const REFRESH_MS = Math.max(200, Number(params.get('refresh')) || 1000);

// Flink's ExecutionState and JobStatus colours, as its dashboard draws them.
const COLOURS = {
  CREATED: '#dfe3e8', SCHEDULED: '#c9d2dc', DEPLOYING: '#ffe08a', INITIALIZING: '#fff1b8',
  RUNNING: '#9ed89a', FINISHED: '#8fb8ec', CANCELING: '#f2c6a0', CANCELED: '#c0c0c0',
  FAILING: '#f5a3a3', FAILED: '#e36a6a', RECONCILING: '#e0c9f2', RESTARTING: '#f2c6a0',
  SUSPENDED: '#c0c0c0',
};
const ENDED = new Set(['FINISHED', 'FAILED', 'CANCELED', 'SUSPENDED']);

let selected = (location.hash.match(/job=([0-9a-f]{32})/) || [])[1] || null;
let drawnPlanOf = null;

const $ = (id) => document.getElementById(id);

function el(tag, attrs, text) {
  const svg = ['svg', 'g', 'rect', 'text', 'path', 'defs', 'marker', 'title', 'tspan'].includes(tag);
  const e = svg ? document.createElementNS('http://www.w3.org/2000/svg', tag) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

async function getJson(path) {
  const r = await fetch(BASE + path, { cache: 'no-store' });
  if (!r.ok) throw new Error(`${path}: HTTP ${r.status}`);
  return r.json();
}

function time(ms) {
  return ms > 0 ? new Date(ms).toLocaleTimeString() : '-';
}

function duration(ms) {
  if (!(ms >= 0)) return '-';
  const s = Math.round(ms / 1000);
  return s < 60 ? `${s} s` : `${Math.floor(s / 60)} min ${s % 60} s`;
}

function finishedOf(tasks) {
  return `${tasks.FINISHED ?? tasks.finished ?? 0} / ${tasks.total ?? Object.values(tasks).reduce((a, b) => a + b, 0)}`;
}

function renderJobs(jobs) {
  const body = $('jobs').tBodies[0];
  body.replaceChildren();
  for (const j of jobs) {
    const tr = el('tr', { 'data-jid': j.jid });
    if (j.jid === selected) tr.classList.add('selected');
    tr.append(el('td', { class: 'name' }, j.name), el('td', { class: 'state' }, j.state),
      el('td', { class: 'tasks num' }, finishedOf(j.tasks)), el('td', {}, time(j['start-time'])),
      el('td', { class: 'num' }, duration(j.duration)));
    tr.querySelector('.state').style.background = COLOURS[j.state] || '';
    tr.addEventListener('click', () => {
      selected = j.jid;
      location.hash = `job=${j.jid}`;
      refresh();
    });
    body.append(tr);
  }
}

function renderTaskManagers(tms) {
  const body = $('taskmanagers').tBodies[0];
  body.replaceChildren();
  for (const t of tms) {
    const tr = el('tr', { 'data-id': t.id });
    tr.append(el('td', { class: 'id' }, t.id), el('td', {}, t.path),
      el('td', { class: 'slots num' }, String(t.slotsNumber)),
      el('td', { class: 'free num' }, String(t.freeSlots)),
      // Flink's timeSinceLastHeartbeat is the time of the last heartbeat, epoch ms.
      el('td', {}, time(t.timeSinceLastHeartbeat)));
    body.append(tr);
  }
}

// Ranks by longest path from the sources, left to right; order within a rank as listed.
function layout(vertices, nodes) {
  const inputs = new Map(nodes.map((n) => [n.id, (n.inputs || []).map((i) => i.id)]));
  const rank = new Map();
  const rankOf = (id, depth) => {
    if (rank.has(id)) return rank.get(id);
    if (depth > vertices.length) return 0; // a cycle: not a job graph, drawn flat
    const r = Math.max(-1, ...(inputs.get(id) || []).map((i) => rankOf(i, depth + 1))) + 1;
    rank.set(id, r);
    return r;
  };
  const columns = [];
  for (const v of vertices) {
    const r = rankOf(v.id, 0);
    (columns[r] = columns[r] || []).push(v.id);
  }
  const W = 230, H = 78, GX = 60, GY = 24;
  const at = new Map();
  columns.forEach((col, r) => col.forEach((id, i) => at.set(id, { x: 10 + r * (W + GX), y: 10 + i * (H + GY) })));
  const width = 20 + columns.length * (W + GX) - GX;
  const height = 20 + Math.max(1, ...columns.map((c) => c.length)) * (H + GY) - GY;
  return { at, inputs, W, H, width, height };
}

function drawGraph(job) {
  const svg = $('graph');
  const nodes = (job.plan && job.plan.nodes) || [];
  const g = layout(job.vertices, nodes);
  svg.replaceChildren();
  svg.setAttribute('width', g.width);
  svg.setAttribute('height', g.height);
  svg.setAttribute('viewBox', `0 0 ${g.width} ${g.height}`);
  const defs = el('defs');
  const marker = el('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto' });
  marker.append(el('path', { d: 'M0,0 L10,5 L0,10 z', fill: '#8a8a8a' }));
  defs.append(marker);
  svg.append(defs);
  for (const v of job.vertices) {
    const to = g.at.get(v.id);
    for (const from of g.inputs.get(v.id) || []) {
      const f = g.at.get(from);
      if (!f) continue;
      const x1 = f.x + g.W, y1 = f.y + g.H / 2, x2 = to.x, y2 = to.y + g.H / 2, mx = (x1 + x2) / 2;
      svg.append(el('path', { class: 'edge', 'data-from': from, 'data-to': v.id, d: `M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2},${y2}` }));
    }
  }
  for (const v of job.vertices) {
    const p = g.at.get(v.id);
    const box = el('g', { class: 'vertex', 'data-id': v.id, transform: `translate(${p.x},${p.y})` });
    box.append(el('title', {}, v.name), el('rect', { width: g.W, height: g.H }));
    const name = v.name.length > 34 ? `${v.name.slice(0, 33)}\u2026` : v.name;
    box.append(el('text', { x: 8, y: 18, class: 'name' }, name),
      el('text', { x: 8, y: 38, class: 'parallelism' }, `parallelism ${v.parallelism}`),
      el('text', { x: 8, y: 58, class: 'tasks' }, ''), el('text', { x: g.W - 8, y: 58, 'text-anchor': 'end', class: 'status' }, ''));
    svg.append(box);
  }
}

function renderJob(job) {
  $('job-panel').hidden = false;
  $('job-title').textContent = `${job.name} \u00b7 ${job.state} \u00b7 ${duration(job.duration)}`;
  $('job-title').dataset.state = job.state;
  if (drawnPlanOf !== job.jid) {
    drawGraph(job);
    drawnPlanOf = job.jid;
  }
  const rows = $('vertices').tBodies[0];
  rows.replaceChildren();
  for (const v of job.vertices) {
    const done = `${v.tasks.FINISHED || 0}/${v.parallelism}`;
    const box = $('graph').querySelector(`g.vertex[data-id="${v.id}"]`);
    if (box) {
      box.dataset.status = v.status;
      box.querySelector('rect').setAttribute('fill', COLOURS[v.status] || '#fff');
      box.querySelector('.tasks').textContent = `${done} finished`;
      box.querySelector('.status').textContent = v.status;
    }
    const tr = el('tr', { 'data-id': v.id });
    tr.append(el('td', {}, v.name), el('td', { class: 'num' }, String(v.parallelism)),
      el('td', { class: 'status' }, v.status), el('td', { class: 'tasks num' }, done));
    tr.querySelector('.status').style.background = COLOURS[v.status] || '';
    rows.append(tr);
  }
}

function renderLegend() {
  const legend = $('legend');
  for (const s of ['CREATED', 'SCHEDULED', 'DEPLOYING', 'INITIALIZING', 'RUNNING', 'FINISHED', 'CANCELED', 'FAILED']) {
    const i = el('i');
    i.style.background = COLOURS[s];
    const span = el('span');
    span.append(i, s);
    legend.append(span);
  }
}

let timer = null;
async function refresh() {
  clearTimeout(timer);
  try {
    const [overview, jobs, tms] = await Promise.all([
      getJson('/overview'), getJson('/jobs/overview'), getJson('/taskmanagers')]);
    $('cluster').textContent = `${overview.taskmanagers} TaskManagers \u00b7 ${overview['slots-available']} of ${overview['slots-total']} slots free \u00b7 Flink ${overview['flink-version']} API`;
    const list = jobs.jobs.slice().sort((a, b) => b['start-time'] - a['start-time']);
    if (!selected || !list.some((j) => j.jid === selected)) {
      const running = list.find((j) => !ENDED.has(j.state));
      selected = (running || list[0] || {}).jid || null;
    }
    renderJobs(list);
    renderTaskManagers(tms.taskmanagers);
    if (selected) renderJob(await getJson(`/jobs/${selected}`));
    $('message').textContent = '';
    document.body.dataset.refreshed = String(Date.now());
  } catch (e) {
    $('message').textContent = `cannot read the JobManager's REST API: ${e.message}`;
  }
  timer = setTimeout(refresh, REFRESH_MS);
}

renderLegend();
refresh();
