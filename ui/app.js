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
  /* whole: the window is the whole thread (not zoomed or moved since);
   * seen: the thread's newest time when the window was last asked for */
  tl: { thread: null, t0: 0, t1: 0, end: 1, data: null, pending: null, seq: 0, whole: true, seen: 0 },
  heap: { data: null, sort: { key: 'live_bytes', dir: 'desc' } },
  kernel: false,
  kt: { data: null, boxes: [] },
  sync: false,
  sy: { data: null, boxes: [] },
  layers: { data: null, kernel: null, gen: -1, sort: { key: 'total_ns', dir: 'desc' },
    tsort: { key: 'total_ns', dir: 'desc' } },
  flow: { func: '', tid: 0, n: 1, calls: null, data: null, names: false },
  pick: null,
  /* promise, data: GET /api/coverage; never: caller -> static callees that
   * never ran from it; counted: the names coverage counts; treeNever: the
   * call tree shows those callees */
  cov: { promise: null, data: null, never: null, counted: null, shown: false, treeNever: false },
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

/* A stable colour per name: warm for functions, violet for syscalls, green
 * for kernel events, grey-blue for sync waits. */
function colourOf(name, sys, kernel, sync) {
  let h = 0;
  for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) | 0;
  h = Math.abs(h);
  if (sys) return 'hsl(' + (270 + h % 30) + ',55%,' + (62 + h % 12) + '%)';
  if (kernel) return 'hsl(' + (120 + h % 30) + ',40%,' + (62 + h % 12) + '%)';
  if (sync) return 'hsl(' + (205 + h % 20) + ',25%,' + (64 + h % 12) + '%)';
  return 'hsl(' + (h % 55) + ',' + (70 + h % 20) + '%,' + (58 + (h >> 3) % 14) + '%)';
}

/* What a call tree leaf's name is shown after: a system call's, a kernel
 * event's, a sync wait's (record --sync), or nothing (a function). */
function leafPrefix(sys, kernel, sync) {
  return sys ? '[sys] ' : kernel ? '[kernel] ' : sync ? '[wait] ' : '';
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
  setKernel(s);
  setSync(s);
  return s;
}

/* The sync tracks: shown only for a trace recorded with --sync. */
function setSync(s) {
  state.sync = !!s.sync;
  $('sy-box').hidden = !state.sync;
  if (!state.sync) state.sy.data = null;
}

/* The kernel views: greyed, saying why, without kernel events. */
function setKernel(s) {
  state.kernel = !!s.kernel;
  const why = s.live ? 'no kernel events in this session (serve --connect --kernel)' :
    'no kernel events in this trace (record with --kernel)';
  for (const b of $('tabs').querySelectorAll('button[data-kernel]')) {
    b.classList.toggle('dim', !state.kernel);
    if (state.kernel) b.removeAttribute('title');
    else b.title = why;
  }
  $('kt-empty').textContent = 'No kernel tracks: ' + why + '.';
  $('kt-empty').hidden = state.kernel;
  $('ktrack-canvas').hidden = !state.kernel;
  $('kt-legend').hidden = !state.kernel;
  if (!state.kernel) state.kt.data = null;
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
    tr.dataset.name = f.name;
    tr.addEventListener('click', () => pickRow('profile', tr, { name: f.name }));
    tr.addEventListener('dblclick', () => openFlow(f.name, 0));
    body.append(tr);
  }
  $('profile-flow').disabled = true;
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
  tr.dataset.name = node.name;
  if (node.syscall) tr.classList.add('sys');
  if (node.kernel) tr.classList.add('kern');
  if (node.sync) tr.classList.add('sync');
  const name = td('', 'text');
  name.style.paddingLeft = (0.4 + depth * 1.1) + 'em';
  const never = treeNeverCallees(node);
  if (never.length) tr.dataset.never = '1';
  const open = node.children || never.length;
  const tog = el('span', 'toggle' + (open ? '' : ' leaf'), open ? '\u25B8' : '\u00B7');
  name.append(tog, leafPrefix(node.syscall, node.kernel, node.sync) + node.name);
  if (node.syscall && node.errors) name.append(el('span', 'err', ' (' + fmtCount(node.errors) + ' failed)'));
  tr.append(name, td(fmtCount(node.calls)), td(fmtNs(node.total_ns)), td(fmtNs(node.self_ns)),
    td(node.syscalls ? fmtCount(node.syscalls) : ''), td(fmtNs(node.min_ns)), td(fmtNs(node.max_ns)));
  tr.addEventListener('click', () => {
    const t = (state.summary ? state.summary.threads : []).find((x) => x.id === thread);
    pickRow('tree', tr, { name: node.name, tid: t ? t.tid : 0, leaf: !!(node.syscall || node.kernel || node.sync) });
  });
  if (open) {
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
    after = row;
  }
  if (tr.dataset.never === '1') {
    for (const callee of treeNeverCallees({ name: tr.dataset.name })) {
      const row = treeNeverRow(tr.dataset.name, callee, depth);
      after.after(row);
      after = row;
    }
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

/* ------------------------------------------------------------ flame graphs */

const FLAME_ROW = 18;
const FLAME_LIST_MAX = 400; /* frames named in the list beside the canvas */

/* A flame graph view: every thread's calls (/api/flame), or the time off
 * the CPU per call path (/api/offcpu_flame); the same drawing, zoom and
 * tip.  ids: the canvas, tip, crumbs, info and reset elements; unit: what
 * a frame's count counts. */
function flameView(ids) {
  const v = { root: 0, data: null, boxes: [] };

  v.load = async (root) => {
    if (root !== undefined) v.root = root;
    const f = await api(ids.api + '?node=' + v.root + '&min=500');
    v.data = f;
    const crumbs = $(ids.path);
    crumbs.textContent = '';
    const chain = f.ancestors.slice().reverse();
    for (const a of chain) {
      const s = el('span', null, (a.id === 0 ? 'all' : a.name) + ' \u203A');
      s.addEventListener('click', () => v.load(a.id).catch(showError));
      crumbs.append(s);
    }
    $(ids.info).textContent = ids.info_text(f);
    v.draw();
  };

  v.draw = () => {
    const f = v.data;
    const cv = $(ids.canvas);
    if (!f || cv.offsetParent === null) return;
    /* lay the nodes out: children sorted by name, side by side under the parent */
    const byId = new Map();
    for (const n of f.nodes) byId.set(n[0], { id: n[0], parent: n[1], name: n[2], total: n[3], self: n[4],
      calls: n[5], sys: n[6], kernel: n[7], sync: n[8], kids: [] });
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
      g.fillStyle = b.n.id === 0 ? '#c9ced6' : ids.colour(b.n);
      g.fillRect(b.x, y, Math.max(b.w - 0.5, 0.5), FLAME_ROW - 1);
      if (b.w > 30) {
        g.fillStyle = '#1d2330';
        g.save();
        g.beginPath();
        g.rect(b.x, y, b.w - 2, FLAME_ROW);
        g.clip();
        g.fillText(leafPrefix(b.n.sys, b.n.kernel, b.n.sync) + b.n.name, b.x + 3, y + FLAME_ROW / 2);
        g.restore();
      }
    }
    v.boxes = boxes;
    /* the frames in words too (for screen readers), the widest first */
    if (ids.list) {
      const list = $(ids.list);
      list.textContent = '';
      for (const b of boxes.slice().sort((x, y) => y.w - x.w).slice(0, FLAME_LIST_MAX)) {
        const li = el('li', null, leafPrefix(b.n.sys, b.n.kernel, b.n.sync) + (b.n.id === 0 ? 'all' : b.n.name) + ': ' +
          fmtNs(b.n.total) + ', ' + fmtCount(b.n.calls) + ' ' + ids.unit);
        li.dataset.name = b.n.id === 0 ? '' : b.n.name;
        li.dataset.depth = String(b.d);
        li.dataset.total = String(b.n.total);
        li.dataset.count = String(b.n.calls);
        list.append(li);
      }
    }
  };

  v.hit = (e) => {
    const cv = $(ids.canvas);
    const r = cv.getBoundingClientRect();
    const x = e.clientX - r.left;
    const d = Math.floor((e.clientY - r.top) / FLAME_ROW);
    return v.boxes.find((b) => b.d === d && x >= b.x && x < b.x + b.w);
  };

  v.setup = () => {
    const cv = $(ids.canvas);
    cv.addEventListener('click', (e) => {
      const b = v.hit(e);
      if (b && b.n.id !== v.data.root) v.load(b.n.id).catch(showError);
      else if (b && b.n.parent !== undefined && b.n.id !== 0) v.load(b.n.parent).catch(showError);
    });
    cv.addEventListener('mousemove', (e) => {
      const b = v.hit(e);
      const tip = $(ids.tip);
      if (!b) {
        tip.hidden = true;
        return;
      }
      const f = v.data;
      tip.textContent = leafPrefix(b.n.sys, b.n.kernel, b.n.sync) + b.n.name + '\n' + fmtNs(b.n.total) + ' (' +
        (100 * b.n.total / (f.total_ns || 1)).toFixed(1) + '%), self ' + fmtNs(b.n.self) + ', ' + fmtCount(b.n.calls) +
        ' ' + ids.unit;
      tip.style.left = (e.clientX + 12) + 'px';
      tip.style.top = (e.clientY + 12) + 'px';
      tip.hidden = false;
    });
    cv.addEventListener('mouseleave', () => { $(ids.tip).hidden = true; });
    $(ids.reset).addEventListener('click', () => v.load(0).catch(showError));
  };
  return v;
}

