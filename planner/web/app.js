// The plan viewer. Every number comes from the planning service under /v1: the page posts the
// plan, then reads the version's job graph, statistics, regions and layout (the service lays the
// graph out as the CLI's SVG does) and draws it as SVG, fitted to the window; the wheel zooms,
// dragging pans. Edits, diffs and compatibility checks go through the same API.
// `?plan=ID[&version=N][&select=VERTEX]` opens a stored plan (and shows a vertex's details). When a graph is drawn, #graph gets
// `data-render-ms` (milliseconds since the page started loading, or since "Open" was clicked),
// `data-layout-ms` (the layout request), `data-vertices` and `data-edges`; `data-scale` is the
// current zoom (1 = 1:1).
"use strict";

const API = "/v1";
const SVG = "http://www.w3.org/2000/svg";
const $ = (id) => document.getElementById(id);

// What is shown: plan id, version number, job graph, statistics, regions, versions list.
const view = { id: null, version: null, plan: null, stats: null, regions: null, layout: null, layoutMs: 0, versions: [], selected: null };

// --- talking to the service -----------------------------------------------------------------

async function call(method, path, body) {
  const init = { method, headers: {} };
  if (body !== undefined) {
    init.body = typeof body === "string" ? body : JSON.stringify(body);
    init.headers["Content-Type"] = "application/json";
  }
  const response = await fetch(API + path, init);
  const text = await response.text();
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch (_) { json = null; }
  if (!response.ok) {
    // Errors are Flink's shape: {"errors": ["..."], "code": "..."}.
    const message = json && Array.isArray(json.errors) ? json.errors.join("; ") : text;
    throw new Error(`${response.status}: ${message}`);
  }
  return json;
}

function say(text, kind) {
  const m = $("message");
  m.textContent = text;
  m.className = kind || "";
}

// --- formatting ------------------------------------------------------------------------------

const fmt = (n) => (typeof n === "number" ? n.toLocaleString("en-US") : String(n ?? ""));
function bytes(n) {
  if (typeof n !== "number") return "";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let u = 0;
  let v = n;
  while (v >= 1024 && u < units.length - 1) { v /= 1024; u += 1; }
  return `${u === 0 ? v : v.toFixed(1)} ${units[u]} (${fmt(n)} B)`;
}
function ttl(ms) {
  if (ms === null || ms === undefined) return "no TTL";
  const units = [["d", 86400000], ["h", 3600000], ["min", 60000], ["s", 1000]];
  for (const [u, f] of units) if (ms % f === 0) return `${ms / f} ${u}`;
  return `${ms} ms`;
}
function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}
function rows(table, entries) {
  table.replaceChildren();
  for (const [key, value, stat] of entries) {
    const tr = el("tr");
    tr.append(el("td", {}, key));
    const td = el("td", typeof value === "number" ? { class: "num" } : {}, typeof value === "number" ? fmt(value) : value);
    if (stat) td.setAttribute("data-stat", stat);
    tr.append(td);
    table.append(tr);
  }
}
const label = (v) => v.name || v.id;
// Descriptions are text (a Flink plan's escapes were decoded when it was read), lines and all.
const lines = (text) => (text || "").trim();
const short = (s, n) => (s.length > n ? s.slice(0, n - 1) + "\u2026" : s);

// --- opening a plan --------------------------------------------------------------------------

async function openPlan() {
  const started = performance.now();
  let text = $("paste").value.trim();
  const file = $("file").files[0];
  if (!text && file) text = await file.text();
  if (!text) { say("Choose a file or paste a plan first.", "error"); return; }
  say("Opening\u2026");
  try {
    const created = await call("POST", "/plans", text);
    history.replaceState(null, "", `?plan=${encodeURIComponent(created.id)}`);
    await show(created.id, created.version, started);
    say(`Opened ${created.name || created.id} as plan ${created.id}.`, "ok");
  } catch (e) {
    say(`Could not open the plan: ${e.message}`, "error");
  }
}

