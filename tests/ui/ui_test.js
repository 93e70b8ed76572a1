/* Drives the web UI of `layerprof serve` in headless Chromium
 * (playwright-core) and checks what the page shows against what the CLI
 * says.  Started by tests/ui/test_serve.py, which records the traces,
 * starts the server and writes the expectations.
 *
 * usage: node ui_test.js CONFIG.json
 * CONFIG: { "modules": dir holding node_modules, "chromium": path,
 *           "url": page, "scenario": "trace" | "lost" | "live" | "launch" | "heap" | "liveheap" | "livetl" |
 *                                 "kernel" | "coverage" | "sync",
 *           "screenshots": dir, "expect": {...} }
 * Prints one line per check ("ok ...", "FAIL ...") and exits 1 when any failed. */
'use strict';

const fs = require('fs');
const path = require('path');

const config = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const { chromium } = require(path.join(config.modules, 'node_modules', 'playwright-core'));

let failed = 0;
let passed = 0;

function check(ok, what, detail) {
  if (ok) {
    passed++;
    console.log('ok   ' + what);
  } else {
    failed++;
    console.log('FAIL ' + what + (detail !== undefined ? ': ' + detail : ''));
  }
  return ok;
}

/* Answers a scenario expects to fail (the browser logs each as an error):
 * paths of the API, set while the scenario waits for them. */
const failuresExpected = new Set();

function expectedFailure(m) {
  const url = (m.location() || {}).url || '';
  return /status of 404/.test(m.text()) && failuresExpected.has(url.replace(/^https?:\/\/[^/]+/, ''));
}

const num = (s) => Number(String(s).replace(/,/g, ''));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function shot(page, name) {
  await page.screenshot({ path: path.join(config.screenshots, (config.prefix || '') + name + '.png'), fullPage: true });
}

/* The flat profile as shown: [{name, calls}] in row order. */
async function profileRows(page) {
  return page.$$eval('#profile-table tbody tr', (rows) => rows.map((r) => ({
    name: r.cells[0].textContent,
    calls: r.cells[1].textContent,
  })));
}

async function waitProfileSorted(page, key, dir) {
  await page.waitForSelector('#profile-table th[data-key="' + key + '"].sorted.' + dir, { timeout: 10000 });
}

/* The visible tree rows: [{id, depth, name, calls}]. */
async function treeRows(page) {
  return page.$$eval('#tree-table tbody tr', (rows) => rows.map((r) => ({
    id: Number(r.dataset.id),
    depth: Number(r.dataset.depth),
    name: r.cells[0].textContent.replace(/^[\u25B8\u25BE\u00B7]/, '').replace(/ \(\d[\d,]* failed\)$/, ''),
    calls: r.cells[1].textContent,
    open: r.dataset.open === '1',
  })));
}

function multiset(list) {
  const m = {};
  for (const x of list) m[x] = (m[x] || 0) + 1;
  return JSON.stringify(Object.keys(m).sort().map((k) => [k, m[k]]));
}

function nodeKey(n) {
  return (n.syscall ? '[sys] ' : '') + n.name + '=' + n.calls;
}

/* ------------------------------------------------------------ a recorded trace */

