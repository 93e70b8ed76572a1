/* layerprof web UI.  Plain JavaScript, no libraries: every number comes
 * from the server's JSON API (/api/...), which answers from aggregates;
 * the page asks for one tree level, one flame subtree or one timeline
 * window at a time. */
'use strict';

const $ = (id) => document.getElementById(id);

const state = {
  summary: null,
  live: false,
  view: 'profile',
  sort: { key: 'total', dir: 'desc' },
  generation: -1,
  tree: { thread: null, expanded: new Set() },
  flame: { root: 0, data: null, boxes: [] },
  /* whole: the window is the whole thread (not zoomed or moved since);
   * seen: the thread's newest time when the window was last asked for */
  tl: { thread: null, t0: 0, t1: 0, end: 1, data: null, pending: null, seq: 0, whole: true, seen: 0 },
  heap: { data: null, sort: { key: 'live_bytes', dir: 'desc' } },
};

/* ------------------------------------------------------------ helpers */

function fmtNs(ns) {
  if (ns === undefined || ns === null) return '';
  if (ns < 1000) return ns + ' ns';
  if (ns < 1e6) return (ns / 1e3).toFixed(3) + ' us';
  if (ns < 1e9) return (ns / 1e6).toFixed(3) + ' ms';
  return (ns / 1e9).toFixed(3) + ' s';
}

function fmtCount(n) {
  return Number(n).toLocaleString('en-US');
}

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function td(text, cls) {
  return el('td', cls, text);
}

async function api(path) {
  const r = await fetch('/api/' + path, { credentials: 'same-origin', cache: 'no-store' });
  let body;
  try {
    body = await r.json();
  } catch (e) {
    body = { error: 'bad answer from the server' };
  }
  if (!r.ok) throw new Error(body.error || ('HTTP ' + r.status));
  return body;
}

async function command(cmd, body) {
  const r = await fetch('/api/live/' + cmd, {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'X-Layerprof': '1', 'Content-Type': 'text/plain' },
    body: body || '',
  });
  const j = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(j.error || ('HTTP ' + r.status));
  return j;
}

function showError(e) {
  const line = $('error-line');
  line.textContent = String(e && e.message ? e.message : e);
  line.hidden = false;
  setTimeout(() => { line.hidden = true; }, 6000);
}

function threadLabel(t) {
  let s = t.comm + ' ' + t.tid;
  if (t.pid !== t.tid) s += ' (process ' + t.pid + ')';
  else s += ' (main)';
  if (t.after_exec) s += ' after exec';
  return s + ' — ' + fmtCount(t.calls) + ' calls';
}

/* A stable colour per name: warm for functions, violet for syscalls. */
function colourOf(name, sys) {
  let h = 0;
  for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) | 0;
  h = Math.abs(h);
  if (sys) return 'hsl(' + (270 + h % 30) + ',55%,' + (62 + h % 12) + '%)';
  return 'hsl(' + (h % 55) + ',' + (70 + h % 20) + '%,' + (58 + (h >> 3) % 14) + '%)';
}

/* ------------------------------------------------------------ summary and banners */

async function loadSummary() {
  const s = await api('summary');
  state.summary = s;
  state.live = s.live;
  const box = $('summary');
  box.textContent = '';
  const parts = [
    ['trace', s.live ? 'live session' : s.trace],
    ['events', fmtCount(s.events)],
    ['calls', fmtCount(s.calls)],
    ['functions', fmtCount(s.functions)],
    ['threads', fmtCount(s.threads.length)],
    ['processes', fmtCount(s.processes.length)],
    ['duration', fmtNs(s.duration_ns)],
  ];
  for (const [k, v] of parts) {
    const span = el('span');
    span.append(k + ' ');
    span.append(el('b', null, v));
    span.append('   ');
    box.append(span);
  }
  if (s.command) box.title = s.command;
  setLost(s.lost_events, s.threads);
  const dmg = $('damage-banner');
  if (s.damage) {
    dmg.textContent = 'The trace is damaged: ' + s.damage + '. Everything shown covers the readable part.';
    dmg.hidden = false;
  } else if (!s.live && !s.complete) {
    dmg.textContent = 'The recording was interrupted: the trace has no end record.';
    dmg.hidden = false;
  } else {
    dmg.hidden = true;
  }
  fillThreads($('tree-thread'), s.threads, state.tree);
  fillThreads($('tl-thread'), s.threads, state.tl);
  return s;
}

function setLost(lost, threads) {
  const b = $('lost-banner');
  if (!lost) {
    b.hidden = true;
    return;
  }
  let where = '';
  if (threads) {
    const hit = threads.filter((t) => t.lost_events > 0);
    if (hit.length)
      where = ' (' + hit.slice(0, 6).map((t) => 'thread ' + t.tid + ': ' + fmtCount(t.lost_events)).join(', ') +
        (hit.length > 6 ? ', …' : '') + ')';
  }
  b.textContent = fmtCount(lost) + ' events lost' + where + ': the numbers shown are incomplete.';
  b.hidden = false;
}

function fillThreads(select, threads, holder) {
  const keep = select.value;
  select.textContent = '';
  for (const t of threads) {
    const o = el('option', null, threadLabel(t));
    o.value = String(t.id);
    select.append(o);
  }
  if (keep && threads.some((t) => String(t.id) === keep)) select.value = keep;
  else if (threads.length) {
    /* the busiest thread first */
    let best = threads[0];
    for (const t of threads) if (t.calls > best.calls) best = t;
    select.value = String(best.id);
  }
  if (holder.thread === null && select.value !== '') holder.thread = Number(select.value);
}

/* ------------------------------------------------------------ flat profile */

const PROFILE_ROWS = 5000; /* rows shown; the filter finds the others */