const flame = flameView({
  api: 'flame', canvas: 'flame-canvas', tip: 'flame-tip', path: 'flame-path', info: 'flame-info',
  reset: 'flame-reset', unit: 'calls', colour: (n) => colourOf(n.name, n.sys, n.kernel, n.sync),
  info_text: (f) => fmtNs(f.total_ns) + (f.hidden ? ', ' + fmtCount(f.hidden) + ' narrow paths hidden' : ''),
});

/* Off the CPU: cool colours, system call leaves violet as elsewhere. */
const offcpuFlame = flameView({
  api: 'offcpu_flame', canvas: 'offcpu-canvas', tip: 'offcpu-tip', path: 'offcpu-path', info: 'offcpu-info',
  reset: 'offcpu-reset', list: 'offcpu-list', unit: 'waits',
  colour: (n) => {
    if (n.sys) return colourOf(n.name, true);
    let h = 0;
    for (let i = 0; i < n.name.length; i++) h = (h * 31 + n.name.charCodeAt(i)) | 0;
    h = Math.abs(h);
    return 'hsl(' + (190 + h % 40) + ',' + (45 + h % 20) + '%,' + (62 + (h >> 3) % 14) + '%)';
  },
  info_text: (f) => fmtNs(f.total_ns) + ' off the CPU in ' + fmtCount(f.waits) + ' waits' +
    (f.hidden ? ', ' + fmtCount(f.hidden) + ' narrow paths hidden' : '') +
    (f.dropped ? ', ' + fmtCount(f.dropped) + ' paths not kept (too many)' : ''),
});

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
  const [d, k, y] = await Promise.all([
    api('timeline?thread=' + state.tl.thread + '&t0=' + t0 + '&t1=' + t1 + '&px=' + px),
    /* the calls are drawn whatever becomes of the kernel and sync tracks */
    state.kernel ? api('kernel_tracks?thread=' + state.tl.thread + '&from=' + t0 + '&to=' + t1 + '&px=' + px)
      .catch((e) => { showError(e); return null; }) : null,
    state.sync ? api('sync_tracks?thread=' + state.tl.thread + '&from=' + t0 + '&to=' + t1 + '&px=' + px)
      .catch((e) => { showError(e); return null; }) : null,
  ]);
  if (seq !== state.tl.seq) return; /* a newer window was asked for */
  state.tl.data = d;
  state.kt.data = k && k.kernel ? k : null;
  state.sy.data = y && y.sync ? y : null;
  $('tl-status').textContent = fmtNs(t0) + ' \u2013 ' + fmtNs(t1) + ' (' + fmtNs(t1 - t0) + ' shown), ' +
    (d.mode === 'exact' ? 'every call' : 'merged, zoom in for every call') + ', ' + fmtCount(d.spans.length) +
    ' spans' + (d.lost.length ? ', losses marked in red' : '') + (d.running ? ', the thread runs on' : '');
  $('tl-status').dataset.mode = d.mode;
  $('tl-status').dataset.spans = String(d.spans.length);
  $('tl-status').dataset.t0 = String(t0);
  $('tl-status').dataset.t1 = String(t1);
  ktStatus();
  syStatus();
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
  drawKTracks();
  drawSyncTracks();
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

/* ------------------------------------------------------------ kernel tracks */

const KT_LANE = 18;
const KT_GAP = 5;
const KT_STATE = {
  S: ['#7b8bb0', '#dfe4ef'], D: ['#d0893a', '#f6e2cb'], R: ['#c0392b', '#f5d5d1'], '?': ['#8a8f99', '#e4e6ea'],
};
const KT_ARROW = { thread: '#1e8449', timer: '#8e44ad', hardirq: '#d35400', softirq: '#b9770e', none: '#69707d' };
const KT_OTHER = '#b0b6bf'; /* another process's slice on a CPU (--kernel-system) */

/* A thread's colour in the CPU lanes: none of them the green of "on a CPU". */
const THREAD_HUES = [25, 215, 305, 45, 185, 265, 0, 345, 200, 280];
function threadColour(id) {
  return 'hsl(' + THREAD_HUES[id % THREAD_HUES.length] + ',' + (60 - (Math.floor(id / THREAD_HUES.length) % 3) * 12) +
    '%,' + (58 + (Math.floor(id / THREAD_HUES.length) % 2) * 10) + '%)';
}

function threadById(id) {
  return (state.summary ? state.summary.threads : []).find((t) => t.id === id);
}

/* What the kernel tracks show of the window, as numbers for people and
 * as data attributes (the UI tests read them). */
function ktStatus() {
  const st = $('kt-status');
  const k = state.kt.data;
  if (!k) {
    st.textContent = '';
    for (const key of ['off', 'offS', 'cpus', 'threads', 'arrows', 'others']) delete st.dataset[key];
    return;
  }
  const mine = k.threads.find((t) => t.id === state.tl.thread);
  let off = 0, offS = 0;
  for (const o of mine ? mine.off : []) {
    off += o[6];
    if (o[2] === 'S') offS += o[6];
  }
  let others = 0; /* slices of other processes' threads (record --kernel-system) */
  for (const c of k.cpus) others += c.slices.filter((sl) => sl.length > 5 && sl[5] !== null).length;
  st.textContent = '\u2014 this thread: ' + fmtCount(off) + ' off-CPU waits in the window; ' +
    fmtCount(k.threads.length) + ' thread' + (k.threads.length === 1 ? '' : 's') + ', ' + fmtCount(k.cpus.length) +
    ' CPU' + (k.cpus.length === 1 ? '' : 's') + ', ' + fmtCount(k.arrows.length) + ' wake-ups' +
    (k.threads_more ? ', ' + fmtCount(k.threads_more) + ' more threads not shown' : '') +
    (k.hidden ? ', ' + fmtCount(k.hidden) + ' intervals not shown' : '') +
    (others ? ', ' + fmtCount(others) + ' slices of other processes (grey)' : '');
  st.dataset.off = String(off);
  st.dataset.others = String(others);
  st.dataset.offS = String(offS);
  st.dataset.cpus = String(k.cpus.length);
  st.dataset.threads = String(k.threads.length);
  st.dataset.arrows = String(k.arrows.length);
}