async function scenarioTrace(page) {
  const exp = config.expect;
  await page.goto(config.url);
  await page.waitForSelector('body[data-ready="1"]', { timeout: 20000 });
  await shot(page, 'profile');
  check(await page.isHidden('#lost-banner'), 'no lost-events banner on a trace without losses');

  /* the flat profile: exact call counts of report --format json */
  let rows = await profileRows(page);
  const shown = {};
  for (const r of rows) shown[r.name] = num(r.calls);
  const want = exp.report_calls;
  check(JSON.stringify(Object.keys(shown).sort()) === JSON.stringify(Object.keys(want).sort()),
    'flat profile: the functions of report --format json', JSON.stringify(Object.keys(shown)));
  const wrong = Object.keys(want).filter((k) => shown[k] !== want[k]);
  check(!wrong.length, 'flat profile: call counts equal report --format json',
    wrong.map((k) => k + ' ' + shown[k] + ' != ' + want[k]).join(', '));

  /* sorting: by calls (descending, then ascending), by name */
  await page.click('#profile-table th[data-key="calls"]');
  await waitProfileSorted(page, 'calls', 'desc');
  rows = await profileRows(page);
  let calls = rows.map((r) => num(r.calls));
  check(calls.every((c, i) => i === 0 || calls[i - 1] >= c), 'sort by calls: descending', calls.join(' '));
  check(rows[0].name === exp.most_called, 'sort by calls: the most called function first',
    rows[0].name + ' vs ' + exp.most_called);
  await page.click('#profile-table th[data-key="calls"]');
  await waitProfileSorted(page, 'calls', 'asc');
  rows = await profileRows(page);
  calls = rows.map((r) => num(r.calls));
  check(calls.every((c, i) => i === 0 || calls[i - 1] <= c), 'sort by calls again: ascending', calls.join(' '));
  await page.click('#profile-table th[data-key="name"]');
  await waitProfileSorted(page, 'name', 'asc');
  rows = await profileRows(page);
  const names = rows.map((r) => r.name);
  check(names.every((n, i) => i === 0 || names[i - 1] <= n), 'sort by name: alphabetical', names.join(' '));
  await shot(page, 'profile-sorted');

  /* filtering the profile */
  await page.fill('#profile-filter', exp.filter_text);
  await page.waitForFunction((t) => [...document.querySelectorAll('#profile-table tbody tr')]
    .every((r) => r.cells[0].textContent.toLowerCase().includes(t)), exp.filter_text, { timeout: 10000 });
  rows = await profileRows(page);
  check(rows.length === exp.filter_matches, 'profile filter: only matching functions',
    rows.length + ' rows, want ' + exp.filter_matches);
  await page.fill('#profile-filter', '');

  /* the call tree of each thread: top level, one level down, fold */
  await page.click('#tab-tree');
  for (const th of exp.threads) {
    await page.selectOption('#tree-thread', String(th.id));
    /* the previous thread's tree may have as many rows: wait for these names */
    await page.waitForFunction((want) => {
      const got = [...document.querySelectorAll('#tree-table tbody tr')].map((r) =>
        r.cells[0].textContent.replace(/^[\u25B8\u25BE\u00B7]/, '').replace(/ \(\d[\d,]* failed\)$/, '')).sort();
      return JSON.stringify(got) === JSON.stringify(want);
    }, th.roots.map((r) => (r.syscall ? '[sys] ' : '') + r.name).sort(), { timeout: 10000 }).catch(() => {});
    let tr = await treeRows(page);
    check(multiset(tr.map((r) => r.name + '=' + num(r.calls))) === multiset(th.roots.map(nodeKey)),
      'tree of thread ' + th.tid + ': top level as tree --format json',
      JSON.stringify(tr.map((r) => r.name + '=' + r.calls)) + ' vs ' + JSON.stringify(th.roots.map(nodeKey)));
    /* expand the first node with children, check its children, fold it */
    const idx = th.roots.findIndex((n) => n.children && n.children.length);
    if (idx < 0) continue;
    const node = th.roots[idx];
    const row = tr.find((r) => r.name === node.name && num(r.calls) === node.calls);
    if (!check(row !== undefined, 'tree of thread ' + th.tid + ': ' + node.name + ' is shown')) continue;
    await page.click('#tree-table tbody tr[data-id="' + row.id + '"] .toggle');
    await page.waitForSelector('#tree-table tbody tr[data-id="' + row.id + '"][data-open="1"]', { timeout: 10000 });
    tr = await treeRows(page);
    const kids = tr.filter((r) => r.depth === 1);
    check(multiset(kids.map((r) => r.name + '=' + num(r.calls))) === multiset(node.children.map(nodeKey)),
      'tree of thread ' + th.tid + ': expanding ' + node.name + ' shows its children and counts',
      JSON.stringify(kids.map((r) => r.name + '=' + r.calls)) + ' vs ' + JSON.stringify(node.children.map(nodeKey)));
    /* one level further when there is one */
    const deeper = node.children.find((n) => n.children && n.children.length);
    if (deeper) {
      const drow = kids.find((r) => r.name === deeper.name && num(r.calls) === deeper.calls);
      if (drow) {
        await page.click('#tree-table tbody tr[data-id="' + drow.id + '"] .toggle');
        await page.waitForSelector('#tree-table tbody tr[data-id="' + drow.id + '"][data-open="1"]',
          { timeout: 10000 });
        tr = await treeRows(page);
        const gk = tr.filter((r) => r.depth === 2);
        check(multiset(gk.map((r) => r.name + '=' + num(r.calls))) === multiset(deeper.children.map(nodeKey)),
          'tree of thread ' + th.tid + ': expanding ' + deeper.name + ' (depth 2) shows its children',
          JSON.stringify(gk.map((r) => r.name + '=' + r.calls)));
      }
    }
    await shot(page, 'tree-' + th.tid);
    await page.click('#tree-table tbody tr[data-id="' + row.id + '"] .toggle');
    await page.waitForSelector('#tree-table tbody tr[data-id="' + row.id + '"][data-open="0"]', { timeout: 10000 });
    tr = await treeRows(page);
    check(tr.length === th.roots.length && tr.every((r) => r.depth === 0),
      'tree of thread ' + th.tid + ': folding hides the children', tr.length + ' rows');
  }

  /* search: every call path of the function, and a click opens one */
  await page.fill('#tree-search', exp.search);
  await page.waitForSelector('#search-results li[data-id]', { timeout: 10000 });
  const hits = await page.$$eval('#search-results li[data-id]', (l) => l.length);
  check(hits === exp.search_paths, 'search "' + exp.search + '": one result per call path',
    hits + ' vs ' + exp.search_paths);
  await page.click('#search-results li[data-id]');
  await page.waitForSelector('#tree-table tbody tr.hit', { timeout: 10000 });
  const hit = (await treeRows(page)).find((r) => r.id !== undefined && r.name.includes(exp.search));
  const hitRow = await page.$eval('#tree-table tbody tr.hit', (r) => r.cells[0].textContent);
  check(hitRow.includes(exp.search) && hit !== undefined, 'search: clicking a result opens its path and marks it',
    hitRow);
  await shot(page, 'tree-search');

  /* the flame graph: drawn, and a click zooms into a frame */
  await page.click('#tab-flame');
  await page.waitForFunction(() => document.getElementById('flame-info').textContent.length > 0, null,
    { timeout: 10000 });
  const inked = await page.$eval('#flame-canvas', (c) => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 3; i < d.length; i += 4) if (d[i]) n++;
    return n;
  });
  check(inked > 100, 'flame graph: drawn', inked + ' pixels');
  await shot(page, 'flame');
  const box = await page.$eval('#flame-canvas', (c) => {
    const r = c.getBoundingClientRect();
    return { x: r.left, y: r.top, w: r.width };
  });
  /* the widest frame under "all": the middle of row 1 belongs to a frame */
  await page.mouse.click(box.x + box.w / 2, box.y + 18 * 1.5);
  await page.waitForSelector('#flame-path span', { timeout: 10000 }).catch(() => {});
  const crumbs = await page.$$eval('#flame-path span', (s) => s.map((x) => x.textContent));
  check(crumbs.length >= 1, 'flame graph: a click zooms into the frame (a way back appears)', crumbs.join(' '));
  await shot(page, 'flame-zoomed');
  await page.click('#flame-reset');
  await page.waitForFunction(() => !document.querySelector('#flame-path span'), null, { timeout: 10000 });
  check(true, 'flame graph: back to the whole graph');

  /* the timeline: a window, zoom in until every call is drawn */
  await page.click('#tab-timeline');
  await page.selectOption('#tl-thread', String(exp.timeline_thread));
  await page.waitForFunction(() => /spans/.test(document.getElementById('tl-status').textContent), null,
    { timeout: 10000 });
  const status0 = await page.textContent('#tl-status');
  const spans0 = num((status0.match(/([\d,]+) spans/) || [0, 0])[1]);
  check(spans0 > 0, 'timeline: spans drawn for the thread', status0);
  await shot(page, 'timeline');
  const shown0 = status0.match(/\(([^)]*) shown\)/)[1];
  await page.click('#tl-zoom-in');
  await page.waitForFunction((s) => {
    const t = document.getElementById('tl-status').textContent;
    return t.includes('shown') && !t.includes(s + ' shown');
  }, shown0, { timeout: 10000 });
  const status1 = await page.textContent('#tl-status');
  check(status1 !== status0, 'timeline: zoom in asks for a narrower window', status1);
  const cv = await page.$eval('#timeline-canvas', (c) => {
    const r = c.getBoundingClientRect();
    return { x: r.left + r.width / 2, y: r.top + 40 };
  });
  await page.mouse.move(cv.x, cv.y);
  await page.mouse.wheel(0, -400);
  /* the new window is fetched and drawn: a slow machine takes a while */
  await waitFor(async () => (await page.textContent('#tl-status')) !== status1, 10000);
  const status2 = await page.textContent('#tl-status');
  check(status2 !== status1, 'timeline: the wheel zooms too', status2);
  /* pan by dragging */
  await page.mouse.move(cv.x, cv.y);
  await page.mouse.down();
  await page.mouse.move(cv.x + 200, cv.y, { steps: 4 });
  await page.mouse.up();
  await waitFor(async () => (await page.textContent('#tl-status')) !== status2, 10000);
  const status3 = await page.textContent('#tl-status');
  check(status3 !== status2, 'timeline: dragging pans the window', status3);
  const mode = await page.$eval('#tl-status', (s) => s.dataset.mode);
  check(mode === 'exact', 'timeline: zoomed in, every call is drawn (exact mode)', mode);
  await shot(page, 'timeline-zoomed');

  /* the system calls view opens */
  await page.click('#tab-syscalls');
  await page.waitForSelector('#syscall-table tbody tr', { timeout: 10000 });
  check(true, 'system calls view opens');
}