// Reads version `version` of plan `id` and draws it; `started` is when the timing starts.
async function show(id, version, started) {
  const summary = await call("GET", `/plans/${id}`);
  const number = version ?? summary.latest;
  const [plan, stats, regions, laidOut] = await Promise.all([
    call("GET", `/plans/${id}/versions/${number}`),
    call("GET", `/plans/${id}/stats?version=${number}`),
    call("GET", `/plans/${id}/regions?version=${number}`),
    fetchLayout(id, number),
  ]);
  Object.assign(view, { id, version: number, plan, stats, regions, layout: laidOut.layout, layoutMs: laidOut.ms, versions: summary.versions, selected: null });
  draw(started);
  showSummary();
  showSuggestions();
  showVersions();
  showPlans();
  $("details-panel").hidden = true;
}

// --- the graph -------------------------------------------------------------------------------

const regionColour = (r, n) => `hsl(${Math.round((r * 360) / Math.max(n, 1) + 200) % 360}, 65%, 86%)`;

// The layout comes from the service (GET /plans/{id}/layout), the same that `conflux inspect
// --format svg` draws: boxes with their names wrapped, edge routes, and label boxes that never
// overlap (above 600 edges labels get no boxes and show on hover).
const LINE = 14;

async function fetchLayout(id, number) {
  const started = performance.now();
  const layout = await call("GET", `/plans/${id}/layout?version=${number}&direction=${$("direction").value}`);
  return { layout, ms: performance.now() - started };
}

function draw(started) {
  const { plan, stats, layout } = view;
  const svg = $("graph");
  svg.replaceChildren();
  svg.classList.toggle("hover-labels", layout.edges.some((e) => !e.label_rect));
  const defs = document.createElementNS(SVG, "defs");
  defs.innerHTML = '<marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#7a8396"/></marker>';
  svg.append(defs);
  const scene = document.createElementNS(SVG, "g");
  scene.setAttribute("id", "scene");
  svg.append(scene);
  const labelLayer = document.createElementNS(SVG, "g");

  const edgeStats = stats.edges || [];
  for (const data of layout.edges) {
    const e = plan.edges[data.index];
    const s = edgeStats[data.index] || {};
    const group = document.createElementNS(SVG, "g");
    const blocking = (e.result_partition_type || "").startsWith("blocking");
    group.setAttribute("class", `edge${blocking ? " blocking" : ""}`);
    group.setAttribute("data-index", data.index);
    const d = data.points.map((p, i) => `${i ? "L" : "M"}${p.x.toFixed(1)},${p.y.toFixed(1)}`).join(" ");
    const hit = document.createElementNS(SVG, "path");
    hit.setAttribute("d", d);
    hit.setAttribute("class", "hit");
    const line = document.createElementNS(SVG, "path");
    line.setAttribute("d", d);
    line.setAttribute("class", "line");
    line.setAttribute("marker-end", "url(#arrow)");
    const title = document.createElementNS(SVG, "title");
    title.textContent = `${data.label.join(" \u00b7 ")}: ${fmt(s.channels)} channels`;
    group.append(hit, line, title);
    const r = data.label_rect;
    if (r) {
      // Labels sit in the boxes the layout reserved for them, drawn above every edge.
      const text = document.createElementNS(SVG, "text");
      text.setAttribute("class", "edge-label");
      text.setAttribute("data-index", data.index);
      text.setAttribute("text-anchor", "middle");
      const step = 13;
      const top = r.y + (r.height - step * data.label.length) / 2 + 10;
      data.label.forEach((l, k) => {
        const span = document.createElementNS(SVG, "tspan");
        span.setAttribute("x", (r.x + r.width / 2).toFixed(1));
        span.setAttribute("y", (top + k * step).toFixed(1));
        span.textContent = l;
        text.append(span);
      });
      labelLayer.append(text);
    }
    group.addEventListener("click", () => selectEdge(data.index));
    scene.append(group);
  }
  scene.append(labelLayer);
  const regionCount = (view.regions.logical_regions || []).length;
  const byId = new Map(plan.vertices.map((v) => [v.id, v]));
  for (const b of layout.vertices) {
    const v = byId.get(b.id);
    const r = b.logical_region;
    const group = document.createElementNS(SVG, "g");
    group.setAttribute("class", "vertex");
    group.setAttribute("data-id", v.id);
    group.setAttribute("data-region", r);
    group.setAttribute("transform", `translate(${b.rect.x.toFixed(1)},${b.rect.y.toFixed(1)})`);
    const rect = document.createElementNS(SVG, "rect");
    rect.setAttribute("width", b.rect.width);
    rect.setAttribute("height", b.rect.height);
    rect.setAttribute("fill", regionColour(r, regionCount));
    const name = document.createElementNS(SVG, "text");
    name.setAttribute("class", "name");
    b.lines.forEach((text, i) => {
      const span = document.createElementNS(SVG, "tspan");
      span.setAttribute("x", 8);
      span.setAttribute("y", 18 + i * LINE);
      span.textContent = text;
      name.append(span);
    });
    const p = document.createElementNS(SVG, "text");
    p.setAttribute("x", 8);
    p.setAttribute("y", 18 + b.lines.length * LINE);
    p.setAttribute("class", "p");
    p.setAttribute("data-parallelism", v.parallelism);
    p.textContent = `parallelism ${fmt(v.parallelism)} \u00b7 logical region ${r}`;
    // The whole name (and Flink's description) on hover.
    const title = document.createElementNS(SVG, "title");
    const description = lines(v.description);
    title.textContent = description && description !== label(v) ? `${label(v)}\n\n${description}` : label(v);
    group.append(rect, name, p, title);
    group.addEventListener("click", () => selectVertex(v.id));
    scene.append(group);
  }
  zoom.content = { width: layout.width, height: layout.height };
  fit();
  $("empty").hidden = true;
  $("controls").hidden = false;
  $("plan-title").textContent = `${plan.name || view.id} \u00b7 plan ${view.id}, version ${view.version}`;
  // Attributes last: a test waiting for data-render-ms sees the whole graph.
  svg.setAttribute("data-layout-ms", view.layoutMs.toFixed(1));
  svg.setAttribute("data-vertices", plan.vertices.length);
  svg.setAttribute("data-edges", (plan.edges || []).length);
  svg.setAttribute("data-render-ms", (performance.now() - started).toFixed(1));
}