function hatch(g, x, y, w, h, fg, bg) {
  g.fillStyle = bg;
  g.fillRect(x, y, w, h);
  g.save();
  g.beginPath();
  g.rect(x, y, w, h);
  g.clip();
  g.strokeStyle = fg;
  g.lineWidth = 1;
  g.beginPath();
  for (let i = Math.floor(x / 6) * 6 - h; i < x + w; i += 6) {
    g.moveTo(i, y + h);
    g.lineTo(i + h, y);
  }
  g.stroke();
  g.restore();
}

function drawKTracks() {
  const k = state.kt.data;
  const cv = $('ktrack-canvas');
  state.kt.boxes = [];
  if (cv.offsetParent === null || !k) return;
  const width = cv.clientWidth || 1000;
  const lanes = k.threads.length + k.cpus.length;
  const h = Math.max(1, lanes) * (KT_LANE + KT_GAP) + 4;
  const dpr = window.devicePixelRatio || 1;
  cv.style.height = h + 'px';
  cv.width = Math.round(width * dpr);
  cv.height = Math.round(h * dpr);
  const g = cv.getContext('2d');
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, width, h);
  const t0 = state.tl.t0;
  const scale = width / (state.tl.t1 - state.tl.t0);
  const X = (t) => (t - t0) * scale;
  const W = (a, b) => Math.max((b - a) * scale, 1);
  const laneY = new Map();
  let y = 2;
  const labels = [];
  for (const t of k.threads) {
    laneY.set('t' + t.id, y);
    /* on a CPU from its first event to its last, but where it was off */
    const a = Math.max(X(t.first), 0), b = Math.min(X(t.last), width);
    if (b > a) {
      g.fillStyle = '#cfe8d2';
      g.fillRect(a, y, b - a, KT_LANE);
    }
    if (t.id === state.tl.thread) {
      g.fillStyle = '#2f6fd6';
      g.fillRect(0, y, 3, KT_LANE);
    }
    for (const o of t.off) {
      const [s0, s1, st, who, sys, wake, count, fill] = o;
      const x = X(s0), w = W(s0, s1);
      if (x > width || x + w < 0) continue;
      const [fg, bg] = KT_STATE[st] || KT_STATE['?'];
      g.globalAlpha = count > 1 ? Math.max(0.3, fill / 1000) : 1;
      hatch(g, x, y, w, KT_LANE, fg, bg);
      /* where each wait begins: waits a few microseconds apart stay apart */
      g.fillStyle = fg;
      g.fillRect(x, y, 1.5, KT_LANE);
      if (wake !== null && wake >= s0 && wake <= s1) {
        /* woken, waiting for a CPU */
        g.fillStyle = '#f1c40f';
        g.fillRect(X(wake), y + KT_LANE - 5, Math.max((s1 - wake) * scale, 1), 5);
      }
      g.globalAlpha = 1;
      state.kt.boxes.push({ x, w, y, h: KT_LANE, kind: 'off', o, names: k.names, thread: t });
    }
    for (const q of t.irqs) {
      const [s0, s1, what, count] = q;
      const x = X(s0), w = W(s0, s1);
      if (x > width || x + w < 0) continue;
      g.fillStyle = '#8e24aa';
      g.fillRect(x, y, Math.max(w, 2), 5);
      state.kt.boxes.push({ x: x - 1, w: Math.max(w, 3), y, h: 6, kind: 'irq', q, names: k.names, count });
    }
    labels.push([y, t.tid + ' ' + t.comm]);
    y += KT_LANE + KT_GAP;
  }
  for (const c of k.cpus) {
    laneY.set('c' + c.cpu, y);
    g.fillStyle = '#f3f4f6';
    g.fillRect(0, y, width, KT_LANE);
    for (const sl of c.slices) {
      const [s0, s1, thread, count, fill, other] = sl;
      const x = X(s0), w = W(s0, s1);
      if (x > width || x + w < 0) continue;
      g.globalAlpha = count > 1 ? Math.max(0.3, fill / 1000) : 1;
      /* another process's (record --kernel-system): grey, named in the tooltip */
      g.fillStyle = other !== undefined && other !== null ? KT_OTHER : threadColour(thread);
      g.fillRect(x, y + 2, w, KT_LANE - 4);
      g.globalAlpha = 1;
      state.kt.boxes.push({ x, w, y, h: KT_LANE, kind: 'slice', sl, cpu: c.cpu, names: k.names });
    }
    labels.push([y, 'CPU ' + c.cpu]);
    y += KT_LANE + KT_GAP;
  }
  /* arrows: from the waker's lane (its thread's, else its CPU's) down or up to the thread woken */
  for (const a of k.arrows) {
    const [wake, fromThread, fromCpu, toThread, , kind] = a;
    const yt = laneY.get('t' + toThread);
    if (yt === undefined) continue;
    let ys = fromThread !== null ? laneY.get('t' + fromThread) : undefined;
    if (ys === undefined) ys = laneY.get('c' + fromCpu);
    const x = X(wake);
    if (x < 0 || x > width) continue;
    const from = ys === undefined ? yt - KT_GAP - 4 : ys + KT_LANE / 2;
    const to = yt + (from < yt ? 1 : KT_LANE - 1);
    drawArrow(g, x, from, to, KT_ARROW[kind] || KT_ARROW.none);
    state.kt.boxes.push({ x: x - 3, w: 6, y: Math.min(from, to), h: Math.abs(to - from), kind: 'arrow', a });
  }
  drawLaneLabels(g, labels);
}

/* A vertical arrow at x from y `from` to y `to`: who woke or released a
 * thread, on the kernel and sync tracks alike. */
function drawArrow(g, x, from, to, colour) {
  g.strokeStyle = g.fillStyle = colour;
  g.lineWidth = 1.5;
  g.beginPath();
  g.moveTo(x, from);
  g.lineTo(x, to);
  g.stroke();
  const dir = to > from ? 1 : -1;
  g.beginPath();
  g.moveTo(x, to);
  g.lineTo(x - 4, to - 6 * dir);
  g.lineTo(x + 4, to - 6 * dir);
  g.closePath();
  g.fill();
}

function drawLaneLabels(g, labels) {
  g.font = '11px system-ui, sans-serif';
  g.textBaseline = 'middle';
  for (const [ly, text] of labels) {
    const tw = g.measureText(text).width + 8;
    g.fillStyle = 'rgba(255,255,255,0.85)';
    g.fillRect(4, ly + 2, tw, KT_LANE - 4);
    g.fillStyle = '#1d2330';
    g.fillText(text, 8, ly + KT_LANE / 2);
  }
}

/* ------------------------------------------------------------ sync tracks */