async function loadProfile() {
  const q = encodeURIComponent($('profile-filter').value);
  const p = await api('profile?sort=' + state.sort.key + '&dir=' + state.sort.dir + '&q=' + q + '&limit=' +
    PROFILE_ROWS);
  const body = $('profile-table').tBodies[0];
  body.textContent = '';
  for (const f of p.functions) {
    const tr = el('tr');
    const name = td(f.name, 'text');
    if (f.file) name.title = f.file + ':' + f.line;
    tr.append(name, td(fmtCount(f.calls)), td(fmtNs(f.total_ns)), td(fmtNs(f.self_ns)), td(fmtNs(f.avg_ns)),
      td(fmtNs(f.min_ns)), td(fmtNs(f.max_ns)));
    tr.dataset.calls = String(f.calls);
    body.append(tr);
  }
  $('profile-count').textContent = fmtCount(p.total_rows) + ' functions' +
    (p.total_rows > p.functions.length ? ', the first ' + fmtCount(p.functions.length) + ' shown: filter for others' : '');
  for (const th of $('profile-table').tHead.rows[0].cells) {
    th.classList.remove('sorted', 'asc', 'desc');
    if (th.dataset.key === p.sort) th.classList.add('sorted', p.dir);
  }
}

function setupProfile() {
  for (const th of $('profile-table').tHead.rows[0].cells) {
    th.addEventListener('click', () => {
      const key = th.dataset.key;
      if (state.sort.key === key) state.sort.dir = state.sort.dir === 'desc' ? 'asc' : 'desc';
      else state.sort = { key, dir: key === 'name' ? 'asc' : 'desc' };
      loadProfile().catch(showError);
    });
  }
  let timer = null;
  $('profile-filter').addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(() => loadProfile().catch(showError), 150);
  });
}

/* ------------------------------------------------------------ call tree */

function treeRow(thread, node, depth) {
  const tr = el('tr');
  tr.dataset.id = String(node.id);
  tr.dataset.depth = String(depth);
  tr.dataset.calls = String(node.calls);
  if (node.syscall) tr.classList.add('sys');
  const name = td('', 'text');
  name.style.paddingLeft = (0.4 + depth * 1.1) + 'em';
  const tog = el('span', 'toggle' + (node.children ? '' : ' leaf'), node.children ? '\u25B8' : '\u00B7');
  name.append(tog, (node.syscall ? '[sys] ' : '') + node.name);
  if (node.syscall && node.errors) name.append(el('span', 'err', ' (' + fmtCount(node.errors) + ' failed)'));
  tr.append(name, td(fmtCount(node.calls)), td(fmtNs(node.total_ns)), td(fmtNs(node.self_ns)),
    td(node.syscalls ? fmtCount(node.syscalls) : ''), td(fmtNs(node.min_ns)), td(fmtNs(node.max_ns)));
  if (node.children) {
    tog.addEventListener('click', () => toggleNode(thread, tr).catch(showError));
    name.addEventListener('dblclick', () => toggleNode(thread, tr).catch(showError));
  }
  return tr;
}

/* Rows under tr (deeper than it, up to the next row at its depth). */
function rowsBelow(tr) {
  const depth = Number(tr.dataset.depth);
  const out = [];
  for (let r = tr.nextElementSibling; r && Number(r.dataset.depth) > depth; r = r.nextElementSibling) out.push(r);
  return out;
}

async function expandNode(thread, tr) {
  if (tr.dataset.open === '1') return;
  const id = Number(tr.dataset.id);
  const t = await api('tree?thread=' + thread + '&node=' + id);
  const depth = Number(tr.dataset.depth) + 1;
  let after = tr;
  for (const c of t.children) {
    const row = treeRow(thread, c, depth);
    after.after(row);
    after = row;
  }
  if (t.more) {
    const row = el('tr', 'muted');
    row.dataset.depth = String(depth);
    const c = td('\u2026 ' + fmtCount(t.more) + ' smaller callees not shown (search finds them)', 'text');
    c.colSpan = 7;
    row.append(c);
    after.after(row);
  }
  tr.dataset.open = '1';
  const tog = tr.querySelector('.toggle');
  if (tog) tog.textContent = '\u25BE';
  state.tree.expanded.add(id);
}

function foldNode(tr) {
  for (const r of rowsBelow(tr)) {
    state.tree.expanded.delete(Number(r.dataset.id));
    r.remove();
  }
  tr.dataset.open = '0';
  state.tree.expanded.delete(Number(tr.dataset.id));
  const tog = tr.querySelector('.toggle');
  if (tog) tog.textContent = '\u25B8';
}

async function toggleNode(thread, tr) {
  if (tr.dataset.open === '1') foldNode(tr);
  else await expandNode(thread, tr);
}

/* Loads the thread's tree: the root's children, then every node that was
 * open before (a live refresh keeps what the user opened). */
async function loadTree() {
  const thread = state.tree.thread;
  const body = $('tree-table').tBodies[0];
  if (thread === null) return;
  const t = await api('tree?thread=' + thread + '&node=0');
  const keep = new Set(state.tree.expanded);
  body.textContent = '';
  for (const c of t.children) body.append(treeRow(thread, c, 0));
  state.tree.expanded = new Set();
  for (let tr = body.firstElementChild; tr; tr = tr.nextElementSibling) {
    if (keep.has(Number(tr.dataset.id)) && !tr.querySelector('.toggle.leaf')) await expandNode(thread, tr);
  }
}

/* Opens the path from the root to a node and marks it. */
async function revealNode(thread, path) {
  if (state.tree.thread !== thread) {
    state.tree.thread = thread;
    state.tree.expanded = new Set();
    $('tree-thread').value = String(thread);
    await loadTree();
  }
  const body = $('tree-table').tBodies[0];
  let tr = null;
  for (let i = 0; i < path.length; i++) {
    tr = body.querySelector('tr[data-id="' + path[i] + '"]');
    if (!tr) return;
    if (i + 1 < path.length) await expandNode(thread, tr);
  }
  for (const r of body.querySelectorAll('tr.hit')) r.classList.remove('hit');
  if (tr) {
    tr.classList.add('hit');
    tr.scrollIntoView({ block: 'center' });
  }
}