// --- zoom and pan ----------------------------------------------------------------------------

// The visible part of the drawing, in its coordinates: the SVG's viewBox, kept at the aspect
// ratio of the element, so that the scale is the element's width over `width`.
const zoom = { x: 0, y: 0, width: 1, height: 1, content: null };
const MAX_SCALE = 4;

function applyZoom() {
  const svg = $("graph");
  svg.setAttribute("viewBox", `${zoom.x.toFixed(2)} ${zoom.y.toFixed(2)} ${zoom.width.toFixed(2)} ${zoom.height.toFixed(2)}`);
  const scale = svg.clientWidth / zoom.width;
  $("zoom-level").textContent = `${Math.round(scale * 100)}%`;
  svg.setAttribute("data-scale", scale.toFixed(4));
}

// Shows the whole drawing, centred, at most at 1:1.
function fit() {
  if (!zoom.content) return;
  const svg = $("graph");
  const [w, h] = [Math.max(svg.clientWidth, 1), Math.max(svg.clientHeight, 1)];
  const scale = Math.min(w / zoom.content.width, h / zoom.content.height, 1);
  zoom.width = w / scale;
  zoom.height = h / scale;
  zoom.x = (zoom.content.width - zoom.width) / 2;
  zoom.y = (zoom.content.height - zoom.height) / 2;
  applyZoom();
}