/* A wait's colour by what it waited on. */
const SY_KIND = {
  'mutex-lock': ['#b03a2e', '#f2d7d5'], 'rwlock-rdlock': ['#b9770e', '#fae5d3'],
  'rwlock-wrlock': ['#b9770e', '#fae5d3'], 'spin-lock': ['#b03a2e', '#f2d7d5'],
  'cond-wait': ['#1f618d', '#d6eaf8'], 'sem-wait': ['#117a65', '#d0ece7'],
  'barrier-wait': ['#6c3483', '#e8daef'], join: ['#515a5a', '#e5e8e8'],
};
const SY_ARROW = '#1e8449';

/* What the sync tracks show of the window, as numbers for people and as
 * data attributes (the UI tests read them). */
function syStatus() {
  const st = $('sy-status');
  const y = state.sy.data;
  if (!y) {
    st.textContent = '';
    for (const key of ['waits', 'released', 'threads', 'arrows']) delete st.dataset[key];
    return;
  }
  const mine = y.threads.find((t) => t.id === state.tl.thread);
  let waits = 0, released = 0;
  for (const w of mine ? mine.waits : []) {
    waits += w[6];
    if (w[4] !== null) released++;
  }
  st.textContent = '\u2014 this thread: ' + fmtCount(waits) + ' waits in the window, ' + fmtCount(released) +
    ' with the thread that released them; ' + fmtCount(y.arrows.length) + ' releases' +
    (y.threads_more ? ', ' + fmtCount(y.threads_more) + ' more threads not shown' : '') +
    (y.hidden ? ', ' + fmtCount(y.hidden) + ' waits not shown' : '') +
    (y.dropped ? ', ' + fmtCount(y.dropped) + ' sync events not kept' : '');
  st.dataset.waits = String(waits);
  st.dataset.released = String(released);
  st.dataset.threads = String(y.threads.length);
  st.dataset.arrows = String(y.arrows.length);
}

function drawSyncTracks() {
  const y = state.sy.data;
  const cv = $('sync-canvas');
  state.sy.boxes = [];
  if (cv.offsetParent === null || !y) return;
  const width = cv.clientWidth || 1000;
  const h = Math.max(1, y.threads.length) * (KT_LANE + KT_GAP) + 4;
  const dpr = window.devicePixelRatio || 1;
  cv.style.height = h + 'px';
  cv.width = Math.round(width * dpr);
  cv.height = Math.round(h * dpr);
  const g = cv.getContext('2d');
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, width, h);
  const t0 = state.tl.t0;
  const scale = width / (state.tl.t1 - state.tl.t0);
  const X = (t) => (t - t0) * scale;
  const laneY = new Map();
  const labels = [];
  let ly = 2;
  for (const t of y.threads) {
    laneY.set(t.id, ly);
    const a = Math.max(X(t.first), 0), b = Math.min(X(t.last), width);
    if (b > a) {
      g.fillStyle = '#f3f4f6';
      g.fillRect(a, ly, b - a, KT_LANE);
    }
    if (t.id === state.tl.thread) {
      g.fillStyle = '#2f6fd6';
      g.fillRect(0, ly, 3, KT_LANE);
    }
    for (const w of t.waits) {
      const [s0, s1, op, , , , count, fill] = w;
      const x = X(s0), wd = Math.max((s1 - s0) * scale, 1);
      if (x > width || x + wd < 0) continue;
      const [fg, bg] = SY_KIND[y.names[op]] || SY_KIND.join;
      g.globalAlpha = count > 1 ? Math.max(0.3, fill / 1000) : 1;
      hatch(g, x, ly, wd, KT_LANE, fg, bg);
      g.fillStyle = fg;
      g.fillRect(x, ly, 1.5, KT_LANE);
      g.globalAlpha = 1;
      state.sy.boxes.push({ x, w: wd, y: ly, h: KT_LANE, kind: 'wait', s: w, names: y.names, thread: t });
    }
    labels.push([ly, t.tid + ' ' + t.comm]);
    ly += KT_LANE + KT_GAP;
  }
  /* arrows: from the releaser's lane at its release to the thread let go */
  for (const a of y.arrows) {
    const [rel, fromThread, toThread] = a;
    const ys = laneY.get(fromThread), yt = laneY.get(toThread);
    const x = X(rel);
    if (ys === undefined || yt === undefined || x < 0 || x > width) continue;
    const from = ys + KT_LANE / 2;
    const to = yt + (from < yt ? 1 : KT_LANE - 1);
    drawArrow(g, x, from, to, SY_ARROW);
    state.sy.boxes.push({ x: x - 3, w: 6, y: Math.min(from, to), h: Math.abs(to - from), kind: 'arrow', a,
      names: y.names });
  }
  drawLaneLabels(g, labels);
}

function syTip(b) {
  const nm = (id) => (id === null || id === undefined ? null : b.names[id]);
  if (b.kind === 'wait') {
    const [s0, s1, op, obj, waker, rel, count, , func] = b.s;
    const f = waker !== null ? threadById(waker) : null;
    let text = 'waited: ' + nm(op) + ' ' + nm(obj) + (count > 1 ? ', ' + fmtCount(count) + ' waits merged' : '') +
      '\n' + fmtNs(s0) + ' \u2013 ' + fmtNs(s1) + ' (' + fmtNs(s1 - s0) + ')';
    if (nm(func)) text += '\nin ' + nm(func);
    if (f) text += '\nreleased by ' + f.comm + ' ' + f.tid + (rel !== null ? ' at ' + fmtNs(rel) : '');
    else if (count === 1) text += '\nno release seen';
    return text;
  }
  const [rel, fromThread, toThread, end, op] = b.a;
  const f = threadById(fromThread), t = threadById(toThread);
  return nm(op) + ': released at ' + fmtNs(rel) + ' by ' + (f ? f.comm + ' ' + f.tid : 'thread ' + fromThread) +
    '\nlet ' + (t ? t.comm + ' ' + t.tid : 'thread ' + toThread) + ' go, ' + fmtNs(end - rel) + ' later';
}