/* ------------------------------------------------------------ a trace with losses */

async function scenarioLost(page) {
  await page.goto(config.url);
  await page.waitForSelector('body[data-ready="1"]', { timeout: 20000 });
  const visible = await page.isVisible('#lost-banner');
  const text = visible ? await page.textContent('#lost-banner') : '';
  check(visible, 'lost-events banner shown', text);
  const m = text.match(/^([\d,]+) events lost/);
  check(m && num(m[1]) === config.expect.lost, 'banner: the count of report --format json',
    (m ? m[1] : text) + ' vs ' + config.expect.lost);
  await shot(page, 'lost-banner');
}

/* ------------------------------------------------------------ a live session */

async function tickCount(page, fn) {
  return page.$$eval('#profile-table tbody tr', (rows, f) => {
    const r = rows.find((x) => x.cells[0].textContent === f);
    return r ? Number(r.cells[1].textContent.replace(/,/g, '')) : 0;
  }, fn);
}

async function waitFor(fn, timeoutMs) {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await fn()) return true;
    await sleep(100);
  }
  return false;
}

async function scenarioLive(page) {
  const fn = config.expect.function;
  await page.goto(config.url);
  await page.waitForSelector('body[data-ready="1"]', { timeout: 20000 });
  const started = await waitFor(async () => (await tickCount(page, fn)) > 0, 20000);
  check(started, 'live: ' + fn + ' calls arrive and the profile updates by itself');
  await shot(page, 'live-running');
  const state0 = await page.textContent('#live-state');
  check(/running, tracing/.test(state0), 'live: the panel says tracing', state0);
  await page.fill('#filter-input', '');
  await page.click('#btn-stop');
  const off = await waitFor(async () => /tracing off/.test(await page.textContent('#live-state')), 10000);
  check(off, 'live: Stop turns tracing off', await page.textContent('#live-state'));
  /* what was recorded before the stop may take a while to arrive (a slow
   * machine), so wait for the count to hold still for 1.5 s; a program still
   * traced (a tick every ms) never lets it */
  let a = await tickCount(page, fn);
  let b = -1;
  for (const end = Date.now() + 20000; Date.now() < end && a !== b;) {
    await sleep(1500);
    [a, b] = [await tickCount(page, fn), a];
  }
  check(a > 0 && a === b, 'live: stopped, the count stays', b + ' then ' + a);
  await shot(page, 'live-stopped');
  await page.click('#btn-start');
  const on = await waitFor(async () => /running, tracing$/.test(await page.textContent('#live-state')), 10000);
  check(on, 'live: Start turns tracing on again');
  const grew = await waitFor(async () => (await tickCount(page, fn)) > b, 15000);
  check(grew, 'live: started again, the count grows', b + ' then ' + (await tickCount(page, fn)));
  /* the update period */
  await page.selectOption('#period-select', '250ms');
  const per = await waitFor(async () => (await (await fetch(config.url + 'api/live')).json()).interval_ms === 250,
    5000).catch(() => false);
  check(per, 'live: the update period is set from the page');
  await shot(page, 'live-restarted');
  /* coverage reads a saved trace: the tab and the call tree's box say so */
  check(await page.isDisabled('#tree-never'), 'live: the call tree\'s "show never-run callees" is off');
  await page.click('#tab-coverage');
  await page.waitForSelector('#cov-empty:not([hidden])');
  const why = await page.textContent('#cov-empty');
  check(/needs a saved trace/.test(why), 'live: the Coverage tab says coverage needs a saved trace', why);
}

/* A session the page starts: the program typed in the target row. */
async function scenarioLaunch(page) {
  const fn = config.expect.function;
  await page.goto(config.url);
  await page.waitForSelector('body[data-ready="1"]', { timeout: 20000 });
  const idle = await page.textContent('#live-state');
  check(/^idle/.test(idle), 'launch: the session waits for a target', idle);
  check(await page.isEnabled('#btn-launch'), 'launch: the target row is enabled');
  await page.fill('#target-argv', config.expect.argv.join(' '));
  await page.click('#btn-launch');
  const running = await waitFor(async () => /^running/.test(await page.textContent('#live-state')), 15000);
  check(running, 'launch: the program runs, traced', await page.textContent('#live-state'));
  const grew = await waitFor(async () => (await tickCount(page, fn)) > 0, 15000);
  check(grew, 'launch: its ' + fn + ' calls arrive');
  check(await page.isDisabled('#btn-launch'), 'launch: the target row is locked once a session began');
  /* a filter from the page: only tick is recorded from now on */
  await page.fill('#filter-input', "-F '" + fn + "'");
  await page.click('#btn-filter');
  const shown = await waitFor(async () => (await page.textContent('#live-filters')).includes(fn), 10000);
  check(shown, 'launch: the filter is in force', await page.textContent('#live-filters'));
  await shot(page, 'live-launched');
}