// Scales by `factor` (> 1 zooms in) keeping the point at element pixels (px, py) in place.
function zoomBy(factor, px, py) {
  const svg = $("graph");
  const [w, h] = [Math.max(svg.clientWidth, 1), Math.max(svg.clientHeight, 1)];
  const scale = Math.min((w / zoom.width) * factor, MAX_SCALE);
  const [fx, fy] = [px ?? w / 2, py ?? h / 2];
  const [cx, cy] = [zoom.x + (fx / w) * zoom.width, zoom.y + (fy / h) * zoom.height];
  zoom.width = w / scale;
  zoom.height = h / scale;
  zoom.x = cx - (fx / w) * zoom.width;
  zoom.y = cy - (fy / h) * zoom.height;
  applyZoom();
}

function actualSize() {
  const svg = $("graph");
  zoomBy(zoom.width / Math.max(svg.clientWidth, 1));
}

function installZoom() {
  const svg = $("graph");
  svg.addEventListener("wheel", (event) => {
    if (!zoom.content) return;
    event.preventDefault();
    const r = svg.getBoundingClientRect();
    zoomBy(Math.exp(-event.deltaY * 0.0015), event.clientX - r.left, event.clientY - r.top);
  }, { passive: false });
  let drag = null;
  svg.addEventListener("pointerdown", (event) => {
    if (event.button !== 0) return;
    drag = { x: event.clientX, y: event.clientY, zx: zoom.x, zy: zoom.y, moved: false };
  });
  window.addEventListener("pointermove", (event) => {
    if (!drag) return;
    const [dx, dy] = [event.clientX - drag.x, event.clientY - drag.y];
    if (!drag.moved && Math.abs(dx) + Math.abs(dy) < 4) return;
    drag.moved = true;
    svg.classList.add("panning");
    const perPixel = zoom.width / Math.max(svg.clientWidth, 1);
    zoom.x = drag.zx - dx * perPixel;
    zoom.y = drag.zy - dy * perPixel;
    applyZoom();
  });
  window.addEventListener("pointerup", () => {
    // A drag is not a click on what it started on.
    if (drag && drag.moved) svg.addEventListener("click", (e) => e.stopPropagation(), { capture: true, once: true });
    drag = null;
    svg.classList.remove("panning");
  });
  $("zoom-fit").addEventListener("click", fit);
  $("zoom-in").addEventListener("click", () => zoomBy(1.25));
  $("zoom-out").addEventListener("click", () => zoomBy(0.8));
  $("zoom-actual").addEventListener("click", actualSize);
  $("direction").addEventListener("change", async () => {
    if (!view.plan) return;
    const started = performance.now();
    try {
      const laidOut = await fetchLayout(view.id, view.version);
      Object.assign(view, { layout: laidOut.layout, layoutMs: laidOut.ms });
      draw(started);
      highlight();
    } catch (e) {
      say(`Could not lay the plan out: ${e.message}`, "error");
    }
  });
  window.addEventListener("resize", () => { if (zoom.content) applyZoom(); });
}

// --- numbers ---------------------------------------------------------------------------------

function showSummary() {
  const s = view.stats;
  $("summary-panel").hidden = false;
  $("version-label").textContent = `(version ${view.version})`;
  rows($("summary"), [
    ["job", `${s.name} (${s.job_type})`],
    ["job vertices / edges", `${fmt(s.job_vertices)} / ${fmt(s.job_edges)}`],
    ["subtasks", s.execution_vertices, "subtasks"],
    ["channels", s.channels, "channels"],
    ["network buffers", s.network.total.target, "buffers"],
    ["network memory", bytes(s.network.bytes), "network-bytes"],
    ["scheduling regions (of subtasks)", s.regions.count, "regions"],
    ["largest scheduling region (subtasks)", s.regions.largest],
    ["logical regions (of job vertices)", s.regions.logical, "logical-regions"],
    ["shuffle descriptors", s.descriptors.descriptors],
    ["descriptor bytes", bytes(s.descriptors.compressed_bytes), "descriptor-bytes"],
    ["offloaded to the blob server", bytes(s.descriptors.offloaded_bytes)],
    ["topology heap", bytes(s.topology_bytes)],
    ["stateful operators", s.stateful_operators],
  ]);
  // Figures no TaskManager can hold, flagged with the option that changes them.
  for (const f of s.flags || []) {
    const tr = el("tr", { class: "flag", "data-flag": f.kind });
    tr.append(el("td", {}, "\u26a0 impossible"), el("td", {}, f.message));
    $("summary").append(tr);
  }
}