function ktTip(b) {
  const nm = (id) => (id === null || id === undefined ? null : b.names ? b.names[id] : null);
  if (b.kind === 'off') {
    const [s0, s1, st, who, sys, wake, count] = b.o;
    const what = { S: 'sleeping (S)', D: 'blocked (D)', R: 'preempted (R)' }[st] || 'off (' + st + ')';
    let text = 'off the CPU, ' + what + (count > 1 ? ', ' + fmtCount(count) + ' waits merged' : '') + '\n' +
      fmtNs(s0) + ' \u2013 ' + fmtNs(s1) + ' (' + fmtNs(s1 - s0) + ')';
    if (nm(sys)) text += '\nin ' + nm(sys);
    if (nm(who)) text += '\nwoken by ' + nm(who);
    else if (st !== 'R' && count === 1) text += '\nno wake-up seen';
    if (wake !== null) text += '\nran ' + fmtNs(s1 - wake) + ' after the wake-up';
    return text;
  }
  if (b.kind === 'irq') {
    const [s0, s1, what, count] = b.q;
    return (nm(what) || 'interrupt') + (count > 1 ? ' (' + fmtCount(count) + ' merged)' : '') + '\n' + fmtNs(s0) +
      ', ' + fmtNs(s1 - s0);
  }
  if (b.kind === 'slice') {
    const [s0, s1, thread, count, , other] = b.sl;
    const t = other !== undefined && other !== null ? null : threadById(thread);
    const who = other !== undefined && other !== null ? b.names[other] + ' (another process)' :
      t ? t.comm + ' ' + t.tid : 'thread ' + thread;
    return 'CPU ' + b.cpu + ': ' + who +
      (count > 1 ? ' and others (' + fmtCount(count) + ' slices merged)' : '') + '\n' + fmtNs(s0) + ' \u2013 ' +
      fmtNs(s1) + ' (' + fmtNs(s1 - s0) + ')';
  }
  const [wake, fromThread, fromCpu, toThread, run, kind] = b.a;
  const f = fromThread !== null ? threadById(fromThread) : null;
  const t = threadById(toThread);
  return 'wake-up at ' + fmtNs(wake) + ' by ' + (f ? f.comm + ' ' + f.tid : kind + ' on CPU ' + fromCpu) + '\nof ' +
    (t ? t.comm + ' ' + t.tid : 'thread ' + toThread) + ', which ran ' + fmtNs(run - wake) + ' later';
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

/* Shows [a, b) (ns from the start), with a little room either side
 * unless exact. */
function tlShow(a, b, exact) {
  const pad = exact ? 0 : Math.max(1, (b - a) * 0.02);
  state.tl.t0 = Math.max(0, a - pad);
  state.tl.t1 = b + pad;
  state.tl.whole = false;
  tlSchedule();
}

/* Wheel zooms and dragging pans, on the calls' canvas and the kernel's
 * alike; tip(x, y) names what is under the pointer. */
let tlDrag = null;
function tlPanZoom(cv, tipId, tip) {
  cv.addEventListener('wheel', (e) => {
    e.preventDefault();
    const r = cv.getBoundingClientRect();
    const at = state.tl.t0 + (e.clientX - r.left) / r.width * (state.tl.t1 - state.tl.t0);
    tlZoom(e.deltaY < 0 ? 0.7 : 1 / 0.7, at);
  }, { passive: false });
  cv.addEventListener('mousedown', (e) => { tlDrag = { x: e.clientX, t0: state.tl.t0, t1: state.tl.t1, cv }; });
  cv.addEventListener('mousemove', (e) => {
    const r = cv.getBoundingClientRect();
    if (tlDrag && tlDrag.cv === cv) {
      const dt = (e.clientX - tlDrag.x) / r.width * (tlDrag.t1 - tlDrag.t0);
      const t0 = Math.max(0, tlDrag.t0 - dt);
      state.tl.t0 = t0;
      state.tl.t1 = t0 + (tlDrag.t1 - tlDrag.t0);
      state.tl.whole = false;
      tlSchedule();
      return;
    }
    const text = tip(e.clientX - r.left, e.clientY - r.top);
    const box = $(tipId);
    if (!text) {
      box.hidden = true;
      return;
    }
    box.textContent = text;
    box.style.left = (e.clientX + 12) + 'px';
    box.style.top = (e.clientY + 12) + 'px';
    box.hidden = false;
  });
  cv.addEventListener('mouseleave', () => { $(tipId).hidden = true; });
}

function tlBoxAt(x, y) {
  return (state.tl.boxes || []).find((q) => x >= q.x && x < q.x + q.w && y >= q.y && y < q.y + (q.h || TL_ROW));
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
  window.addEventListener('mouseup', () => { tlDrag = null; });
  tlPanZoom(cv, 'tl-tip', (x, y) => {
    const b = tlBoxAt(x, y);
    if (!b) return null;
    if (b.lost) return fmtCount(b.lost) + ' events lost here (' + fmtNs(b.t) + ')';
    const [, a, e2, , calls, flags, fill] = b.s;
    return (flags & 1 ? '[sys] ' : '') + b.name + '\n' + fmtNs(a) + ' \u2013 ' + fmtNs(e2) + ' (' +
      fmtNs(e2 - a) + ')' + (calls > 1 ? '\n' + fmtCount(calls) + ' calls merged, ' + (fill / 10).toFixed(1) +
        '% busy' : '') + (flags & 4 ? '\ngoes on after the window' : '') + (flags & 8 ? '\nunfinished' : '') +
      (calls > 1 ? '' : '\ndouble click: zoom to it');
  });
  cv.addEventListener('dblclick', (e) => {
    const r = cv.getBoundingClientRect();
    const b = tlBoxAt(e.clientX - r.left, e.clientY - r.top);
    if (b && b.s) tlShow(b.s[1], b.s[2]);
  });
  tlPanZoom($('sync-canvas'), 'tl-tip', (x, y) => {
    const hits = (state.sy.boxes || []).filter((q) => x >= q.x && x < q.x + q.w && y >= q.y && y < q.y + q.h);
    const b = hits.find((q) => q.kind === 'arrow') || hits[0];
    return b ? syTip(b) : null;
  });
  tlPanZoom($('ktrack-canvas'), 'tl-tip', (x, y) => {
    const hits = (state.kt.boxes || []).filter((q) => x >= q.x && x < q.x + q.w && y >= q.y && y < q.y + q.h);
    /* the arrows and interrupts drawn over the waits first */
    const b = hits.find((q) => q.kind === 'arrow') || hits.find((q) => q.kind === 'irq') || hits[0];
    return b ? ktTip(b) : null;
  });
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

/* ------------------------------------------------------------ layers */

const LAYERS_ROWS = 2000; /* function rows shown; the filter finds the others */

/* A kernel view's message when the trace has no kernel events (the
 * server's reason). */
function kernelEmpty(view, reason) {
  $(view + '-empty').textContent = reason || 'No kernel events in this trace: record with --kernel.';
  $(view + '-empty').hidden = false;
  $(view + '-body').hidden = true;
}

function layerValue(row, key, self) {
  const src = self && row.self ? row.self : row;
  if (key === 'name' || key === 'calls') return row[key];
  if (key === 'tid') return row.tid;
  if (key === 'irq_ns') return src.irq_ns + src.softirq_ns;
  return src[key];
}

function sortRows(rows, sort, self) {
  const { key, dir } = sort;
  return rows.slice().sort((a, b) => {
    const x = layerValue(a, key, self), y = layerValue(b, key, self);
    const c = typeof x === 'string' ? x.localeCompare(y) : x - y;
    return (dir === 'asc' ? c : -c) || String(a.name || a.tid).localeCompare(String(b.name || b.tid));
  });
}

function partsCells(tr, p) {
  tr.append(td(fmtNs(p.total_ns)), td(fmtNs(p.user_ns)), td(fmtNs(p.syscall_ns)), td(fmtNs(p.off_cpu_ns)),
    td(fmtNs(p.irq_ns + p.softirq_ns)), td(fmtCount(p.page_faults)), td(fmtCount(p.context_switches)),
    td(fmtCount(p.syscalls)));
}

function markSorted(table, sort) {
  for (const th of $(table).tHead.rows[0].cells) {
    th.classList.remove('sorted', 'asc', 'desc');
    if (th.dataset.key === sort.key) th.classList.add('sorted', sort.dir);
  }
}

function layersTables() {
  const l = state.layers.data;
  const self = $('layers-mode').value === 'self';
  const needle = $('layers-filter').value.trim().toLowerCase();
  const rows = sortRows(l.functions.filter((f) => f.name.toLowerCase().includes(needle)), state.layers.sort, self);
  const body = $('layers-table').tBodies[0];
  body.textContent = '';
  for (const f of rows.slice(0, LAYERS_ROWS)) {
    const tr = el('tr');
    tr.dataset.name = f.name;
    tr.append(td(f.name, 'text'), td(fmtCount(f.calls)));
    partsCells(tr, self ? f.self : f);
    tr.addEventListener('dblclick', () => openFlow(f.name, 0));
    body.append(tr);
  }
  $('layers-info').textContent = fmtCount(rows.length) + ' functions' + (rows.length > LAYERS_ROWS ? ', the first ' +
    fmtCount(LAYERS_ROWS) + ' shown: filter for others' : '') + '; ' + fmtCount(l.kernel_events) + ' kernel events' +
    (l.has_syscalls ? '' : '; no system calls recorded (record with --syscalls): their time counts as user time') +
    '. Double click a function for its flow.';
  markSorted('layers-table', state.layers.sort);
  const tb = $('layers-thread-table').tBodies[0];
  tb.textContent = '';
  for (const t of sortRows(l.threads, state.layers.tsort, false)) {
    const tr = el('tr');
    tr.dataset.tid = String(t.tid);
    tr.append(td(t.tid + ' (' + t.comm + ')' + (t.pid !== t.tid ? ', process ' + t.pid : ''), 'text'));
    partsCells(tr, t);
    tb.append(tr);
  }
  markSorted('layers-thread-table', state.layers.tsort);
  const k = state.layers.kernel;
  const wb = $('kernel-waits-table').tBodies[0];
  wb.textContent = '';
  for (const w of k.off_cpu) {
    const tr = el('tr');
    const who = w.wakers.map((x) => x.who + ' \u00D7' + fmtCount(x.count));
    if (w.unknown_wakers) who.push('no wake-up seen \u00D7' + fmtCount(w.unknown_wakers));
    tr.append(td(w.syscall || (w.state === 'R' ? '(preempted)' : '(in its own code)'), 'text'), td(w.state, 'text'),
      td(fmtCount(w.count)), td(fmtNs(w.total_ns)), td(fmtNs(w.count ? Math.round(w.total_ns / w.count) : 0)),
      td(fmtNs(w.max_ns)), td(who.join('; '), 'text'));
    wb.append(tr);
  }
  const eb = $('kernel-events-table').tBodies[0];
  eb.textContent = '';
  for (const e of k.events) {
    const tr = el('tr');
    tr.append(td(e.event, 'text'), td(fmtCount(e.count)));
    eb.append(tr);
  }
}

async function loadLayers() {
  if (!state.layers.data || (state.live && state.layers.gen !== state.generation)) {
    const [l, k] = await Promise.all([api('layers'), api('kernel')]);
    if (!l.kernel) {
      kernelEmpty('layers', l.reason);
      return;
    }
    state.layers.data = l;
    state.layers.kernel = k;
    state.layers.gen = state.generation;
  }
  $('layers-empty').hidden = true;
  $('layers-body').hidden = false;
  layersTables();
}

function setupLayers() {
  const sortable = (table, holder) => {
    for (const th of $(table).tHead.rows[0].cells) {
      th.addEventListener('click', () => {
        const key = th.dataset.key;
        const text = key === 'name' || key === 'tid';
        const sort = state.layers[holder];
        if (sort.key === key) sort.dir = sort.dir === 'desc' ? 'asc' : 'desc';
        else state.layers[holder] = { key, dir: text ? 'asc' : 'desc' };
        if (state.layers.data) layersTables();
      });
    }
  };
  sortable('layers-table', 'sort');
  sortable('layers-thread-table', 'tsort');
  $('layers-mode').addEventListener('change', () => { if (state.layers.data) layersTables(); });
  let timer = null;
  $('layers-filter').addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(() => { if (state.layers.data) layersTables(); }, 150);
  });
}

