/* layerprof web UI: the Counters tab (GET /api/counters, a trace recorded
 * with --counters).  Loaded before app.js, whose helpers ($, api, el, td,
 * fmtCount, showError) and grid.js's it calls once the page runs; app.js calls
 * setupCounters, setCountersTab and loadCounters.  The program, per-CPU
 * and thread tables are sorted here; the function rows by the server
 * (sort=, dir=), as they may be many. */
'use strict';

const ctrState = {
  data: null,     /* the last answer */
  sort: null,     /* {key, dir} of the function rows; null: the server's default */
  perThread: false,
  text: '',
  cpuSort: { key: 'cpu', dir: 'asc' },
  threadSort: { key: 'tid', dir: 'asc' },
  seq: 0,
};

const CTR_ROWS = 2000; /* function rows asked for; the filter finds the others */

/* A metric's value as report --counters prints it: ratios in percent. */
function ctrMetricText(kind, x) {
  if (x === null || x === undefined) return '-';
  return kind === 'ratio' ? (100 * x).toFixed(2) + '%' : x.toFixed(3);
}

/* The tab is there only when the trace has counter values. */
function setCountersTab(s) {
  $('tab-counters').hidden = !s.counters;
}

function ctrQuery() {
  const p = new URLSearchParams();
  if (ctrState.sort) {
    p.set('sort', ctrState.sort.key);
    p.set('dir', ctrState.sort.dir);
  }
  if (ctrState.perThread) p.set('per_thread', '1');
  if (ctrState.text) p.set('q', ctrState.text);
  p.set('limit', String(CTR_ROWS));
  return 'counters?' + p.toString();
}

/* The multiplexing notes of one value set: who names whose values. */
function ctrScaleNotes(c, v, who, out) {
  if (!v.scale) {
    if (v.scaled) out.push(who + ': values were scaled (a counter was multiplexed)');
    return;
  }
  for (const name of c.counters) {
    const x = v.scale[name];
    if (x === 0) out.push(who + ': ' + name + ' was not counted (enabled ' + fmtCount(v.enabled_ns[name]) +
      ' ns, running 0): its value means nothing');
    else if (x !== 1) out.push(who + ': ' + name + ' was multiplexed: counted ' + (100 / x).toFixed(1) +
      '% of the time enabled, its value scaled x' + x.toFixed(2));
  }
}

const CTR_READ = {
  rdpmc: 'rdpmc (in user space, no system call)',
  read: 'read(2) (a system call at each function entry and exit)',
  none: 'none (no values at function entry and exit: program and threads only)',
};

function ctrFacts(c) {
  const ul = $('ctr-facts');
  ul.textContent = '';
  const li = (cls, text) => {
    const x = el('li', cls, text);
    ul.append(x);
    return x;
  };
  li('ctr-set', 'Counters: ' + c.counters.join(', ') + ' — ' + fmtCount(c.counter_records) + ' counter records');
  for (const u of c.unavailable) {
    const x = li('ctr-unavailable', 'Unavailable: ' + u.name + ': ' + (u.reason || '(no reason given)'));
    x.dataset.name = u.name;
  }
  if (c.read) li('ctr-read', 'Read at function entry and exit: ' + (CTR_READ[c.read] || c.read));
  if (c.scope === 'user') li('ctr-scope', 'Counted in user space only (perf_event_paranoid): the kernel\'s part is left out');
  if (c.scaled_records) li('ctr-scaled', 'Scaled values in ' + fmtCount(c.scaled_records) +
    ' of the records: a counter was multiplexed');
  const notes = [];
  if (c.program) ctrScaleNotes(c, c.program, 'program', notes);
  for (const t of c.threads) {
    if (!t.has_end) notes.push('thread ' + t.tid + ': its end was not recorded: values up to its last record');
    ctrScaleNotes(c, t, 'thread ' + t.tid, notes);
  }
  for (const n of notes) li('ctr-note', n);
  const lo = c.left_out;
  const says = [
    [lo.unmatched_exits, 'exits without an open call of their function: left out'],
    [lo.unwound_calls, 'calls left by a longjmp: no counts of their own, their callers\' self holds them'],
    [lo.open_at_end, 'calls still open when their thread\'s values ended: ended with those values'],
    [lo.deep_calls, 'calls too deep to follow: left out'],
    [lo.function_calls_over_cap, 'calls of functions over the cap: left out'],
    [lo.thread_records_over_cap, 'records of threads over the cap: left out'],
    [lo.cpu_records_over_cap, 'records of CPUs over the cap: left out'],
    [lo.malformed_records, 'malformed counter records: left out'],
    [c.lost_events, 'events lost: the numbers are incomplete'],
  ];
  for (const [n, text] of says) if (n) li('ctr-note', fmtCount(n) + ' ' + text);
  $('ctr-damage').textContent = c.damage ? 'The trace is damaged: ' + c.damage +
    '. The counters cover the readable part.' : '';
  $('ctr-damage').hidden = !c.damage;
}