async function search() {
  const q = $('tree-search').value.trim();
  const list = $('search-results');
  list.textContent = '';
  if (!q) {
    list.hidden = true;
    return;
  }
  const r = await api('search?q=' + encodeURIComponent(q));
  const threads = new Map((state.summary ? state.summary.threads : []).map((t) => [t.id, t]));
  for (const n of r.nodes) {
    const t = threads.get(n.thread);
    const li = el('li', null, n.name + ' — ' + fmtCount(n.calls) + ' calls, ' + fmtNs(n.total_ns) + ' — thread ' +
      (t ? t.tid : n.thread) + ', depth ' + n.path.length);
    li.dataset.thread = String(n.thread);
    li.dataset.id = String(n.id);
    li.addEventListener('click', () => revealNode(n.thread, n.path).catch(showError));
    list.append(li);
  }
  if (!r.nodes.length) list.append(el('li', 'muted', 'no call path matches'));
  if (r.more) list.append(el('li', 'muted', fmtCount(r.more) + ' more not shown'));
  list.hidden = false;
}

function setupTree() {
  $('tree-thread').addEventListener('change', () => {
    state.tree.thread = Number($('tree-thread').value);
    state.tree.expanded = new Set();
    loadTree().catch(showError);
  });
  let timer = null;
  $('tree-search').addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(() => search().catch(showError), 200);
  });
  $('tree-search').addEventListener('keydown', (e) => {
    if (e.key === 'Enter') {
      clearTimeout(timer);
      search().catch(showError);
    }
  });
  $('tree-expand').addEventListener('click', async () => {
    const body = $('tree-table').tBodies[0];
    const closed = [...body.rows].filter((r) => r.dataset.open !== '1' && !r.querySelector('.toggle.leaf'));
    for (const r of closed.slice(0, 200)) await expandNode(state.tree.thread, r).catch(showError);
  });
  $('tree-collapse').addEventListener('click', () => {
    state.tree.expanded = new Set();
    loadTree().catch(showError);
  });
}

/* ------------------------------------------------------------ flame graph */

const FLAME_ROW = 18;

async function loadFlame(root) {
  if (root !== undefined) state.flame.root = root;
  const f = await api('flame?node=' + state.flame.root + '&min=500');
  state.flame.data = f;
  const crumbs = $('flame-path');
  crumbs.textContent = '';
  const chain = f.ancestors.slice().reverse();
  for (const a of chain) {
    const s = el('span', null, (a.id === 0 ? 'all' : a.name) + ' \u203A');
    s.addEventListener('click', () => loadFlame(a.id).catch(showError));
    crumbs.append(s);
  }
  $('flame-info').textContent = fmtNs(f.total_ns) + (f.hidden ? ', ' + fmtCount(f.hidden) + ' narrow paths hidden' : '');
  drawFlame();
}

function drawFlame() {
  const f = state.flame.data;
  const cv = $('flame-canvas');
  if (!f || cv.offsetParent === null) return;
  /* lay the nodes out: children sorted by name, side by side under the parent */
  const byId = new Map();
  for (const n of f.nodes) byId.set(n[0], { id: n[0], parent: n[1], name: n[2], total: n[3], self: n[4], calls: n[5],
    sys: n[6], kids: [] });
  const root = byId.get(f.root);
  for (const n of byId.values()) if (n !== root && byId.has(n.parent)) byId.get(n.parent).kids.push(n);
  let depth = 0;
  const boxes = [];
  const width = cv.clientWidth || 800;
  const scale = root.total ? width / root.total : 0;
  const place = (n, x, d) => {
    depth = Math.max(depth, d);
    boxes.push({ n, x, w: n.total * scale, d });
    let cx = x;
    n.kids.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const k of n.kids) {
      place(k, cx, d + 1);
      cx += k.total * scale;
    }
  };
  place(root, 0, 0);
  const dpr = window.devicePixelRatio || 1;
  const h = (depth + 1) * FLAME_ROW + 2;
  cv.style.height = h + 'px';
  cv.width = Math.round(width * dpr);
  cv.height = Math.round(h * dpr);
  const g = cv.getContext('2d');
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, width, h);
  g.font = '12px system-ui, sans-serif';
  g.textBaseline = 'middle';
  for (const b of boxes) {
    const y = b.d * FLAME_ROW;
    if (b.w < 0.5) continue;
    g.fillStyle = b.n.id === 0 ? '#c9ced6' : colourOf(b.n.name, b.n.sys);
    g.fillRect(b.x, y, Math.max(b.w - 0.5, 0.5), FLAME_ROW - 1);
    if (b.w > 30) {
      g.fillStyle = '#1d2330';
      g.save();
      g.beginPath();
      g.rect(b.x, y, b.w - 2, FLAME_ROW);
      g.clip();
      g.fillText((b.n.sys ? '[sys] ' : '') + b.n.name, b.x + 3, y + FLAME_ROW / 2);
      g.restore();
    }
  }
  state.flame.boxes = boxes;
}

function flameHit(e) {
  const cv = $('flame-canvas');
  const r = cv.getBoundingClientRect();
  const x = e.clientX - r.left;
  const d = Math.floor((e.clientY - r.top) / FLAME_ROW);
  return state.flame.boxes.find((b) => b.d === d && x >= b.x && x < b.x + b.w);
}