// What a group of suggestions of one kind says, for `n` of them.
const SUGGESTION_GROUPS = {
  rebalance_to_rescale: (n) => `${fmt(n)} edge${n === 1 ? "" : "s"} could be RESCALE`,
  gate_above_required: (n) => `${fmt(n)} batch edge${n === 1 ? "" : "s"} target more gate buffers than required`,
  state_without_ttl: (n) => `${fmt(n)} state${n === 1 ? " has" : "s have"} no TTL`,
  stateful_operator_without_uid: (n) => `${fmt(n)} stateful operator${n === 1 ? " has" : "s have"} no uid`,
};

// Suggestions grouped by kind: one line per kind with its count, the saving of all of them and
// "Apply all" when each carries an edit; the single suggestions folded under it.
function showSuggestions() {
  const list = $("suggestions");
  list.replaceChildren();
  const suggestions = view.stats.suggestions || [];
  $("suggestions-panel").hidden = suggestions.length === 0;
  const groups = new Map();
  for (const s of suggestions) {
    if (!groups.has(s.kind)) groups.set(s.kind, []);
    groups.get(s.kind).push(s);
  }
  for (const [kind, members] of groups) {
    const li = el("li", { class: "suggestion-group", "data-kind": kind, "data-count": members.length });
    const saved = members.reduce((a, s) => a + (s.effect ? s.effect.buffer_bytes_saved : 0), 0);
    const head = (SUGGESTION_GROUPS[kind] || ((n) => `${fmt(n)} \u00d7 ${kind}`))(members.length);
    const summary = el("summary", {}, saved > 0 ? `${head}, saving ${bytes(saved)} of network buffers` : head);
    const edits = members.map((s) => s.edit).filter(Boolean);
    if (edits.length === members.length && edits.length > 0) {
      const b = el("button", { class: "apply-all" }, edits.length === 1 ? "Apply" : "Apply all");
      b.addEventListener("click", (event) => { event.preventDefault(); applyEdits(edits); });
      summary.append(" ", b);
    }
    const details = el("details");
    details.append(summary);
    const inner = el("ul");
    for (const s of members) {
      const item = el("li", {}, s.message + " ");
      if (s.edit) {
        const b = el("button", {}, "Apply");
        b.addEventListener("click", () => applyEdit(s.edit));
        item.append(b);
      }
      inner.append(item);
    }
    details.append(inner);
    li.append(details);
    list.append(li);
  }
}

// The stored plans, newest last, each opening on click.
async function showPlans() {
  try {
    const answer = await call("GET", "/plans");
    const list = $("plans");
    list.replaceChildren();
    for (const p of answer.plans || []) {
      const li = el("li", { "data-plan": p.id }, `${p.id}: ${p.name || "(no name)"} \u00b7 ${fmt(p.versions)} version${p.versions === 1 ? "" : "s"}`);
      if (p.id === view.id) li.className = "current";
      li.addEventListener("click", () => {
        history.replaceState(null, "", `?plan=${encodeURIComponent(p.id)}`);
        show(p.id, null, performance.now()).catch((e) => say(e.message, "error"));
      });
      list.append(li);
    }
    $("plans-panel").hidden = (answer.plans || []).length === 0;
  } catch (e) {
    say(`Could not list the stored plans: ${e.message}`, "error");
  }
}

function edgesOf(id) {
  const stats = view.stats.edges || [];
  const inputs = stats.filter((e) => e.target === id);
  const outputs = stats.filter((e) => e.source === id);
  const sum = (list, f) => list.reduce((a, e) => a + f(e), 0);
  return { inputs, outputs, sum };
}

