// The explorer page: plain JavaScript, no build step. Every value the
// store holds reaches the page as text (textContent), never as markup.
"use strict";

const token = new URLSearchParams(location.search).get("token");

async function api(path, params = {}) {
  const query = new URLSearchParams(params);
  if (token) query.set("token", token);
  const response = await fetch(`${path}?${query}`);
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body;
}

function el(tag, text, cls) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (cls) node.className = cls;
  return node;
}

function row(cells) {
  const tr = el("tr");
  for (const cell of cells) {
    const td = el("td");
    if (cell instanceof Node) td.appendChild(cell); else td.textContent = cell === undefined || cell === null ? "" : String(cell);
    tr.appendChild(td);
  }
  return tr;
}

function bytes(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${i ? n.toFixed(1) : n} ${units[i]}`;
}

// A value as a tree: maps and lists fold (<details>), the rest is text.
function tree(value, label) {
  if (value !== null && typeof value === "object") {
    const details = el("details");
    const entries = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
    details.open = entries.length <= 20;
    const summary = el("summary", `${label === undefined ? "" : label + ": "}${Array.isArray(value) ? `list of ${entries.length}` : `map of ${entries.length}`}`);
    details.appendChild(summary);
    const list = el("ul");
    for (const [k, v] of entries) {
      const item = el("li");
      item.appendChild(tree(v, k));
      list.appendChild(item);
    }
    details.appendChild(list);
    return details;
  }
  const leaf = el("span", null, "leaf");
  if (label !== undefined) leaf.appendChild(el("span", `${label}: `, "label"));
  leaf.appendChild(el("span", JSON.stringify(value), `value ${value === null ? "nil" : typeof value}`));
  return leaf;
}

function error(target, e) {
  target.replaceChildren(el("p", e.message, "error"));
}

// Horizontal bars: [label, value] pairs, each a share of the largest.
function bars(target, title, pairs, format = String) {
  const max = Math.max(1, ...pairs.map(([, v]) => v));
  const ns = "http://www.w3.org/2000/svg";
  const height = 22 * pairs.length + 30;
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("width", "640");
  svg.setAttribute("height", String(height));
  svg.setAttribute("role", "img");
  const caption = document.createElementNS(ns, "text");
  caption.setAttribute("x", "0"); caption.setAttribute("y", "16"); caption.setAttribute("class", "title");
  caption.textContent = title;
  svg.appendChild(caption);
  pairs.forEach(([label, value], i) => {
    const y = 28 + 22 * i;
    const name = document.createElementNS(ns, "text");
    name.setAttribute("x", "0"); name.setAttribute("y", String(y + 14));
    name.textContent = label;
    const bar = document.createElementNS(ns, "rect");
    bar.setAttribute("x", "160"); bar.setAttribute("y", String(y));
    bar.setAttribute("width", String(Math.max(1, 380 * value / max))); bar.setAttribute("height", "16");
    const amount = document.createElementNS(ns, "text");
    amount.setAttribute("x", String(166 + 380 * value / max)); amount.setAttribute("y", String(y + 14));
    amount.textContent = format(value);
    svg.append(name, bar, amount);
  });
  target.replaceChildren(svg);
}

// Stacked bars per shard: added, removed, changed.
function shardBars(target, shards) {
  const ns = "http://www.w3.org/2000/svg";
  const max = Math.max(1, ...shards.map(s => s.added + s.removed + s.changed));
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("width", "640");
  svg.setAttribute("height", String(22 * shards.length + 50));
  const caption = document.createElementNS(ns, "text");
  caption.setAttribute("x", "0"); caption.setAttribute("y", "16"); caption.setAttribute("class", "title");
  caption.textContent = "changes per shard: added, removed, changed";
  svg.appendChild(caption);
  shards.forEach((s, i) => {
    const y = 28 + 22 * i;
    const name = document.createElementNS(ns, "text");
    name.setAttribute("x", "0"); name.setAttribute("y", String(y + 14));
    name.textContent = `shard ${i}`;
    svg.appendChild(name);
    let x = 80;
    for (const kind of ["added", "removed", "changed"]) {
      const w = 440 * s[kind] / max;
      const bar = document.createElementNS(ns, "rect");
      bar.setAttribute("x", String(x)); bar.setAttribute("y", String(y));
      bar.setAttribute("width", String(w)); bar.setAttribute("height", "16");
      bar.setAttribute("class", kind);
      svg.appendChild(bar);
      x += w;
    }
    const amount = document.createElementNS(ns, "text");
    amount.setAttribute("x", String(x + 6)); amount.setAttribute("y", String(y + 14));
    amount.textContent = `${s.added} / ${s.removed} / ${s.changed}`;
    svg.appendChild(amount);
  });
  target.replaceChildren(svg);
}

// Tabs, by the URL's fragment too (#keys), so a link opens one.
function show(tab) {
  for (const b of document.querySelectorAll("nav button")) b.classList.toggle("active", b.dataset.tab === tab);
  for (const s of document.querySelectorAll(".tab")) s.classList.toggle("active", s.id === tab);
  if (tab === "info") loadInfo();
  if (tab === "history") loadHistory();
}

async function lookup(event) {
  event.preventDefault();
  const target = document.getElementById("lookup-result");
  const key = document.getElementById("lookup-key").value;
  try {
    const found = await api("/api/get", { key });
    if (!found.found) target.replaceChildren(el("p", `not found: ${key}`, "absent"));
    else target.replaceChildren(tree(found.value, key));
  } catch (e) { error(target, e); }
}

let scan = null;

async function scanKeys(event, more = false) {
  if (event) event.preventDefault();
  const body = document.querySelector("#keys-table tbody");
  const progress = document.getElementById("keys-progress");
  const moreButton = document.getElementById("keys-more");
  if (!more) {
    scan = { filter: document.getElementById("keys-filter").value, cursor: null, scanned: 0, shown: 0 };
    body.replaceChildren();
  }
  moreButton.disabled = true;
  try {
    // A page of up to 100 keys; a filter may take several requests,
    // each reading a slice of the records, the count shown as it goes.
    let wanted = 100;
    do {
      const params = { limit: wanted };
      if (scan.filter) params.filter = scan.filter;
      if (scan.cursor) params.cursor = scan.cursor;
      const page = await api("/api/keys", params);
      for (const { key, value } of page.keys) body.appendChild(row([typeof key === "string" ? key : JSON.stringify(key), tree(value)]));
      scan.cursor = page.cursor;
      scan.scanned += page.scanned;
      scan.shown += page.keys.length;
      wanted -= page.keys.length;
      progress.textContent = `${scan.shown} keys shown; ${scan.scanned} of ${page.total} records scanned${scan.cursor ? "" : " (all)"}`;
    } while (scan.cursor && wanted > 0);
    moreButton.disabled = !scan.cursor;
  } catch (e) { error(progress, e); }
}

async function loadInfo() {
  const table = document.querySelector("#info-table tbody");
  if (table.childElementCount) return;
  try {
    const { location: where, dataset, info } = await api("/api/info");
    document.getElementById("location").textContent = where;
    const flat = (prefix, object) => {
      for (const [k, v] of Object.entries(object)) {
        if (k === "shards" && Array.isArray(v)) continue;
        if (v !== null && typeof v === "object" && !Array.isArray(v)) flat(`${prefix}${k}.`, v);
        else table.appendChild(row([`${prefix}${k}`, Array.isArray(v) ? JSON.stringify(v) : v]));
      }
    };
    flat("", info);
    const chart = document.getElementById("info-chart");
    if (dataset) bars(chart, "bytes per shard", info.shards.map((s, i) => [`shard ${i}`, s.file_bytes || s.bytes || 0]), bytes);
    else if (info.sections) bars(chart, "where the bytes go", Object.entries(info.sections), bytes);
  } catch (e) { error(document.getElementById("info-chart"), e); }
}

let chosen = [];

async function loadHistory() {
  const body = document.querySelector("#history-table tbody");
  if (body.childElementCount) return;
  try {
    const { history, why } = await api("/api/history");
    document.getElementById("history-why").textContent = why || `${history.length} publishes kept, newest (current) first`;
    history.forEach((p) => {
      const box = el("input");
      box.type = "checkbox";
      box.value = p.generation;
      box.checked = chosen.includes(p.generation);
      box.addEventListener("change", () => {
        chosen = chosen.filter(g => g !== p.generation);
        if (box.checked) chosen.push(p.generation);
        document.getElementById("diff-button").disabled = chosen.length !== 2;
      });
      const note = [p.current ? "(current)" : "", p.rollback ? "(rollback)" : "", p.forced ? `(forced past ${p.forced})` : "", p.note || ""].filter(Boolean).join(" ");
      body.appendChild(row([box, p.published_at || "?", p.generation, p.entries, bytes(p.bytes), p.shards, p.tool || "?", note]));
    });
  } catch (e) { error(document.getElementById("history-why"), e); }
}

async function diff() {
  const summaryTarget = document.getElementById("diff-summary");
  const body = document.querySelector("#diff-table tbody");
  body.replaceChildren();
  summaryTarget.replaceChildren(el("p", "comparing..."));
  try {
    const [a, b] = chosen;
    const { summary, lines, shown } = await api("/api/diff", { a, b });
    const types = summary.type_changes.map(t => `${t.keys} ${t.from} to ${t.to}`).join(", ");
    summaryTarget.replaceChildren(el("p",
      `${a} to ${b}: ${summary.added} added, ${summary.removed} removed, ${summary.changed} changed, ${summary.unchanged} unchanged` +
      `${types ? `; value types changed: ${types}` : ""}; ${bytes(summary.bytes_added)} added, ${bytes(summary.bytes_removed)} removed` +
      `${shown < summary.added + summary.removed + summary.changed ? ` (the first ${shown} changes below)` : ""}`));
    shardBars(document.getElementById("diff-chart"), summary.shards);
    summaryTarget.scrollIntoView();
    for (const line of lines) {
      const before = line.op === "added" ? "" : tree(line.op === "changed" ? line.before : line.value);
      const after = line.op === "removed" ? "" : tree(line.op === "changed" ? line.after : line.value);
      body.appendChild(row([line.op, typeof line.key === "string" ? line.key : JSON.stringify(line.key), before, after]));
    }
  } catch (e) { error(summaryTarget, e); }
}

document.addEventListener("DOMContentLoaded", () => {
  for (const b of document.querySelectorAll("nav button")) b.addEventListener("click", () => { history.replaceState(null, "", `${location.search}#${b.dataset.tab}`); show(b.dataset.tab); });
  document.getElementById("lookup-form").addEventListener("submit", lookup);
  document.getElementById("keys-form").addEventListener("submit", e => scanKeys(e));
  document.getElementById("keys-more").addEventListener("click", () => scanKeys(null, true));
  document.getElementById("diff-button").addEventListener("click", diff);
  api("/api/info").then(({ location: where }) => { document.getElementById("location").textContent = where; }).catch(() => {});
  // A fragment opens a tab, and #lookup=KEY, #keys=TEXT and
  // #diff=A,B fill it in: links to what someone was looking at.
  const [tab, arg] = decodeURIComponent(location.hash.slice(1)).split("=", 2);
  if (tab) show(tab);
  if (tab === "lookup" && arg !== undefined) { document.getElementById("lookup-key").value = arg; lookup(new Event("submit")); }
  if (tab === "keys") { document.getElementById("keys-filter").value = arg || ""; scanKeys(null); }
  if (tab === "diff" && arg) {
    chosen = arg.split(",");
    show("history");
    diff();
  }
});