function setupFlame() {
  const cv = $('flame-canvas');
  cv.addEventListener('click', (e) => {
    const b = flameHit(e);
    if (b && b.n.id !== state.flame.data.root) loadFlame(b.n.id).catch(showError);
    else if (b && b.n.parent !== undefined && b.n.id !== 0) loadFlame(b.n.parent).catch(showError);
  });
  cv.addEventListener('mousemove', (e) => {
    const b = flameHit(e);
    const tip = $('flame-tip');
    if (!b) {
      tip.hidden = true;
      return;
    }
    const f = state.flame.data;
    tip.textContent = (b.n.sys ? '[sys] ' : '') + b.n.name + '\n' + fmtNs(b.n.total) + ' (' +
      (100 * b.n.total / (f.total_ns || 1)).toFixed(1) + '%), self ' + fmtNs(b.n.self) + ', ' + fmtCount(b.n.calls) +
      ' calls';
    tip.style.left = (e.clientX + 12) + 'px';
    tip.style.top = (e.clientY + 12) + 'px';
    tip.hidden = false;
  });
  cv.addEventListener('mouseleave', () => { $('flame-tip').hidden = true; });
  $('flame-reset').addEventListener('click', () => loadFlame(0).catch(showError));
}

/* ------------------------------------------------------------ timeline */

const TL_ROW = 16;
const TL_AXIS = 22;

function tlThread() {
  return (state.summary ? state.summary.threads : []).find((t) => t.id === state.tl.thread);
}

function tlResetWindow() {
  const t = tlThread();
  if (!t) return;
  const pad = Math.max(1, Math.round((t.last_ns - t.first_ns) * 0.01));
  state.tl.t0 = Math.max(0, t.first_ns - pad);
  state.tl.t1 = t.last_ns + pad + 1;
  state.tl.whole = true;
}

/* A live session's update: the thread has grown.  The whole-thread view
 * stays whole; a view that reaches the newest time moves on with it at the
 * same zoom, like a recorder's paper; any other view stays where the user
 * put it. */
function tlFollow() {
  const t = tlThread();
  if (!t) return;
  const span = state.tl.t1 - state.tl.t0;
  if (state.tl.whole || span <= 0) {
    tlResetWindow();
  } else if (state.tl.t1 >= state.tl.seen - span * 0.02 && t.last_ns > state.tl.seen) {
    const dt = t.last_ns - state.tl.seen;
    state.tl.t0 += dt;
    state.tl.t1 += dt;
  }
}

async function tlLiveUpdate() {
  tlFollow();
  await loadTimeline();
}

async function loadTimeline() {
  if (state.tl.thread === null) return;
  if (state.tl.t1 <= state.tl.t0) tlResetWindow();
  const cv = $('timeline-canvas');
  const px = Math.max(100, Math.min(4000, Math.round(cv.clientWidth || 1000)));
  const t0 = Math.floor(state.tl.t0);
  const t1 = Math.ceil(state.tl.t1);
  const seq = ++state.tl.seq;
  const thread = tlThread();
  if (thread) state.tl.seen = thread.last_ns;
  const d = await api('timeline?thread=' + state.tl.thread + '&t0=' + t0 + '&t1=' + t1 + '&px=' + px);
  if (seq !== state.tl.seq) return; /* a newer window was asked for */
  state.tl.data = d;
  $('tl-status').textContent = fmtNs(t0) + ' \u2013 ' + fmtNs(t1) + ' (' + fmtNs(t1 - t0) + ' shown), ' +
    (d.mode === 'exact' ? 'every call' : 'merged, zoom in for every call') + ', ' + fmtCount(d.spans.length) +
    ' spans' + (d.lost.length ? ', losses marked in red' : '') + (d.running ? ', the thread runs on' : '');
  $('tl-status').dataset.mode = d.mode;
  $('tl-status').dataset.spans = String(d.spans.length);
  $('tl-status').dataset.t0 = String(t0);
  $('tl-status').dataset.t1 = String(t1);
  drawTimeline();
}

let tlTimer = null;
function tlSchedule() {
  drawTimeline();
  clearTimeout(tlTimer);
  tlTimer = setTimeout(() => loadTimeline().catch(showError), 120);
}

function drawTimeline() {
  const d = state.tl.data;
  const cv = $('timeline-canvas');
  if (cv.offsetParent === null) return;
  const width = cv.clientWidth || 1000;
  const depth = d ? Math.min(Math.max(d.max_depth, 1), 60) : 1;
  const h = TL_AXIS + depth * TL_ROW + 8;
  const dpr = window.devicePixelRatio || 1;
  cv.style.height = h + 'px';
  cv.width = Math.round(width * dpr);
  cv.height = Math.round(h * dpr);
  const g = cv.getContext('2d');
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, width, h);
  const t0 = state.tl.t0;
  const scale = width / (state.tl.t1 - state.tl.t0);
  /* the axis */
  g.fillStyle = '#69707d';
  g.font = '11px system-ui, sans-serif';
  g.textBaseline = 'middle';
  const span = state.tl.t1 - state.tl.t0;
  const step = Math.pow(10, Math.floor(Math.log10(span / 6 || 1)));
  const tick = span / step > 30 ? step * 5 : span / step > 12 ? step * 2 : step;
  for (let t = Math.ceil(t0 / tick) * tick; t < state.tl.t1; t += tick) {
    const x = (t - t0) * scale;
    g.fillRect(x, TL_AXIS - 6, 1, 6);
    g.fillText(fmtNs(t), x + 3, 8);
  }
  if (!d) return;
  const names = d.names;
  state.tl.boxes = [];
  for (const s of d.spans) {
    const [dep, a, b, nameId, calls, flags, fill] = s;
    if (dep >= depth) continue;
    const x = (a - t0) * scale;
    const w = Math.max((b - a) * scale, 1);
    if (x > width || x + w < 0) continue;
    const y = TL_AXIS + dep * TL_ROW;
    const name = names[nameId] || '?';
    g.globalAlpha = flags & 2 ? Math.max(0.25, fill / 1000) : 1;
    g.fillStyle = colourOf(name, flags & 1);
    g.fillRect(x, y, w, TL_ROW - 1);
    g.globalAlpha = 1;
    if (w > 40) {
      g.save();
      g.beginPath();
      g.rect(Math.max(x, 0), y, Math.min(w, width) - 2, TL_ROW);
      g.clip();
      g.fillStyle = '#1d2330';
      const label = (flags & 1 ? '[sys] ' : '') + name + (calls > 1 ? ' \u00D7' + fmtCount(calls) : '');
      g.fillText(label, Math.max(x, 0) + 3, y + TL_ROW / 2);
      g.restore();
    }
    state.tl.boxes.push({ x, w, y, s, name });
  }
  g.fillStyle = '#d1242f';
  for (const [t, n] of d.lost) {
    const x = (t - t0) * scale;
    g.fillRect(x - 1, TL_AXIS, 2, depth * TL_ROW);
    state.tl.boxes.push({ x: x - 2, w: 4, y: TL_AXIS, lost: n, t, h: depth * TL_ROW });
  }
}