function selectVertex(id) {
  const v = view.plan.vertices.find((x) => x.id === id);
  if (!v) return;
  view.selected = { vertex: id };
  highlight();
  const { inputs, outputs, sum } = edgesOf(id);
  const regionIndex = (view.regions.logical_regions || []).findIndex((m) => m.includes(id));
  const entries = [
    ["id", v.id],
    ["name", v.name || ""],
    ["description", lines(v.description)],
    ["subtasks (parallelism)", v.parallelism, "vertex-parallelism"],
    ["max parallelism", v.max_parallelism ?? "Flink's default"],
    ["slot sharing group", v.slot_sharing_group || "default"],
    ["logical region", regionIndex],
    ["input connections", sum(inputs, (e) => e.channels), "vertex-input-channels"],
    ["output connections", sum(outputs, (e) => e.channels), "vertex-output-channels"],
    ["input gate buffers", sum(inputs, (e) => e.input_buffers.target)],
    ["result partition buffers", sum(outputs, (e) => e.output_buffers.target)],
    ["descriptor bytes (inputs)", bytes(sum(inputs, (e) => e.descriptors.compressed_bytes))],
  ];
  for (const op of v.operators || []) {
    const states = (op.state || []).map((s) => `${s.name} (${s.kind}${s.key_type ? ", keyed" : ""}, ${ttl(s.ttl_ms)})`);
    entries.push([`operator ${op.uid || op.name}`, states.length ? states.join("; ") : "no state"]);
  }
  $("details-title").textContent = `Vertex ${label(v)}`;
  rows($("details"), entries);
  const forms = $("edit-forms");
  forms.replaceChildren();
  forms.append(
    form("Parallelism", [["number", "edit-parallelism-value", v.parallelism]], "edit-parallelism", (p) =>
      applyEdit({ kind: "set_parallelism", vertex: v.id, parallelism: Number(p[0]) })),
    form("Slot sharing group", [["text", "edit-ssg-value", v.slot_sharing_group || ""]], "edit-ssg", (p) =>
      applyEdit({ kind: "set_slot_sharing_group", vertex: v.id, group: p[0] })),
    form("Rescale from state to", [["number", "rescale-value", v.parallelism]], "rescale", (p) => rescale(v.id, Number(p[0]))),
  );
  if ((v.operators || []).length > 1) {
    forms.append(form("Unchain at operator", [["number", "edit-unchain-value", 1]], "edit-unchain", (p) =>
      applyEdit({ kind: "unchain", vertex: v.id, at: Number(p[0]) })));
  }
  for (const op of v.operators || []) {
    for (const s of op.state || []) {
      forms.append(form(`TTL of ${op.uid || op.name}/${s.name} (ms, empty = none)`, [["text", `ttl-${s.name}`, s.ttl_ms ?? ""]], "edit-ttl", (p) =>
        applyEdit({ kind: "set_state_ttl", vertex: v.id, operator: op.uid || op.name, state: s.name, ttl_ms: p[0] === "" ? null : Number(p[0]) })));
    }
  }
  $("details-panel").hidden = false;
}