/* ------------------------------------------------------------ off-CPU flame graph */

async function loadOffcpu() {
  if (!state.kernel) {
    const r = await api('offcpu_flame');
    kernelEmpty('offcpu', r.reason);
    return;
  }
  $('offcpu-empty').hidden = true;
  $('offcpu-body').hidden = false;
  await offcpuFlame.load();
}

/* ------------------------------------------------------------ flow */

/* Opens the flow of a function's call (tid: numbered within that thread;
 * 0: over all threads). */
function openFlow(func, tid) {
  $('flow-func').value = func;
  state.flow.tid = tid || 0;
  state.flow.want = true;
  showView('flow');
}

function flowStepText(st) {
  switch (st.type) {
  case 'call': return st.name + '()';
  case 'syscall': return '[sys] ' + st.text;
  case 'off_cpu': return '[off-CPU] ' + st.text;
  case 'kernel': return '[kernel] ' + st.text;
  case 'mem': return '[mem] ' + st.text;
  case 'sync': return '[wait] ' + st.text;
  default: return '*** ' + st.text + ' ***';
  }
}

function flowLayers(c) {
  return 'total ' + fmtNs(c.duration_ns) + ': user ' + fmtNs(c.user_ns) + ', syscall ' + fmtNs(c.syscall_ns) +
    ', off-CPU ' + fmtNs(c.off_cpu_ns) + ', irq ' + fmtNs(c.irq_ns + c.softirq_ns) + '; ' + fmtCount(c.syscalls) +
    ' syscalls, ' + fmtCount(c.page_faults) + ' page faults, ' + fmtCount(c.context_switches) + ' switches' +
    (c.unfinished ? ' (unfinished)' : '');
}

function flowRender(f) {
  const body = $('flow-table').tBodies[0];
  body.textContent = '';
  for (const st of f.steps) {
    const tr = el('tr', 't-' + st.type);
    tr.dataset.type = st.type;
    tr.dataset.depth = String(st.depth);
    const text = td(flowStepText(st), 'text');
    text.style.paddingLeft = (0.4 + st.depth * 1.4) + 'em';
    tr.append(td('+' + fmtNs(Math.max(0, st.time_ns - f.start_ns))),
      td(st.duration_ns !== undefined ? fmtNs(st.duration_ns) : ''), text);
    body.append(tr);
  }
  const t = (state.summary ? state.summary.threads : []).find((x) => x.tid === f.tid);
  $('flow-layers').textContent = f.function + '#' + f.n + ', thread ' + f.tid + (t ? ' (' + t.comm + ')' : '') +
    ', process ' + f.pid + ' \u2014 ' + flowLayers(f);
  const more = f.steps_more + f.steps_dropped;
  $('flow-info').textContent = fmtCount(f.steps.length) + ' steps' + (more ? ', ' + fmtCount(more) +
    ' more not shown' : '');
  $('flow-info').dataset.steps = String(f.steps.length);
  const note = $('flow-note');
  note.hidden = state.kernel;
  note.textContent = state.kernel ? '' : 'No kernel events in this trace (record with --kernel): the flow shows ' +
    'calls and system calls, not the time off the CPU.';
  $('flow-timeline').disabled = false;
}

/* The calls of the function (the select), then the chosen one's flow. */
async function flowShow() {
  const func = $('flow-func').value.trim();
  if (!func) {
    $('flow-info').textContent = 'type a function\'s name, or pick one in the flat profile or the call tree';
    return;
  }
  const tid = state.flow.tid;
  if (func !== state.flow.func || !state.flow.calls || state.flow.calls.tid !== tid) {
    const c = await api('flow?all=1&func=' + encodeURIComponent(func) + (tid ? '&tid=' + tid : ''));
    c.tid = tid;
    state.flow.func = func;
    state.flow.calls = c;
    const sel = $('flow-call');
    sel.textContent = '';
    for (const x of c.calls) {
      const o = el('option', null, '#' + x.n + ' \u2014 thread ' + x.tid + ', ' + fmtNs(x.duration_ns) +
        (x.off_cpu_ns ? ', off-CPU ' + fmtNs(x.off_cpu_ns) : ''));
      o.value = String(x.n);
      sel.append(o);
    }
    if (c.more) sel.append(el('option', null, fmtCount(c.more) + ' more calls not listed'));
    if (!c.calls.length) {
      $('flow-table').tBodies[0].textContent = '';
      $('flow-layers').textContent = '';
      $('flow-info').textContent = func + ' has no call' + (tid ? ' in thread ' + tid : '') + ' in this trace';
      $('flow-timeline').disabled = true;
      state.flow.data = null;
      return;
    }
  }
  const n = Number($('flow-call').value) || 1;
  const f = await api('flow?func=' + encodeURIComponent(func) + '&n=' + n + (tid ? '&tid=' + tid : ''));
  state.flow.data = f;
  flowRender(f);
}