function tlZoom(factor, at) {
  const span = state.tl.t1 - state.tl.t0;
  const centre = at === undefined ? state.tl.t0 + span / 2 : at;
  const ns = Math.max(span * factor, 100);
  const frac = (centre - state.tl.t0) / span;
  state.tl.t0 = Math.max(0, centre - ns * frac);
  state.tl.t1 = state.tl.t0 + ns;
  state.tl.whole = false;
  tlSchedule();
}

function setupTimeline() {
  const cv = $('timeline-canvas');
  $('tl-thread').addEventListener('change', () => {
    state.tl.thread = Number($('tl-thread').value);
    tlResetWindow();
    loadTimeline().catch(showError);
  });
  $('tl-zoom-in').addEventListener('click', () => tlZoom(0.25));
  $('tl-zoom-out').addEventListener('click', () => tlZoom(4));
  $('tl-reset').addEventListener('click', () => {
    tlResetWindow();
    loadTimeline().catch(showError);
  });
  cv.addEventListener('wheel', (e) => {
    e.preventDefault();
    const r = cv.getBoundingClientRect();
    const at = state.tl.t0 + (e.clientX - r.left) / r.width * (state.tl.t1 - state.tl.t0);
    tlZoom(e.deltaY < 0 ? 0.7 : 1 / 0.7, at);
  }, { passive: false });
  let drag = null;
  cv.addEventListener('mousedown', (e) => { drag = { x: e.clientX, t0: state.tl.t0, t1: state.tl.t1 }; });
  window.addEventListener('mouseup', () => { drag = null; });
  cv.addEventListener('mousemove', (e) => {
    const r = cv.getBoundingClientRect();
    if (drag) {
      const dt = (e.clientX - drag.x) / r.width * (drag.t1 - drag.t0);
      const t0 = Math.max(0, drag.t0 - dt);
      state.tl.t0 = t0;
      state.tl.t1 = t0 + (drag.t1 - drag.t0);
      state.tl.whole = false;
      tlSchedule();
      return;
    }
    const x = e.clientX - r.left;
    const y = e.clientY - r.top;
    const tip = $('tl-tip');
    const b = (state.tl.boxes || []).find((q) => x >= q.x && x < q.x + q.w && y >= q.y &&
      y < q.y + (q.h || TL_ROW));
    if (!b) {
      tip.hidden = true;
      return;
    }
    if (b.lost) {
      tip.textContent = fmtCount(b.lost) + ' events lost here (' + fmtNs(b.t) + ')';
    } else {
      const [, a, e2, , calls, flags, fill] = b.s;
      tip.textContent = (flags & 1 ? '[sys] ' : '') + b.name + '\n' + fmtNs(a) + ' \u2013 ' + fmtNs(e2) + ' (' +
        fmtNs(e2 - a) + ')' + (calls > 1 ? '\n' + fmtCount(calls) + ' calls merged, ' + (fill / 10).toFixed(1) +
          '% busy' : '') + (flags & 4 ? '\ngoes on after the window' : '') + (flags & 8 ? '\nunfinished' : '');
    }
    tip.style.left = (e.clientX + 12) + 'px';
    tip.style.top = (e.clientY + 12) + 'px';
    tip.hidden = false;
  });
  cv.addEventListener('mouseleave', () => { $('tl-tip').hidden = true; });
}

/* ------------------------------------------------------------ system calls */

async function loadSyscalls() {
  const s = await api('syscalls');
  const body = $('syscall-table').tBodies[0];
  body.textContent = '';
  for (const r of s.syscalls) {
    const tr = el('tr');
    tr.append(td(r.name, 'text'), td(fmtCount(r.calls)), td(fmtCount(r.errors)), td(fmtNs(r.total_ns)),
      td(fmtNs(r.avg_ns)), td(fmtNs(r.max_ns)), td(fmtNs(r.p50_ns)), td(fmtNs(r.p99_ns)));
    body.append(tr);
  }
  if (!s.syscalls.length) {
    const tr = el('tr');
    const c = td('No system calls in this trace (record with --syscalls).', 'text muted');
    c.colSpan = 8;
    tr.append(c);
    body.append(tr);
  }
  const fb = $('syscall-fn-table').tBodies[0];
  fb.textContent = '';
  for (const r of s.by_function) {
    const tr = el('tr');
    tr.append(td(r.function, 'text'), td(r.syscall, 'text'), td(fmtCount(r.calls)), td(fmtCount(r.errors)),
      td(fmtNs(r.total_ns)));
    fb.append(tr);
  }
}

/* ------------------------------------------------------------ heap */

const SVG_NS = 'http://www.w3.org/2000/svg';
const CHART = { w: 800, h: 220, left: 64, right: 12, top: 14, bottom: 28 };

function svg(tag, attrs, text) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const k in attrs) e.setAttribute(k, String(attrs[k]));
  if (text !== undefined) e.textContent = text;
  return e;
}

function fmtBytes(n) {
  if (n < 1024) return n + ' B';
  if (n < 1048576) return (n / 1024).toFixed(1) + ' KiB';
  if (n < 1073741824) return (n / 1048576).toFixed(1) + ' MiB';
  return (n / 1073741824).toFixed(2) + ' GiB';
}