/* The timeline of a live session: drawn while the program runs, growing
 * with it, zoom kept in the middle, followed at the right edge. */
async function tlWindow(page) {
  return page.$eval('#tl-status', (s) => ({
    t0: Number(s.dataset.t0), t1: Number(s.dataset.t1), spans: Number(s.dataset.spans || 0),
    mode: s.dataset.mode, text: s.textContent,
  }));
}

async function scenarioLiveTimeline(page) {
  await page.goto(config.url);
  await page.waitForSelector('body[data-ready="1"]', { timeout: 20000 });
  await page.click('#tab-timeline');
  const drawn = await waitFor(async () => (await tlWindow(page)).spans > 0, 20000);
  let w = await tlWindow(page);
  check(drawn && /runs on/.test(w.text), 'live timeline: spans drawn while the thread runs', w.text);
  check(w.mode === config.expect.mode, 'live timeline: ' + config.expect.mode + ' mode', w.mode);
  const grew = await waitFor(async () => (await tlWindow(page)).t1 > w.t1, 10000);
  check(grew, 'live timeline: the whole-thread view grows with the session', w.t1 + ' then ' +
    (await tlWindow(page)).t1);
  await shot(page, 'live-timeline');
  /* zoomed into the middle: the window stays where the user put it */
  const before = await tlWindow(page);
  await page.click('#tl-zoom-in');
  const zoomed = await waitFor(async () => {
    const x = await tlWindow(page);
    return x.t1 - x.t0 < (before.t1 - before.t0) / 2;
  }, 5000);
  w = await tlWindow(page);
  check(zoomed && w.spans > 0, 'live timeline: zoom in narrows the window', JSON.stringify(w));
  await sleep(1500); /* several updates */
  const still = await tlWindow(page);
  check(still.t0 === w.t0 && still.t1 === w.t1, 'live timeline: zoomed in the middle, the window stays',
    JSON.stringify([w, still]));
  /* at the right edge: it moves on with the newest events, same zoom */
  await page.click('#tl-reset');
  await waitFor(async () => (await tlWindow(page)).t1 - (await tlWindow(page)).t0 > still.t1 - still.t0, 5000);
  const box = await (await page.$('#timeline-canvas')).boundingBox();
  const reset = await tlWindow(page);
  await page.mouse.move(box.x + box.width - 2, box.y + 30);
  await page.mouse.wheel(0, -200);
  /* the zoom is in force once the window narrows (a slow machine takes a while) */
  await waitFor(async () => { const x = await tlWindow(page); return x.t1 - x.t0 < reset.t1 - reset.t0; }, 10000);
  const edge = await tlWindow(page);
  const moved = await waitFor(async () => (await tlWindow(page)).t0 > edge.t0, 10000);
  const after = await tlWindow(page);
  check(moved && Math.abs((after.t1 - after.t0) - (edge.t1 - edge.t0)) <= 2,
    'live timeline: at the right edge, the window follows the newest events at the same zoom',
    JSON.stringify([edge, after]));
  await shot(page, 'live-timeline-following');
}

/* ------------------------------------------------------------ the heap view and the exports */

async function heapSites(page) {
  return page.$$eval('#heap-site-table tbody tr', (rows) => rows.map((r) => ({
    site: Number(r.dataset.site),
    function: r.cells[0].textContent,
    live_objects: r.cells[2].textContent,
    live_bytes: r.cells[3].textContent,
  })));
}

async function scenarioHeap(page) {
  const exp = config.expect;
  await page.goto(config.url);
  await page.waitForSelector('body[data-ready="1"]', { timeout: 20000 });
  check(await page.isVisible('#export-memory'), 'heap: the heap exports are offered for a trace with heap events');
  await page.click('#tab-heap');
  await page.waitForSelector('#heap-site-table tbody tr', { timeout: 15000 });
  await page.waitForSelector('#heap-growth-svg circle.heap-point', { timeout: 15000 });
  await shot(page, 'heap');

  /* the leak: leaky's live objects and bytes as report --memory --format json gives them */
  let rows = await heapSites(page);
  const leaky = rows.find((r) => r.function === exp.leak_function);
  check(leaky && num(leaky.live_objects) === exp.leak_objects && num(leaky.live_bytes) === exp.leak_bytes,
    'heap: ' + exp.leak_function + ' has ' + exp.leak_objects + ' live objects, ' + exp.leak_bytes + ' live bytes',
    JSON.stringify(leaky));
  check(rows.length === exp.sites, 'heap: the call sites of report --memory', rows.length + ' vs ' + exp.sites);

  /* sorting: by live objects ascending, then by live bytes (largest first) */
  await page.click('#heap-site-table th[data-key="live_objects"]');
  await page.waitForSelector('#heap-site-table th[data-key="live_objects"].sorted.desc');
  await page.click('#heap-site-table th[data-key="live_objects"]');
  await page.waitForSelector('#heap-site-table th[data-key="live_objects"].sorted.asc');
  rows = await heapSites(page);
  let v = rows.map((r) => num(r.live_objects));
  check(v.every((x, i) => i === 0 || v[i - 1] <= x), 'heap: sort by live objects, ascending', v.join(' '));
  await page.click('#heap-site-table th[data-key="live_bytes"]');
  await page.waitForSelector('#heap-site-table th[data-key="live_bytes"].sorted.desc');
  rows = await heapSites(page);
  v = rows.map((r) => num(r.live_bytes));
  check(v.every((x, i) => i === 0 || v[i - 1] >= x) && rows[0].function === exp.leak_function,
    'heap: sort by live bytes: descending, ' + exp.leak_function + ' first', rows.map((r) => r.function).join(' '));

  /* the illegal releases: the double free with both releases' stacks */
  const illegal = await page.$$eval('#heap-illegal > li', (lis) => lis.map((li) => ({
    kind: li.dataset.kind || '',
    text: li.textContent,
    stacks: li.querySelectorAll('ol').length,
  })));
  const df = illegal.filter((x) => x.kind === 'double_free');
  check(df.length === 1 && df[0].text.includes('already released') && df[0].stacks === 3 &&
    df[0].text.includes(exp.release_function), 'heap: the double free, its release, first release and allocation stacks',
  JSON.stringify(illegal));

  /* the growth chart: the whole heap, then leaky's site */
  let pts = await page.$$eval('#heap-growth-svg circle.heap-point', (cs) => cs.map((c) => Number(c.dataset.bytes)));
  check(pts.length === exp.growth_points && pts[pts.length - 1] === exp.live_bytes,
    'heap: growth chart of the whole heap: ' + exp.growth_points + ' points ending at the live bytes',
    pts.length + ' points, last ' + pts[pts.length - 1]);
  const row = await page.$('#heap-site-table tbody tr[data-site="' + exp.leak_site + '"]');
  await row.click();
  await page.waitForSelector('#heap-site-table tbody tr.picked[data-site="' + exp.leak_site + '"]');
  pts = await page.$$eval('#heap-growth-svg circle.heap-point', (cs) => cs.map((c) => Number(c.dataset.bytes)));
  check(pts.length > 1 && pts[pts.length - 1] === exp.leak_bytes && pts.every((x, i) => i === 0 || pts[i - 1] <= x),
    'heap: growth chart of ' + exp.leak_function + ': rising to its live bytes', pts.join(' '));
  await shot(page, 'heap-leaky');

  /* the export buttons: each file downloaded, each from a page of its
   * own (Chromium holds back a tab's eleventh download without asking) */
  for (const f of exp.formats) {
    const tab = await page.context().browser().newPage({ acceptDownloads: true });
    await tab.goto(config.url);
    await tab.waitForSelector('body[data-ready="1"]', { timeout: 20000 });
    const [dl] = await Promise.all([tab.waitForEvent('download', { timeout: 30000 }),
      tab.click('#export-bar a[data-format="' + f + '"]')]);
    const to = path.join(exp.downloads, f);
    await dl.saveAs(to);
    check(fs.existsSync(to) && dl.suggestedFilename().length > 0, 'export button ' + f + ': a file downloaded (' +
      dl.suggestedFilename() + ')');
    await tab.close();
  }

  /* a trace without heap events */
  await page.goto(exp.empty_url);
  await page.waitForSelector('body[data-ready="1"]', { timeout: 20000 });
  await page.click('#tab-heap');
  await page.waitForSelector('#heap-empty:not([hidden])');
  const why = await page.textContent('#heap-empty');
  check(/--memory/.test(why) && await page.isHidden('#heap-body') && await page.isHidden('#export-memory'),
    'heap: a trace without heap events says so', why);
  await shot(page, 'heap-empty');
}