function selectEdge(index) {
  const e = view.plan.edges[index];
  const s = (view.stats.edges || [])[index] || {};
  view.selected = { edge: index };
  highlight();
  const name = (id) => label(view.plan.vertices.find((v) => v.id === id) || { id });
  $("details-title").textContent = `Edge ${index}: ${short(name(e.source), 30)} \u2192 ${short(name(e.target), 30)}`;
  rows($("details"), [
    ["ship strategy", e.ship_strategy || ""],
    ["distribution pattern", e.distribution_pattern],
    ["partition type", e.result_partition_type],
    ["parallelism", `${fmt(s.producer_parallelism)} \u2192 ${fmt(s.consumer_parallelism)}`],
    ["connections (channels)", s.channels, "edge-channels"],
    ["input gate buffers", s.input_buffers ? s.input_buffers.target : ""],
    ["result partition buffers", s.output_buffers ? s.output_buffers.target : ""],
    ["buffer memory", bytes(s.buffer_bytes)],
    ["partition groups", s.descriptors ? s.descriptors.groups : ""],
    ["shuffle descriptors", s.descriptors ? s.descriptors.descriptors : ""],
    ["descriptor bytes", s.descriptors ? bytes(s.descriptors.compressed_bytes) : ""],
    ["offloaded bytes", s.descriptors ? bytes(s.descriptors.offloaded_bytes) : ""],
  ]);
  const forms = $("edit-forms");
  forms.replaceChildren();
  if ((e.ship_strategy || "").toUpperCase() === "REBALANCE") {
    forms.append(form("Partitioner", [], "edit-rescale", () => applyEdit({ kind: "set_partitioner", edge: index, partitioner: "RESCALE" }), "REBALANCE \u2192 RESCALE"));
  }
  forms.append(form("Chaining", [], "edit-chain", () => applyEdit({ kind: "chain", edge: index }), "Chain source and target"));
  $("details-panel").hidden = false;
}

function highlight() {
  for (const g of document.querySelectorAll("g.vertex, g.edge")) g.classList.remove("selected");
  const s = view.selected || {};
  if (s.vertex !== undefined) document.querySelector(`g.vertex[data-id="${CSS.escape(s.vertex)}"]`)?.classList.add("selected");
  if (s.edge !== undefined) document.querySelector(`g.edge[data-index="${s.edge}"]`)?.classList.add("selected");
}

// A small form: inputs [type, id, value], a button with id `buttonId` calling `act(values)`.
function form(title, inputs, buttonId, act, buttonText) {
  const div = el("div", { class: "edit-form" });
  div.append(el("div", {}, title));
  const fields = inputs.map(([type, id, value]) => {
    const input = el("input", { type, id, value: String(value) });
    div.append(input);
    return input;
  });
  const button = el("button", { id: buttonId }, buttonText || "Apply");
  button.addEventListener("click", () => act(fields.map((f) => f.value)));
  div.append(button);
  return div;
}

// --- edits and analyses ----------------------------------------------------------------------

async function applyEdit(edit) {
  const before = view.stats.channels;
  try {
    const made = await call("POST", `/plans/${view.id}/edits?base=${view.version}`, edit);
    const selected = view.selected;
    await show(view.id, made.version, performance.now());
    if (selected && selected.vertex !== undefined) selectVertex(selected.vertex);
    if (selected && selected.edge !== undefined && selected.edge < view.plan.edges.length) selectEdge(selected.edge);
    say(`Version ${made.version}: ${edit.kind}; channels ${fmt(before)} \u2192 ${fmt(made.channels)}.`, "ok");
  } catch (e) {
    say(`Edit refused: ${e.message}`, "error");
  }
}

// Applies `edits` one after another, each on the version the previous one made.
async function applyEdits(edits) {
  const before = view.stats.channels;
  let version = view.version;
  let made = null;
  try {
    for (const [i, edit] of edits.entries()) {
      say(`Applying ${i + 1} of ${edits.length}…`);
      made = await call("POST", `/plans/${view.id}/edits?base=${version}`, edit);
      version = made.version;
    }
  } catch (e) {
    say(`Edit refused: ${e.message}`, "error");
  }
  if (made) {
    await show(view.id, made.version, performance.now());
    say(`Version ${made.version}: ${edits.length} edits; channels ${fmt(before)} → ${fmt(made.channels)}.`, "ok");
  }
}

async function rescale(vertex, parallelism) {
  try {
    const r = await call("GET", `/plans/${view.id}/rescale?vertex=${encodeURIComponent(vertex)}&parallelism=${parallelism}&version=${view.version}`);
    const reads = r.new_subtasks.map((s) => `new ${s.subtask}: key groups ${s.key_groups.start}-${s.key_groups.end} reads ${s.reads.map((x) => `old ${x.old_subtask}`).join(", ")}`);
    showAnalysis(`Rescale ${r.old_parallelism} \u2192 ${r.new_parallelism} (${r.max_parallelism} key groups, keyed state ${r.keyed_state}): moves ${r.moved_key_groups} key groups (${(r.moved_share * 100).toFixed(1)}%)`, reads.join("\n"));
  } catch (e) {
    say(`Rescale refused: ${e.message}`, "error");
  }
}