function growthText(c) {
  if (!c.growing) return '-';
  return '+' + fmtBytes(Math.round(c.growth_bytes_per_s)) + '/s (' + (100 * c.growth_confidence).toFixed(1) + '%)';
}

/* Live bytes over time: an SVG polyline over the server's points. */
function drawGrowth(g) {
  const box = $('heap-chart');
  box.textContent = '';
  const root = svg('svg', { viewBox: '0 0 ' + CHART.w + ' ' + CHART.h, role: 'img', id: 'heap-growth-svg' });
  root.setAttribute('aria-label', 'live bytes over time');
  const pts = g.points;
  const x0 = CHART.left, x1 = CHART.w - CHART.right, y0 = CHART.h - CHART.bottom, y1 = CHART.top;
  let tmax = 1, vmax = 1;
  for (const [t, v] of pts) {
    tmax = Math.max(tmax, t);
    vmax = Math.max(vmax, v);
  }
  const X = (t) => x0 + (x1 - x0) * t / tmax, Y = (v) => y0 - (y0 - y1) * v / vmax;
  root.append(svg('line', { x1: x0, y1: y0, x2: x1, y2: y0, stroke: '#999' }));
  root.append(svg('line', { x1: x0, y1: y0, x2: x0, y2: y1, stroke: '#999' }));
  root.append(svg('text', { x: x0 - 4, y: y1 + 8, 'text-anchor': 'end' }, fmtBytes(vmax)));
  root.append(svg('text', { x: x0 - 4, y: y0, 'text-anchor': 'end' }, '0'));
  root.append(svg('text', { x: x1, y: CHART.h - 8, 'text-anchor': 'end' }, fmtNs(tmax)));
  root.append(svg('text', { x: x0, y: CHART.h - 8 }, '0'));
  if (pts.length) {
    root.append(svg('polyline', { points: pts.map(([t, v]) => X(t).toFixed(1) + ',' + Y(v).toFixed(1)).join(' ') }));
    for (const [t, v] of pts) {
      const c = svg('circle', { cx: X(t).toFixed(1), cy: Y(v).toFixed(1), r: 2.5, class: 'heap-point' });
      c.dataset.t = String(t);
      c.dataset.bytes = String(v);
      c.append(svg('title', {}, fmtNs(t) + ': ' + fmtCount(v) + ' bytes'));
      root.append(c);
    }
  }
  box.append(root);
  $('heap-growth-info').textContent = pts.length + ' samples, one every ' + fmtNs(g.interval_ns);
}

async function loadGrowth() {
  const site = $('heap-series').value;
  const g = await api('heap/growth?points=' + 64 + (site === '' ? '' : '&site=' + site));
  drawGrowth(g);
  for (const tr of $('heap-site-table').tBodies[0].rows) tr.classList.toggle('picked', tr.dataset.site === site);
}

function stackList(stack) {
  const ol = el('ol');
  ol.start = 0;
  for (const f of stack) {
    const li = el('li', null, f.name + (f.file ? ' (' + f.file + ':' + f.line + ')' : ''));
    ol.append(li);
  }
  if (!stack.length) ol.append(el('li', 'muted', '(no stack)'));
  return ol;
}

function siteText(x) {
  return x.call_site + (x.file ? ' (' + x.file + ':' + x.line + ')' : '');
}

function heapSiteRows() {
  const h = state.heap.data;
  const { key, dir } = state.heap.sort;
  const rows = h.sites.map((s, i) => Object.assign({ _id: i }, s));
  rows.sort((a, b) => {
    const x = a[key], y = b[key];
    const c = typeof x === 'string' ? x.localeCompare(y) : x - y;
    return (dir === 'asc' ? c : -c) || a._id - b._id;
  });
  const body = $('heap-site-table').tBodies[0];
  body.textContent = '';
  for (const s of rows) {
    const tr = el('tr');
    tr.dataset.site = String(s._id);
    tr.dataset.function = s.function;
    const site = td(s.call_site, 'text');
    if (s.file) site.title = s.file + ':' + s.line;
    tr.append(td(s.function, 'text'), site, td(fmtCount(s.live_objects)), td(fmtCount(s.live_bytes)),
      td(fmtCount(s.peak_bytes)), td(fmtCount(s.allocs)), td(fmtCount(s.frees)), td(fmtCount(s.unfreed_objects)),
      td(growthText(s), s.growing ? 'grow' : ''));
    tr.addEventListener('click', () => {
      const sel = $('heap-series');
      sel.value = s._id < sel.options.length - 1 ? String(s._id) : '';
      loadGrowth().catch(showError);
    });
    body.append(tr);
  }
  for (const th of $('heap-site-table').tHead.rows[0].cells) {
    th.classList.remove('sorted', 'asc', 'desc');
    if (th.dataset.key === key) th.classList.add('sorted', dir);
  }
}

function heapLists(h) {
  const il = $('heap-illegal');
  il.textContent = '';
  for (const x of h.illegal) {
    const li = el('li');
    li.dataset.kind = x.kind;
    li.append(el('b', null, x.kind.replace(/_/g, ' ')), ': ' + x.operation + '(' + x.ptr + ') in ' + x.function +
      ', process ' + x.pid + ' thread ' + x.tid + (x.count > 1 ? ' (' + x.count + ' times)' : '') +
      (x.kept ? ' [kept from libc]' : '') + (x.after_loss ? ' [after lost events]' : ''));
    li.append(el('div', null, 'released at ' + siteText(x) + ':'), stackList(x.stack));
    if (x.first_release) {
      const f = x.first_release;
      li.append(el('div', null, 'already released by ' + f.operation + ' at ' + siteText(f) + ', thread ' + f.tid + ':'),
        stackList(f.stack));
    }
    if (x.block) {
      const b = x.block;
      li.append(el('div', null, 'allocated by ' + b.operation + '(' + b.size + ') = ' + b.ptr + ' at ' + siteText(b) + ':'),
        stackList(b.stack));
    }
    il.append(li);
  }
  if (!h.illegal.length) il.append(el('li', 'muted', 'none'));
  const ov = $('heap-overlaps');
  ov.textContent = '';
  for (const x of h.overlaps) {
    const li = el('li');
    li.append(el('b', null, x.operation + '(' + x.size + ') = ' + x.ptr), ' at ' + siteText(x) + ', process ' + x.pid +
      ' thread ' + x.tid + (x.after_loss ? ' [after lost events]' : ''), stackList(x.stack));
    const b = x.live_block;
    li.append(el('div', null, 'overlaps the live block ' + b.ptr + ' (' + b.size + ' bytes) from ' + b.operation + ' at ' +
      siteText(b) + ':'), stackList(b.stack));
    ov.append(li);
  }
  if (!h.overlaps.length) ov.append(el('li', 'muted', 'none'));
}