/* ------------------------------------------------------------ a live session's heap */

async function leakRow(page, fn) {
  const rows = await heapSites(page);
  return rows.find((r) => r.function === fn);
}

/* fn's value once it is truthy (polled every 100 ms), or null. */
async function waitValue(fn, timeoutMs) {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    const v = await fn();
    if (v) return v;
    await sleep(100);
  }
  return null;
}

async function scenarioLiveHeap(page) {
  const exp = config.expect;
  await page.goto(config.url);
  await page.waitForSelector('body[data-ready="1"]', { timeout: 20000 });
  await page.click('#tab-heap');
  const first = await waitValue(async () => {
    const r = await leakRow(page, exp.leak_function);
    return r && num(r.live_objects) > 0 ? r : null;
  }, 20000);
  check(first, 'liveheap: the Heap tab shows ' + exp.leak_function + ' with live objects');
  if (!first) return;
  await shot(page, 'live');
  /* the tab follows the session: two updates later, more live objects */
  const n0 = num(first.live_objects);
  const later = await waitValue(async () => {
    const r = await leakRow(page, exp.leak_function);
    return r && num(r.live_objects) > n0 ? r : null;
  }, 15000);
  check(later && num(later.live_bytes) === num(later.live_objects) * exp.leak_size,
    'liveheap: ' + exp.leak_function + "'s live objects grow as updates come, " + exp.leak_size + ' bytes each',
    n0 + ' then ' + (later ? later.live_objects : '?'));
  const pts = await page.$$eval('#heap-growth-svg circle.heap-point', (cs) => cs.map((c) => Number(c.dataset.bytes)));
  check(pts.length >= 2 && pts[pts.length - 1] > pts[0], 'liveheap: the growth chart rises', pts.join(' '));
  await shot(page, 'live-grown');

  /* two snapshots from the control panel's button */
  check(await page.isVisible('#btn-snapshot') && !(await page.isDisabled('#btn-snapshot')),
    'liveheap: the Snapshot button is offered');
  for (const name of ['s1', 's2']) {
    if (name === 's2') {
      const before = num((await leakRow(page, exp.leak_function)).live_objects);
      await waitFor(async () => num((await leakRow(page, exp.leak_function)).live_objects) > before, 15000);
    }
    const [dl] = await Promise.all([page.waitForEvent('download', { timeout: 30000 }), page.click('#btn-snapshot')]);
    await dl.saveAs(path.join(exp.downloads, name));
    check(/^live-\d+\.snapshot$/.test(dl.suggestedFilename()), 'liveheap: snapshot ' + name + ' downloaded as ' +
      dl.suggestedFilename());
  }

  /* the export links work in a live session */
  check(await page.isVisible('#export-memory'), 'liveheap: the heap exports are offered');
  const [dl] = await Promise.all([page.waitForEvent('download', { timeout: 30000 }),
    page.click('#export-bar a[data-format="json"]')]);
  await dl.saveAs(path.join(exp.downloads, 'export-json'));
  check(dl.suggestedFilename() === 'live.report.json', 'liveheap: the JSON export downloaded', dl.suggestedFilename());
}

/* ------------------------------------------------------------ the sync tracks */

async function syState(page) {
  return page.$eval('#sy-status', (s) => ({
    waits: s.dataset.waits === undefined ? -1 : Number(s.dataset.waits), released: Number(s.dataset.released || -1),
    threads: Number(s.dataset.threads || 0), arrows: Number(s.dataset.arrows || 0), text: s.textContent,
  }));
}