function showVersions() {
  $("versions-panel").hidden = false;
  const list = $("versions");
  list.replaceChildren();
  for (const v of view.versions) {
    const edit = v.edit ? `${v.edit.kind} ${JSON.stringify(Object.fromEntries(Object.entries(v.edit).filter(([k]) => k !== "kind")))}` : "submitted plan";
    const li = el("li", { "data-version": v.number }, `${v.number}${v.parent ? ` (from ${v.parent})` : ""}: ${edit}`);
    if (v.number === view.version) li.className = "current";
    li.addEventListener("click", () => show(view.id, v.number, performance.now()).catch((e) => say(e.message, "error")));
    list.append(li);
  }
  for (const [sel, fallback] of [[$("from"), view.versions.length > 1 ? view.versions[view.versions.length - 2].number : view.version], [$("to"), view.version]]) {
    sel.replaceChildren(...view.versions.map((v) => el("option", { value: v.number }, String(v.number))));
    sel.value = String(fallback);
  }
}

function showAnalysis(title, text) {
  const a = $("analysis");
  a.replaceChildren(el("div", { class: "verdict" }, title), el("pre", {}, text));
}

async function compare() {
  try {
    const r = await call("GET", `/plans/${view.id}/diff?from=${$("from").value}&to=${$("to").value}`);
    const d = r.diff;
    const changed = d.vertices_changed.map((c) => `vertex ${c.id}: ${c.fields.map((f) => `${f.field} ${JSON.stringify(f.old)} \u2192 ${JSON.stringify(f.new)}`).join(", ")}`)
      .concat(d.edges_changed.map((c) => `edge ${c.id}: ${c.fields.map((f) => `${f.field} ${JSON.stringify(f.old)} \u2192 ${JSON.stringify(f.new)}`).join(", ")}`))
      .concat(d.vertices_added.map((v) => `vertex added: ${v}`), d.vertices_removed.map((v) => `vertex removed: ${v}`))
      .concat(d.edges_added.map((v) => `edge added: ${v}`), d.edges_removed.map((v) => `edge removed: ${v}`));
    showAnalysis(`Version ${r.from} \u2192 ${r.to}: channels ${fmt(d.channels[0])} \u2192 ${fmt(d.channels[1])}`, changed.join("\n") || "no changes");
  } catch (e) {
    say(`Compare failed: ${e.message}`, "error");
  }
}

async function compat() {
  try {
    const r = await call("GET", `/plans/${view.id}/compat?from=${$("from").value}&to=${$("to").value}`);
    const rep = r.report;
    const layers = ["topology", "business_logic", "state_schema"].map((l) => `${l}: ${rep[l].verdict || JSON.stringify(rep[l])}`);
    showAnalysis(`State compatibility ${r.from} \u2192 ${r.to}: ${rep.verdict}`, layers.concat("", JSON.stringify(rep.operators, null, 1)).join("\n"));
  } catch (e) {
    say(`Compatibility check failed: ${e.message}`, "error");
  }
}

// --- start -----------------------------------------------------------------------------------

installZoom();
showPlans();
$("open").addEventListener("click", openPlan);
$("file").addEventListener("change", () => { $("paste").value = ""; });
$("diff").addEventListener("click", compare);
$("compat").addEventListener("click", compat);
const params = new URLSearchParams(location.search);
if (params.get("plan")) {
  const version = params.get("version");
  // Timing from the start of the page load (performance.now() counts from navigation start).
  show(params.get("plan"), version ? Number(version) : null, 0)
    .then(() => { if (params.get("select")) selectVertex(params.get("select")); })
    .catch((e) => say(`Could not show the plan: ${e.message}`, "error"));
}