async function loadFlow() {
  if (!state.flow.names) {
    state.flow.names = true;
    const p = await api('profile?sort=total&limit=5000');
    const dl = $('flow-names');
    for (const f of p.functions) {
      const o = el('option');
      o.value = f.name;
      dl.append(o);
    }
  }
  if (state.flow.want) {
    state.flow.want = false;
    await flowShow();
  }
}

function setupFlow() {
  $('flow-show').addEventListener('click', () => flowShow().catch(showError));
  $('flow-func').addEventListener('keydown', (e) => {
    if (e.key === 'Enter') flowShow().catch(showError);
  });
  $('flow-func').addEventListener('change', () => { state.flow.tid = 0; });
  $('flow-call').addEventListener('change', () => flowShow().catch(showError));
  $('flow-timeline').addEventListener('click', () => {
    const f = state.flow.data;
    const s = state.summary;
    if (!f || !s) return;
    const t = s.threads.find((x) => x.tid === f.tid && x.pid === f.pid && f.start_ns - s.first_ns >= x.first_ns &&
      f.start_ns - s.first_ns <= x.last_ns) || s.threads.find((x) => x.tid === f.tid);
    if (!t) return;
    state.tl.thread = t.id;
    $('tl-thread').value = String(t.id);
    showView('timeline');
    tlShow(f.start_ns - s.first_ns, f.start_ns - s.first_ns + f.duration_ns, true); /* the call's time exactly */
  });
}

/* A row picked in the profile or the tree: the Flow buttons take it. */
function pickRow(table, tr, pick) {
  for (const r of document.querySelectorAll('tr.picked')) r.classList.remove('picked');
  tr.classList.add('picked');
  state.pick = pick;
  $('profile-flow').disabled = table !== 'profile';
  $('tree-flow').disabled = table !== 'tree' || pick.leaf;
}

/* ------------------------------------------------------------ coverage */

const COV_ROWS = 2000; /* rows of the never-run and dynamic call tables shown */
const COV_OPEN_MAX = 2000; /* path tree nodes "open the paths that ran" shows at most */

/* GET /api/coverage, asked once (the server computes it on the first
 * request and keeps it): the document, or the error it answered. */
function coverageData() {
  if (!state.cov.promise) {
    state.cov.promise = api('coverage').then((c) => {
      state.cov.data = c;
      state.cov.never = covNeverCallees(c);
      state.cov.counted = new Set();
      for (const o of c.objects) for (const f of o.function_list) state.cov.counted.add(f.name);
      return c;
    });
    state.cov.promise.catch(() => {});
  }
  return state.cov.promise;
}

/* caller name -> the names of its static callees that never ran from it
 * (call_list entries with run false), over every object. */
function covNeverCallees(c) {
  const m = new Map();
  for (const o of c.objects) {
    for (const e of o.call_list) {
      if (e.run) continue;
      if (!m.has(e.caller)) m.set(e.caller, new Set());
      m.get(e.caller).add(e.callee);
    }
  }
  const out = new Map();
  for (const [k, v] of m) out.set(k, [...v].sort());
  return out;
}

function fmtPercent(p) {
  return Number(p).toFixed(1) + '%';
}

function covRow(name, cls, fn, calls) {
  const tr = el('tr', cls);
  tr.append(td(name, 'text'), td(fmtCount(fn.run) + '/' + fmtCount(fn.total)), td(fmtPercent(fn.percent)),
    td(fmtCount(calls.run) + '/' + fmtCount(calls.total)), td(fmtPercent(calls.percent)));
  return tr;
}

/* A node of the path tree: ran, never ran, or a library call the trace
 * could not see (an import not counted: recorded without --libcalls); an
 * indirect call site has no function to have run. */
function covClass(n) {
  if (n.run) return 'cov-run';
  if (n.kind === 'indirect') return 'cov-indirect';
  if (/@(plt|got)$/.test(n.name) && !state.cov.counted.has(n.name)) return 'cov-untraced';
  return 'cov-never';
}

function covMarks(n) {
  const m = [];
  if (n.recursive) m.push('[recursive]');
  if (n.kind === 'tail') m.push('[tail]');
  if (n.kind === 'indirect') m.push('[indirect]');
  if (n.cut) m.push('[+' + fmtCount(n.cut) + ' cut]');
  return m;
}

const covNodes = new WeakMap(); /* path tree item -> its node of the document */

function covItem(n, depth) {
  const li = el('li', 'cov-node ' + covClass(n));
  li.dataset.name = n.name;
  li.dataset.depth = String(depth);
  const kids = n.children && n.children.length;
  const line = el('div', 'cov-line');
  const tog = el('span', 'toggle' + (kids ? '' : ' leaf'), kids ? '\u25B8' : '\u00B7');
  line.append(tog, el('span', 'cov-name', n.name));
  for (const m of covMarks(n)) line.append(' ', el('span', 'cov-mark', m));
  if (n.run) line.append(' ', el('span', 'cov-calls', '(' + fmtCount(n.calls) + (n.calls === 1 ? ' call)' : ' calls)')));
  if (li.classList.contains('cov-untraced')) li.title = 'a library call: not traced (record --libcalls traces them)';
  li.append(line);
  covNodes.set(li, n);
  if (kids) {
    tog.addEventListener('click', () => covToggle(li));
    line.addEventListener('dblclick', () => covToggle(li));
  }
  return li;
}

function covOpen(li) {
  if (li.dataset.open === '1') return;
  const n = covNodes.get(li);
  if (!n || !n.children || !n.children.length) return;
  const ul = el('ul');
  const depth = Number(li.dataset.depth) + 1;
  for (const c of n.children) ul.append(covItem(c, depth));
  li.append(ul);
  li.dataset.open = '1';
  li.querySelector('.toggle').textContent = '\u25BE';
}

function covFold(li) {
  const ul = li.querySelector(':scope > ul');
  if (ul) ul.remove();
  li.dataset.open = '0';
  const tog = li.querySelector('.toggle');
  if (tog && !tog.classList.contains('leaf')) tog.textContent = '\u25B8';
}

function covToggle(li) {
  if (li.dataset.open === '1') covFold(li);
  else covOpen(li);
}

/* Opens every path that ran, breadth first, up to COV_OPEN_MAX nodes shown. */
function covOpenRun() {
  const root = $('cov-tree').firstElementChild;
  if (!root) return;
  let shown = 1;
  let level = [root];
  while (level.length && shown < COV_OPEN_MAX) {
    const next = [];
    for (const li of level) {
      const n = covNodes.get(li);
      if (!n.run || !n.children || !n.children.length || shown + n.children.length > COV_OPEN_MAX) continue;
      covOpen(li);
      shown += n.children.length;
      for (const c of li.querySelector(':scope > ul').children) next.push(c);
    }
    level = next;
  }
}