async function scenarioSync(page) {
  const exp = config.expect;
  await page.goto(config.url);
  await page.waitForSelector('body[data-ready="1"]', { timeout: 20000 });
  await page.click('#tab-timeline');
  await page.selectOption('#tl-thread', String(exp.thread));
  await waitFor(async () => (await syState(page)).waits >= 0, 15000);
  const sy = await syState(page);
  check(sy.waits === exp.waits && sy.released === exp.released, 'sync tracks: ' + exp.waits + ' waits, ' +
    exp.released + ' with the thread that released them', sy.text);
  check(sy.threads === exp.threads && sy.arrows === exp.arrows, 'sync tracks: ' + exp.threads + ' thread rows, ' +
    exp.arrows + ' release arrows', sy.text);
  check(!(await page.isHidden('#sy-box')) && await inked(page, '#sync-canvas') > 1000, 'sync tracks: drawn');
  /* the first wait's tooltip names the releaser */
  const tip = await page.evaluate(() => {
    const b = (state.sy.boxes || []).find((q) => q.kind === 'wait' && q.s[4] !== null);
    return b ? syTip(b) : '';
  });
  check(/^waited: mutex-lock 0x5000/.test(tip) && /released by worker \d+/.test(tip),
    'sync tracks: a wait\'s tooltip names the thread that released it', tip);
  await shot(page, 'tracks');

  /* the call tree: main_body's waits as its leaves, as tree shows them */
  await page.click('#tab-tree');
  await page.selectOption('#tree-thread', String(exp.thread));
  const body = '#tree-table tbody tr[data-name="main_body"]';
  await page.waitForSelector(body, { timeout: 10000 });
  await page.click(body + ' .toggle');
  await page.waitForSelector(body + '[data-open="1"]', { timeout: 10000 });
  const kids = (await treeRows(page)).filter((r) => r.depth === 1 && /^\[wait\] /.test(r.name))
    .map((r) => r.name + '=' + num(r.calls)).sort();
  check(JSON.stringify(kids) === JSON.stringify(exp.tree_waits), 'call tree: main_body\'s waits as leaves',
    JSON.stringify(kids));
  await shot(page, 'tree');
}

/* ------------------------------------------------------------ the kernel layer */

async function inked(page, sel) {
  return page.$eval(sel, (c) => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 3; i < d.length; i += 4) if (d[i]) n++;
    return n;
  });
}

/* The flow's rows: [{type, depth, text}]. */
async function flowRows(page) {
  return page.$$eval('#flow-table tbody tr', (rows) => rows.map((r) => ({
    type: r.dataset.type, depth: Number(r.dataset.depth), text: r.cells[2].textContent,
  })));
}

async function ktState(page) {
  return page.$eval('#kt-status', (s) => ({
    off: s.dataset.off === undefined ? -1 : Number(s.dataset.off), offS: Number(s.dataset.offS || -1),
    cpus: Number(s.dataset.cpus || 0), arrows: Number(s.dataset.arrows || 0), others: Number(s.dataset.others || 0),
    text: s.textContent,
  }));
}