function heapTables(h) {
  heapSiteRows();
  const fb = $('heap-fn-table').tBodies[0];
  fb.textContent = '';
  for (const f of h.functions) {
    const tr = el('tr');
    tr.append(td(f.function, 'text'), td(fmtCount(f.live_objects)), td(fmtCount(f.live_bytes)), td(fmtCount(f.peak_bytes)),
      td(fmtCount(f.allocs)), td(fmtCount(f.frees)), td(fmtCount(f.unfreed_objects)), td(growthText(f), f.growing ? 'grow' : ''));
    fb.append(tr);
  }
  const t = h.totals;
  $('heap-totals').textContent = fmtCount(t.allocs) + ' allocations, ' + fmtCount(t.frees) + ' releases, ' +
    fmtCount(t.live_objects) + ' live blocks (' + fmtCount(t.live_bytes) + ' bytes), peak ' + fmtCount(t.peak_bytes) +
    ' bytes at ' + fmtNs(t.peak_ns - h.first_ns) + '; ' + fmtCount(t.illegal) + ' illegal releases, ' +
    fmtCount(t.overlaps) + ' overlaps';
  const notes = $('heap-notes');
  notes.textContent = '';
  if (t.unfreed_objects) notes.append(el('li', null, 'unfreed at exit: ' + fmtCount(t.unfreed_objects) + ' blocks, ' +
    fmtCount(t.unfreed_bytes) + ' bytes'));
  if (t.folded) notes.append(el('li', null, 'folded: ' + fmtCount(t.folded) + ' short-lived blocks (' +
    fmtCount(t.folded_bytes) + ' bytes), counted in allocs and frees, not one by one'));
  if (h.lost_events) notes.append(el('li', null, fmtCount(h.lost_events) + ' events lost: missed releases read as live ' +
    'blocks, missed allocations as illegal releases'));
  if (t.out_of_memory) notes.append(el('li', null, 'out of memory: the heap state is incomplete'));
}

async function loadHeap() {
  if (!state.heap.data || state.live) {
    const h = await api('heap');
    if (!h.heap) {
      $('heap-empty').textContent = h.reason;
      $('heap-empty').hidden = false;
      $('heap-body').hidden = true;
      return;
    }
    /* a live session's sites move as they grow: the chosen series follows its site */
    const sel = $('heap-series');
    const old = state.heap.data && sel.value !== '' ? state.heap.data.sites[Number(sel.value)] : null;
    state.heap.data = h;
    sel.length = 1;
    h.sites.forEach((s, i) => {
      const o = el('option', null, s.function + ' — ' + s.call_site);
      o.value = String(i);
      sel.append(o);
    });
    const again = old ? h.sites.findIndex((s) => s.call_site === old.call_site) : -1;
    sel.value = again >= 0 ? String(again) : '';
  }
  $('heap-empty').hidden = true;
  $('heap-body').hidden = false;
  heapTables(state.heap.data);
  heapLists(state.heap.data);
  await loadGrowth();
}

function setupHeap() {
  for (const th of $('heap-site-table').tHead.rows[0].cells) {
    th.addEventListener('click', () => {
      const key = th.dataset.key;
      const text = key === 'function' || key === 'call_site';
      if (state.heap.sort.key === key) state.heap.sort.dir = state.heap.sort.dir === 'desc' ? 'asc' : 'desc';
      else state.heap.sort = { key, dir: text ? 'asc' : 'desc' };
      if (state.heap.data) heapSiteRows();
    });
  }
  $('heap-series').addEventListener('change', () => loadGrowth().catch(showError));
}

/* ------------------------------------------------------------ exports */

/* on: exports are possible (a trace file, or a live session's kept trace
 * directory); heap: the trace has heap operations. */
function setupExports(on, heap) {
  for (const a of $('export-bar').querySelectorAll('a[data-format]')) {
    if (on) {
      a.href = '/api/export?format=' + a.dataset.format;
      a.classList.remove('off');
      a.removeAttribute('title');
    } else {
      a.removeAttribute('href');
      a.classList.add('off');
      a.title = 'nothing to export yet: the session has not begun';
    }
  }
  $('export-memory').hidden = !(on && heap);
  $('export-note').textContent = on ? '' : '(when the session has begun)';
}

/* POST /api/live/snapshot: the heap state now, saved as the file the
 * server names. */
async function takeSnapshot() {
  const r = await fetch('/api/live/snapshot', {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'X-Layerprof': '1', 'Content-Type': 'text/plain' },
    body: '',
  });
  if (!r.ok) {
    const j = await r.json().catch(() => ({}));
    throw new Error(j.error || ('HTTP ' + r.status));
  }
  const disp = r.headers.get('Content-Disposition') || '';
  const m = /filename="([^"]+)"/.exec(disp);
  const url = URL.createObjectURL(await r.blob());
  const a = el('a');
  a.href = url;
  a.download = m ? m[1] : 'heap.snapshot';
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60000);
}