function covRender(c) {
  $('cov-empty').hidden = true;
  $('cov-body').hidden = false;
  const warn = $('cov-warnings');
  warn.textContent = '';
  for (const w of c.warnings || []) warn.append(el('li', null, w));
  $('cov-damage').hidden = !c.damage;
  $('cov-damage').textContent = c.damage ? c.damage + '. Functions that ran only in the unreadable part show as ' +
    'never run.' : '';

  const body = $('cov-table').tBodies[0];
  body.textContent = '';
  for (const o of c.objects) body.append(covRow(o.path, null, o.functions, o.calls));
  const total = covRow('total', 'total', c.total.functions, c.total.calls);
  total.id = 'cov-total';
  body.append(total);
  $('cov-unmatched').textContent = c.unmatched ? fmtCount(c.unmatched) +
    ' traced function addresses fell in no function of these binaries' : '';

  const tree = $('cov-tree');
  tree.textContent = '';
  const p = c.paths;
  if (p && p.tree) {
    $('cov-root').textContent = p.root + ' (' + p.object + ')';
    $('cov-paths-info').textContent = fmtCount(p.nodes) + ' nodes, ' + fmtCount(p.recursive) + ' recursive, ' +
      fmtCount(p.cut_paths) + ' paths cut (depth ' + p.max_depth + ', at most ' + fmtCount(p.max_nodes) + ' nodes)';
    tree.append(covItem(p.tree, 0));
    covOpenRun();
  } else {
    $('cov-root').textContent = '—';
    $('cov-paths-info').textContent = 'no path tree: the trace names no program that could be read';
  }

  const never = [];
  for (const o of c.objects) for (const f of o.never_run) never.push([f, o.path]);
  const addr = (f) => BigInt(f.addr);
  never.sort((a, b) => b[0].size - a[0].size || (addr(a[0]) < addr(b[0]) ? -1 : addr(a[0]) > addr(b[0]) ? 1 : 0));
  const nb = $('cov-never-table').tBodies[0];
  nb.textContent = '';
  for (const [f, obj] of never.slice(0, COV_ROWS)) {
    const tr = el('tr');
    tr.append(td(fmtCount(f.size)), td(f.name, 'text'), td(f.addr, 'text'), td(obj, 'text'));
    nb.append(tr);
  }
  if (!never.length) nb.append(covNote(4, 'every counted function ran'));
  else if (never.length > COV_ROWS) nb.append(covNote(4, fmtCount(never.length - COV_ROWS) + ' smaller ones not shown'));

  const dyn = [];
  for (const o of c.objects) dyn.push(...o.dynamic_calls);
  dyn.sort((a, b) => b.calls - a.calls || a.caller.localeCompare(b.caller) || a.callee.localeCompare(b.callee));
  const db = $('cov-dyn-table').tBodies[0];
  db.textContent = '';
  for (const d of dyn.slice(0, COV_ROWS)) {
    const tr = el('tr');
    tr.append(td(fmtCount(d.calls)), td(d.caller, 'text'), td(d.callee, 'text'));
    db.append(tr);
  }
  if (!dyn.length) db.append(covNote(3, 'none'));
  else if (dyn.length > COV_ROWS) db.append(covNote(3, fmtCount(dyn.length - COV_ROWS) + ' more not shown'));
}

function covNote(span, text) {
  const tr = el('tr', 'muted');
  const c = td(text, 'text');
  c.colSpan = span;
  tr.append(c);
  return tr;
}

async function loadCoverage() {
  if (state.cov.shown) return;
  if (state.live) {
    covEmpty('Coverage needs a saved trace: end the session, then serve its directory (serve --connect --save DIR).');
    return;
  }
  if (!state.cov.data) {
    $('cov-body').hidden = true;
    $('cov-empty').textContent = 'Reading the trace and its binaries\u2026';
    $('cov-empty').hidden = false;
  }
  let c;
  try {
    c = await coverageData();
  } catch (e) {
    covEmpty(e.message);
    return;
  }
  covRender(c);
  state.cov.shown = true;
}

function covEmpty(why) {
  $('cov-body').hidden = true;
  $('cov-empty').textContent = why;
  $('cov-empty').classList.add('err');
  $('cov-empty').hidden = false;
}

function setupCoverage() {
  $('cov-open-run').addEventListener('click', covOpenRun);
  $('cov-expand').addEventListener('click', () => {
    const closed = [...$('cov-tree').querySelectorAll('li.cov-node')]
      .filter((li) => li.dataset.open !== '1' && !li.querySelector(':scope > .cov-line > .toggle.leaf'));
    for (const li of closed.slice(0, 200)) covOpen(li);
  });
  $('cov-fold').addEventListener('click', () => {
    const root = $('cov-tree').firstElementChild;
    if (root) covFold(root);
  });
  /* the call tree's never-run callees, from the same document */
  $('tree-never').addEventListener('change', async () => {
    const box = $('tree-never');
    if (box.checked) {
      try {
        await coverageData();
      } catch (e) {
        box.checked = false;
        box.disabled = true;
        $('tree-never-label').title = e.message;
        showError(e);
        return;
      }
    }
    state.cov.treeNever = box.checked;
    await loadTree().catch(showError);
  });
}

/* The static callees of a call tree node's function that never ran from
 * it, when the call tree shows them. */
function treeNeverCallees(node) {
  if (!state.cov.treeNever || !state.cov.never || node.syscall || node.kernel || node.sync) return [];
  return state.cov.never.get(node.name) || [];
}

/* A greyed row of the call tree: a static callee of the row above's
 * function that never ran from it. */
function treeNeverRow(caller, callee, depth) {
  const tr = el('tr', 'cov-never');
  tr.dataset.depth = String(depth);
  tr.dataset.name = callee;
  tr.title = caller + ' calls ' + callee + ' in the binary, but never did in the trace';
  const name = td('', 'text');
  name.style.paddingLeft = (0.4 + depth * 1.1) + 'em';
  name.append(el('span', 'toggle leaf', '\u00B7'), callee);
  tr.append(name, td('0'));
  for (let i = 0; i < 5; i++) tr.append(td(''));
  return tr;
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
  flame: () => flame.load(),
  timeline: loadTimeline,
  syscalls: loadSyscalls,
  layers: loadLayers,
  offcpu: loadOffcpu,
  flow: loadFlow,
  heap: loadHeap,
  coverage: loadCoverage,
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
  flame.setup();
  offcpuFlame.setup();
  setupTimeline();
  setupLive();
  setupHeap();
  setupLayers();
  setupFlow();
  setupCoverage();
  $('profile-flow').addEventListener('click', () => { if (state.pick) openFlow(state.pick.name, 0); });
  $('tree-flow').addEventListener('click', () => { if (state.pick) openFlow(state.pick.name, state.pick.tid); });
  for (const b of $('tabs').querySelectorAll('button')) b.addEventListener('click', () => showView(b.dataset.view));
  window.addEventListener('resize', () => {
    if (state.view === 'flame') flame.draw();
    if (state.view === 'offcpu') offcpuFlame.draw();
    if (state.view === 'timeline') tlSchedule();
  });
  try {
    const s = await loadSummary();
    setLiveControls(s.live);
    setupExports(s.exports, s.heap);
    if (s.live) {
      $('tree-never').disabled = true;
      $('tree-never-label').title = 'coverage needs a saved trace: serve the session\'s trace directory once it ended';
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