async function scenarioKernel(page) {
  const exp = config.expect;
  await page.goto(config.url);
  await page.waitForSelector('body[data-ready="1"]', { timeout: 20000 });
  check(!(await page.$eval('#tab-layers', (b) => b.classList.contains('dim'))), 'kernel: the Layers tab is offered');

  /* the layers table: sleeper's switches, sorting */
  await page.click('#tab-layers');
  const row = '#layers-table tbody tr[data-name="' + exp.function + '"]';
  await page.waitForSelector(row, { timeout: 15000 });
  const cells = await page.$eval(row, (r) => [...r.cells].map((c) => c.textContent));
  check(num(cells[8]) === exp.switches, 'layers: ' + exp.function + ' has ' + exp.switches + ' switches',
    cells.join(' | '));
  check(num(cells[1]) === 1 && /ms$/.test(cells[5]), 'layers: one call, its off-CPU time in ms', cells.join(' | '));
  await page.click('#layers-table th[data-key="off_cpu_ns"]');
  await page.waitForSelector('#layers-table th[data-key="off_cpu_ns"].sorted.desc');
  await page.click('#layers-table th[data-key="name"]');
  await page.waitForSelector('#layers-table th[data-key="name"].sorted.asc');
  const names = await page.$$eval('#layers-table tbody tr', (rs) => rs.map((r) => r.dataset.name));
  check(names.length >= 2 && names.every((n, i) => i === 0 || names[i - 1].localeCompare(n) <= 0),
    'layers: sort by name', names.join(' '));
  await page.selectOption('#layers-mode', 'self');
  const threadRows = await page.$$eval('#layers-thread-table tbody tr', (rs) => rs.length);
  const waits = await page.$$eval('#kernel-waits-table tbody tr', (rs) => rs.map((r) => r.textContent));
  check(threadRows >= 1 && waits.some((w) => /nanosleep/.test(w) && /timer/.test(w)),
    'layers: the threads, and the waits in nanosleep woken by the timer', waits.join(' / '));
  await page.selectOption('#layers-mode', 'incl');
  await shot(page, 'layers');

  /* the timeline's kernel tracks: the thread's waits and a CPU track */
  await page.click('#tab-timeline');
  await page.selectOption('#tl-thread', String(exp.thread));
  await waitFor(async () => (await ktState(page)).off >= 0, 15000);
  let kt = await ktState(page);
  check(kt.offS === exp.waits && kt.off >= exp.waits, 'kernel tracks: ' + exp.waits +
    ' off-CPU waits (S) on the thread', kt.text);
  check(kt.cpus >= 1, 'kernel tracks: a CPU track', kt.text);
  check(kt.arrows >= exp.waits, 'kernel tracks: the wake-ups drawn as arrows', kt.text);
  if (exp.others) {
    check(kt.others >= 1 && /slices of other processes \(grey\)/.test(kt.text),
      'kernel tracks: other processes\' slices on the CPU tracks (record --kernel-system)', kt.text);
  }
  check(await inked(page, '#ktrack-canvas') > 1000, 'kernel tracks: drawn');
  await shot(page, 'tracks');

  /* the flow of sleeper#1, from the flat profile */
  await page.click('#tab-profile');
  await page.click('#profile-table tbody tr[data-name="' + exp.function + '"]');
  check(!(await page.isDisabled('#profile-flow')), 'flow: picking a function offers its flow');
  await page.click('#profile-flow');
  await page.waitForSelector('#flow-table tbody tr[data-type="off_cpu"]', { timeout: 20000 });
  const rows = await flowRows(page);
  const offs = rows.map((r, i) => [r, i]).filter(([r]) => r.type === 'off_cpu');
  const under = offs.every(([r, i]) => {
    for (let j = i - 1; j >= 0; j--) {
      if (rows[j].depth < r.depth) return rows[j].depth === r.depth - 1 && rows[j].type === 'syscall' &&
        /^\[sys\] nanosleep\(/.test(rows[j].text);
    }
    return false;
  });
  check(offs.length === exp.waits && under, 'flow of ' + exp.function + '#1: ' + exp.waits +
    ' off-CPU steps, each under a nanosleep', offs.length + ' off-CPU steps: ' + offs.map(([r]) => r.text).join(' / '));
  check(rows[0].type === 'call' && rows[0].text.includes(exp.function + '()') &&
    /off-CPU [\d.]+ ms/.test(await page.textContent('#flow-layers')), 'flow: the call, its time per layer',
  await page.textContent('#flow-layers'));
  await shot(page, 'flow');

  /* the call in the timeline: exactly its waits */
  const before = await page.$eval('#tl-status', (s) => s.dataset.t0);
  await page.click('#flow-timeline');
  await waitFor(async () => (await page.$eval('#tl-status', (s) => s.dataset.t0)) !== before, 10000);
  await waitFor(async () => (await ktState(page)).off === exp.waits, 10000);
  kt = await ktState(page);
  check(kt.off === exp.waits && kt.offS === exp.waits, 'kernel tracks over ' + exp.function + '#1: exactly ' +
    exp.waits + ' off-CPU waits, all S', kt.text);
  await shot(page, 'tracks-call');

  /* the off-CPU flame graph: sleeper's frame */
  await page.click('#tab-offcpu');
  await page.waitForSelector('#offcpu-list li[data-name="' + exp.function + '"]', { state: 'attached', timeout: 15000 });
  const frame = await page.$eval('#offcpu-list li[data-name="' + exp.function + '"]',
    (li) => ({ total: Number(li.dataset.total), count: Number(li.dataset.count) }));
  check(frame.total >= exp.min_offcpu_ns && frame.count === exp.waits, 'off-CPU flame graph: ' + exp.function +
    ' holds >= ' + exp.min_offcpu_ns / 1e6 + ' ms in ' + exp.waits + ' waits', JSON.stringify(frame));
  check(await inked(page, '#offcpu-canvas') > 100, 'off-CPU flame graph: drawn');
  await shot(page, 'offcpu');

  /* a trace without kernel events: the views say so */
  await page.goto(exp.empty_url);
  await page.waitForSelector('body[data-ready="1"]', { timeout: 20000 });
  check(await page.$eval('#tab-layers', (b) => b.classList.contains('dim')) &&
    await page.$eval('#tab-offcpu', (b) => b.classList.contains('dim')), 'no kernel events: the kernel tabs greyed');
  await page.click('#tab-layers');
  await page.waitForSelector('#layers-empty:not([hidden])');
  const why = await page.textContent('#layers-empty');
  await page.click('#tab-offcpu');
  await page.waitForSelector('#offcpu-empty:not([hidden])');
  await page.click('#tab-timeline');
  await page.waitForSelector('#kt-empty:not([hidden])');
  check(/--kernel/.test(why) && await page.isHidden('#ktrack-canvas'), 'no kernel events: the views say why', why);
  await shot(page, 'empty');
}

/* ------------------------------------------------------------ coverage */

/* A node of the Coverage tab's path tree by its path of names from the root. */
function covSelector(names) {
  return '#cov-tree' + names.map((n) => ' > li.cov-node[data-name="' + n + '"]').join(' > ul');
}

async function covNode(page, names) {
  const h = await page.$(covSelector(names));
  if (!h) return null;
  return h.evaluate((li) => ({
    classes: [...li.classList].filter((c) => c.startsWith('cov-') && c !== 'cov-node').sort().join(' '),
    marks: [...li.querySelectorAll(':scope > .cov-line > .cov-mark')].map((m) => m.textContent).join(' '),
    calls: (li.querySelector(':scope > .cov-line > .cov-calls') || { textContent: '' }).textContent,
  }));
}

async function tableRows(page, sel) {
  return page.$$eval(sel + ' tbody tr', (rows) => rows.map((r) => [...r.cells].map((c) => c.textContent)));
}

/* The call tree's greyed rows: [{name, depth}] */
async function treeNeverRows(page) {
  return page.$$eval('#tree-table tbody tr.cov-never', (rows) => rows.map((r) => ({
    name: r.dataset.name,
    depth: Number(r.dataset.depth),
    text: r.cells[0].textContent,
    after: r.previousElementSibling ? r.previousElementSibling.dataset.name : null,
  })));
}

async function scenarioCoverage(page) {
  const exp = config.expect;
  if (exp.left_out) failuresExpected.add('/api/coverage');
  await page.goto(config.url);
  await page.waitForSelector('body[data-ready="1"]', { timeout: 20000 });
  await page.click('#tab-coverage');
  if (exp.left_out) {
    /* a layerprof built without capstone */
    await page.waitForSelector('#cov-empty.err:not([hidden])', { timeout: 30000 });
    const why = await page.textContent('#cov-empty');
    check(/left out/.test(why) && /capstone/.test(why), 'coverage without capstone: the tab says it was left out', why);
    return;
  }
  await page.waitForSelector('#cov-total', { timeout: 30000 });
  await shot(page, 'coverage');

  /* the table: the object and the total, exactly as coverage --format json says */
  const rows = await tableRows(page, '#cov-table');
  check(JSON.stringify(rows) === JSON.stringify(exp.table), 'coverage: the table (object and total rows)',
    JSON.stringify(rows) + ' vs ' + JSON.stringify(exp.table));
  const total = await page.$$eval('#cov-total td', (cs) => cs.map((c) => c.textContent));
  check(total[2] === exp.functions_percent && total[4] === exp.calls_percent,
    'coverage: total ' + exp.functions_percent + ' of the functions, ' + exp.calls_percent + ' of the calls',
    JSON.stringify(total));

  /* the path tree: the paths that ran are open and marked */
  const want = [
    [['main'], 'cov-run', '', '(1 call)'],
    [['main', 'sort_some'], 'cov-run', '', '(1 call)'],
    [['main', 'never_called'], 'cov-never', '', ''],
    [['main', 'fact'], 'cov-run', '', '(1 call)'],
    [['main', 'fact', 'fact'], 'cov-run', '[recursive]', '(1 call)'],
    [['main', 'sort_some', 'qsort@plt'], 'cov-untraced', '', ''],
  ];
  for (const [names, cls, marks, calls] of want) {
    const n = await covNode(page, names);
    check(n && n.classes === cls && n.marks === marks && n.calls === calls,
      'coverage path tree: ' + names.join(' > ') + ' is ' + cls + (marks ? ' ' + marks : '') + (calls ? ' ' + calls : ''),
      JSON.stringify(n));
  }
  check(!(await page.$(covSelector(['main', 'never_called', 'tiny_unused']))),
    'coverage path tree: a path that never ran stays folded');
  await page.click(covSelector(['main', 'never_called']) + ' > .cov-line > .toggle');
  const tiny = await covNode(page, ['main', 'never_called', 'tiny_unused']);
  check(tiny && tiny.classes === 'cov-never', 'coverage path tree: opening never_called shows tiny_unused, never run',
    JSON.stringify(tiny));
  await shot(page, 'coverage-open');

  /* never run, largest first; the calls outside the static graph */
  const never = await tableRows(page, '#cov-never-table');
  check(never.length === exp.never.length && never.every((r, i) => r[1] === exp.never[i]) &&
    never[0][1] === 'never_called', 'coverage: never run, largest first: ' + exp.never.join(', '),
  JSON.stringify(never));
  const dyn = await tableRows(page, '#cov-dyn-table');
  check(JSON.stringify(dyn) === JSON.stringify(exp.dynamic), 'coverage: calls outside the static graph: ' +
    JSON.stringify(exp.dynamic), JSON.stringify(dyn));

  /* the call tree: main's static callee that never ran, greyed, behind the box */
  await page.click('#tab-tree');
  await page.waitForSelector('#tree-table tbody tr[data-name="main"]');
  check(!(await page.isChecked('#tree-never')), 'call tree: "show never-run callees" is off by default');
  await page.click('#tree-table tbody tr[data-name="main"] .toggle');
  await page.waitForSelector('#tree-table tbody tr[data-name="main"][data-open="1"]');
  await page.waitForSelector('#tree-table tbody tr[data-depth="1"]');
  check((await treeNeverRows(page)).length === 0, 'call tree: no greyed callees while the box is off');
  await page.check('#tree-never');
  await page.waitForSelector('#tree-table tbody tr.cov-never', { timeout: 15000 });
  let grey = await treeNeverRows(page);
  check(grey.length === 1 && grey[0].name === 'never_called' && grey[0].depth === 1 &&
    grey[0].text.endsWith('never_called'), 'call tree: the box adds main\'s never-run callee never_called, greyed, under main',
  JSON.stringify(grey));
  const kids = await page.$$eval('#tree-table tbody tr[data-depth="1"]:not(.cov-never)', (rs) =>
    rs.map((r) => r.dataset.name).sort());
  check(JSON.stringify(kids) === JSON.stringify(['fact', 'sort_some']), 'call tree: main\'s calls are still there',
    JSON.stringify(kids));
  await shot(page, 'coverage-tree');
  await page.uncheck('#tree-never');
  await page.waitForFunction(() => !document.querySelector('#tree-table tbody tr.cov-never'), null, { timeout: 10000 });
  check(true, 'call tree: unticking the box takes the greyed callee away');

  check(await page.isHidden('#cov-damage'), 'coverage: no damage said of a whole trace');

  /* a damaged trace: its readable part, and the damage said */
  await page.goto(exp.damaged_url);
  await page.waitForSelector('body[data-ready="1"]', { timeout: 20000 });
  await page.click('#tab-coverage');
  await page.waitForSelector('#cov-damage:not([hidden])', { timeout: 30000 });
  const dmg = await page.textContent('#cov-damage');
  check(/is damaged/.test(dmg) && await page.isVisible('#cov-total') &&
    !!(await page.$(covSelector(['main']))), 'coverage of a damaged trace: the figures, with the damage said', dmg);

  /* a trace whose binary is gone: the tab says which and why (the
   * answer is a 404) */
  failuresExpected.add('/api/coverage');
  await page.goto(exp.gone_url);
  await page.waitForSelector('body[data-ready="1"]', { timeout: 20000 });
  await page.click('#tab-coverage');
  await page.waitForSelector('#cov-empty.err:not([hidden])', { timeout: 30000 });
  const why = await page.textContent('#cov-empty');
  check(why.includes("cannot read '" + exp.gone_binary + "'") && await page.isHidden('#cov-body'),
    'coverage of a trace whose binary is gone: the tab says it cannot read it', why);
  await shot(page, 'coverage-gone');
}

(async () => {
  const args = ['--disable-gpu', '--disable-dev-shm-usage'];
  if (process.getuid && process.getuid() === 0) args.push('--no-sandbox');
  const browser = await chromium.launch({ executablePath: config.chromium, headless: true, args });
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => {
    if (m.type() === 'error' && !/favicon/.test(m.text()) && !expectedFailure(m)) errors.push(m.text());
  });
  page.setDefaultTimeout(15000);
  try {
    if (config.scenario === 'trace') await scenarioTrace(page);
    else if (config.scenario === 'lost') await scenarioLost(page);
    else if (config.scenario === 'live') await scenarioLive(page);
    else if (config.scenario === 'launch') await scenarioLaunch(page);
    else if (config.scenario === 'heap') await scenarioHeap(page);
    else if (config.scenario === 'liveheap') await scenarioLiveHeap(page);
    else if (config.scenario === 'livetl') await scenarioLiveTimeline(page);
    else if (config.scenario === 'kernel') await scenarioKernel(page);
    else if (config.scenario === 'coverage') await scenarioCoverage(page);
    else if (config.scenario === 'sync') await scenarioSync(page);
    else check(false, 'scenario ' + config.scenario);
  } catch (e) {
    check(false, config.scenario + ': ' + e.message.split('\n')[0]);
    await shot(page, 'failure-' + config.scenario).catch(() => {});
  }
  check(!errors.length, config.scenario + ': no script errors in the page', errors.join(' | '));
  await browser.close();
  console.log(passed + ' passed, ' + failed + ' failed');
  process.exit(failed ? 1 : 0);
})();