/* ------------------------------------------------------------ views */

const loaders = {
  profile: loadProfile,
  tree: loadTree,
  flame: () => loadFlame(),
  timeline: loadTimeline,
  syscalls: loadSyscalls,
  heap: loadHeap,
};

function showView(name) {
  state.view = name;
  for (const b of $('tabs').querySelectorAll('button')) b.classList.toggle('active', b.dataset.view === name);
  for (const v of document.querySelectorAll('main > .view')) v.hidden = v.id !== 'view-' + name;
  return loaders[name]().catch(showError);
}

/* ------------------------------------------------------------ the live session */

function setLiveControls(live) {
  const ids = ['btn-start', 'btn-stop', 'period-select', 'filter-input', 'btn-filter', 'btn-filter-clear',
    'target-argv', 'btn-launch', 'target-pid-pick', 'target-pid', 'btn-attach'];
  for (const id of ids) $(id).disabled = !live;
}

async function loadLive() {
  const s = await api('live');
  const st = $('live-state');
  st.textContent = s.state + (s.state === 'running' ? (s.tracing ? ', tracing' : ', tracing off') : '');
  st.className = 'state ' + (s.state === 'running' ? (s.tracing ? 'running' : 'off') : '');
  $('live-events').textContent = fmtCount(s.events) + ' events' + (s.pid ? ', process ' + s.pid : '') +
    (s.saving ? ', saving to ' + s.saving : '');
  $('live-filters').textContent = s.filters ? 'in force: ' + s.filters : (s.filtered ? 'filtered earlier' : '');
  const idle = s.state === 'idle';
  for (const id of ['target-argv', 'btn-launch', 'target-pid-pick', 'target-pid', 'btn-attach']) $(id).disabled = !idle;
  $('btn-start').disabled = s.state !== 'running' || s.tracing;
  $('btn-stop').disabled = s.state !== 'running' || !s.tracing;
  $('btn-snapshot').hidden = !s.memory;
  $('btn-snapshot').disabled = !s.memory || idle;
  setupExports(s.exports, s.memory);
  if (!idle && s.argv.length) $('target-argv').value = s.argv.join(' ');
  if (s.attach) $('target-pid').value = String(s.attach);
  const pick = $('target-pid-pick');
  if (pick.options.length !== s.agent_sessions.length + 1) {
    pick.textContent = '';
    pick.append(el('option', null, 'process…'));
    for (const a of s.agent_sessions) {
      const o = el('option', null, 'pid ' + a.pid + (a.running ? '' : ' (exited)'));
      o.value = String(a.pid);
      pick.append(o);
    }
  }
  const per = (s.interval_ms / 1000) + 's';
  for (const o of $('period-select').options) if (o.value === per || o.value === s.interval_ms + 'ms') o.selected = true;
  const notes = $('live-notes');
  notes.textContent = '';
  for (const n of s.notes.slice(-5)) notes.append(el('li', null, n));
  setLost(s.lost_events, state.summary ? state.summary.threads : null);
  return s;
}

async function liveCommand(cmd, body) {
  try {
    await command(cmd, body);
  } catch (e) {
    showError(e);
  }
  await loadLive().catch(showError);
}

function setupLive() {
  $('btn-start').addEventListener('click', () => liveCommand('start'));
  $('btn-stop').addEventListener('click', () => liveCommand('stop'));
  $('btn-snapshot').addEventListener('click', () => takeSnapshot().then(() => loadLive()).catch(showError));
  $('btn-filter').addEventListener('click', () => liveCommand('filter', $('filter-input').value));
  $('btn-filter-clear').addEventListener('click', () => {
    $('filter-input').value = '';
    liveCommand('filter', 'clear');
  });
  $('period-select').addEventListener('change', () => liveCommand('period', $('period-select').value));
  $('btn-launch').addEventListener('click', () => {
    const words = $('target-argv').value.trim().split(/\s+/).filter((w) => w);
    liveCommand('launch', words.join('\n'));
  });
  $('target-pid-pick').addEventListener('change', () => { $('target-pid').value = $('target-pid-pick').value; });
  $('btn-attach').addEventListener('click', () => liveCommand('attach', $('target-pid').value.trim()));
  $('filter-input').addEventListener('keydown', (e) => {
    if (e.key === 'Enter') $('btn-filter').click();
  });
}

/* An update pushed by the server: reload what is shown. */
let refreshing = false;
async function onUpdate(u) {
  if (refreshing) return;
  refreshing = true;
  try {
    await loadLive();
    if (u.generation !== state.generation) {
      state.generation = u.generation;
      await loadSummary();
      if (state.view === 'timeline') await tlLiveUpdate();
      else await loaders[state.view]();
    }
  } catch (e) {
    showError(e);
  } finally {
    refreshing = false;
  }
}

function startEvents() {
  const es = new EventSource('/api/events');
  es.addEventListener('update', (e) => {
    let u = {};
    try {
      u = JSON.parse(e.data);
    } catch (err) {
      return;
    }
    onUpdate(u);
  });
}

/* ------------------------------------------------------------ start */

async function main() {
  setupProfile();
  setupTree();
  setupFlame();
  setupTimeline();
  setupLive();
  setupHeap();
  for (const b of $('tabs').querySelectorAll('button')) b.addEventListener('click', () => showView(b.dataset.view));
  window.addEventListener('resize', () => {
    if (state.view === 'flame') drawFlame();
    if (state.view === 'timeline') tlSchedule();
  });
  try {
    const s = await loadSummary();
    setLiveControls(s.live);
    setupExports(s.exports, s.heap);
    if (s.live) {
      $('target-row').hidden = false;
      await loadLive();
      startEvents();
    } else {
      $('target-row').hidden = true;
    }
    await showView('profile');
    document.body.dataset.ready = '1';
  } catch (e) {
    showError(e);
    $('summary').textContent = 'cannot load: ' + e.message;
  }
}

main();