function ctrProgram(c) {
  const body = $('ctr-program-table').tBodies[0];
  body.textContent = '';
  $('ctr-program-source').textContent = !c.program ? '' : c.program.source === 'process' ?
    'the recorder\'s totals of the program, its threads and children' : 'the sum of its threads\' values';
  if (!c.program) {
    const tr = el('tr');
    tr.append(td('no values', 'text muted'), td(''));
    body.append(tr);
    return;
  }
  for (const name of c.counters) {
    const tr = el('tr');
    tr.dataset.name = name;
    tr.append(td(name, 'text'), td(fmtCount(c.program.values[name])));
    body.append(tr);
  }
  for (const m of c.metrics) {
    const tr = el('tr', 'metric');
    tr.dataset.name = m.name;
    tr.append(td(m.name, 'text'), td(ctrMetricText(m.kind, c.program.derived[m.name])));
    body.append(tr);
  }
}

function ctrCountCols(c, of) {
  return c.counters.map((name) => ({ key: 'v:' + name, label: name, value: (r) => of(r)[name],
    show: (r) => fmtCount(of(r)[name]) }));
}

function ctrMetricCols(c, of) {
  return c.metrics.map((m) => ({ key: 'm:' + m.name, label: m.name,
    value: (r) => of(r)[m.name],
    show: (r) => ctrMetricText(m.kind, of(r)[m.name]) }));
}

function ctrLocalTables(c) {
  const cpuCols = [{ key: 'cpu', label: 'CPU', value: (r) => r.cpu, show: (r) => String(r.cpu) }]
    .concat(ctrCountCols(c, (r) => r.values));
  $('ctr-cpu-part').hidden = !c.cpus.length;
  gridLocal($('ctr-cpu-table'), cpuCols, c.cpus, ctrState, 'cpuSort');
  const thCols = [
    { key: 'tid', label: 'Thread', value: (r) => r.tid, show: (r) => String(r.tid) },
    { key: 'pid', label: 'Process', value: (r) => r.pid, show: (r) => String(r.pid) },
    { key: 'comm', label: 'Comm', text: true, value: (r) => r.comm, show: (r) => r.comm },
  ].concat(ctrCountCols(c, (r) => r.values), ctrMetricCols(c, (r) => r.derived));
  gridLocal($('ctr-thread-table'), thCols, c.threads, ctrState, 'threadSort');
}

/* The function rows as the server sorted them; a column click asks again. */
function ctrFunctions(c) {
  const cols = [{ key: 'name', label: 'Function', text: true, show: (r) => r.name }];
  if (c.per_thread) cols.push({ key: '', label: 'Thread', show: (r) => String(r.tid) });
  cols.push({ key: 'calls', label: 'Calls', show: (r) => fmtCount(r.calls) });
  for (const name of c.counters) {
    cols.push({ key: 'incl:' + name, label: 'incl:' + name, show: (r) => fmtCount(r.inclusive[name]) });
    cols.push({ key: 'self:' + name, label: 'self:' + name, show: (r) => fmtCount(r.self[name]) });
  }
  for (const m of c.metrics) cols.push({ key: m.name, label: m.name, show: (r) => ctrMetricText(m.kind, r.derived[m.name]) });
  const body = gridTable($('ctr-fn-table'), cols, c.functions, { key: c.sort, dir: c.dir }, (col) => {
    const s = ctrState.sort || { key: c.sort, dir: c.dir };
    if (s.key === col.key) ctrState.sort = { key: col.key, dir: s.dir === 'desc' ? 'asc' : 'desc' };
    else ctrState.sort = { key: col.key, dir: col.key === 'name' ? 'asc' : 'desc' };
    loadCounters().catch(showError);
  });
  c.functions.forEach((r, i) => {
    body.rows[i].dataset.name = r.name;
    if (r.unwound) body.rows[i].title = fmtCount(r.unwound) + ' calls left by longjmp';
  });
  const shown = c.functions.length;
  $('ctr-fn-info').textContent = fmtCount(c.total_functions) + (c.q ? ' matching' : '') + ' functions' +
    (shown < c.total_functions ? ', the first ' + fmtCount(shown) + ' shown' : '');
}

async function loadCounters() {
  const seq = ++ctrState.seq;
  const c = await api(ctrQuery());
  if (seq !== ctrState.seq) return; /* a later question is on its way */
  if (!c.has_counters) {
    $('ctr-empty').textContent = c.reason;
    $('ctr-empty').hidden = false;
    $('ctr-body').hidden = true;
    return;
  }
  ctrState.data = c;
  $('ctr-empty').hidden = true;
  $('ctr-body').hidden = false;
  ctrFacts(c);
  ctrProgram(c);
  ctrLocalTables(c);
  ctrFunctions(c);
}

function setupCounters() {
  $('ctr-per-thread').addEventListener('change', () => {
    ctrState.perThread = $('ctr-per-thread').checked;
    loadCounters().catch(showError);
  });
  let timer = null;
  $('ctr-filter').addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      ctrState.text = $('ctr-filter').value.trim();
      loadCounters().catch(showError);
    }, 200);
  });
}
