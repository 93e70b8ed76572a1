/* layerprof web UI: the Sync tab (GET /api/sync, a trace recorded with
 * --sync): the document of report --sync --format json, asked for once
 * (the server reads the trace on the first request and keeps it), its
 * tables sorted here by a click on a column.  Loaded before app.js, whose
 * helpers ($, api, el, fmtCount, fmtNs) and grid.js's it calls once the
 * page runs; app.js calls setSyncTab and loadSync. */
'use strict';

const syncState = {
  data: null,
  locks: { key: 'wait_ns', dir: 'desc' },
  uses: { key: 'wait_ns', dir: 'desc' },
  waitables: { key: 'wait_ns', dir: 'desc' },
  threads: { key: 'wait_ns', dir: 'desc' },
  pairs: { key: 'share', dir: 'desc' },
  joins: { key: 'wait_ns', dir: 'desc' },
  top: { key: 'wait_ns', dir: 'desc' },
};

const SYNC_KINDS = ['mutex', 'rwlock', 'spinlock', 'cond', 'semaphore', 'barrier', 'join', 'futex'];

/* The tab is there only when the trace has sync events. */
function setSyncTab(s) {
  $('tab-sync').hidden = !s.sync;
}

function syncPct(x) {
  return (100 * x).toFixed(1) + '%';
}

/* Columns of numbers: [key, label, the row's value, shown as a time]. */
function syncNumCols(list) {
  return list.map(([key, label, value, ns]) => ({ key, label, value,
    show: (r) => (ns ? fmtNs(value(r)) : fmtCount(value(r))) }));
}

function syncFacts(d) {
  const ul = $('sync-facts');
  ul.textContent = '';
  const li = (cls, text) => ul.append(el('li', cls, text));
  li('sync-ops', fmtCount(d.operations) + ' operations: ' + d.locks.length + ' locks, ' + d.conditions.length +
    ' conditions and semaphores, ' + d.barriers.length + ' barriers, ' + d.threads.length + ' threads');
  if (d.late_operations) li('sync-note', fmtCount(d.late_operations) +
    ' operations came after a later one had been applied: who released what may be off for them');
  if (d.futex_waits) li('sync-note', fmtCount(d.futex_waits) + ' futex waits of other code (' +
    fmtCount(d.futex_waits_inside_operations) + ' inside interposed operations, not counted again)');
  if (d.malformed_sync_events) li('sync-note', fmtCount(d.malformed_sync_events) + ' malformed sync events: left out');
  if (d.lost_events) li('sync-note', fmtCount(d.lost_events) + ' events lost: the numbers are incomplete');
  for (const [k, n] of Object.entries(d.overflow)) if (n) li('sync-note', fmtCount(n) + ' ' + k.replace(/_/g, ' ') +
    ' over the bounds: left out');
  $('sync-damage').textContent = d.damage ? 'The trace is damaged: ' + d.damage +
    '. The figures cover the readable part.' : '';
  $('sync-damage').hidden = !d.damage;
}

function syncTables(d) {
  const site = { key: 'first_site', label: 'First at', text: true, value: (r) => r.first_site || '',
    show: (r) => r.first_site || '?' };
  const avg = (r) => (r.waits ? Math.round(r.wait_ns / r.waits) : 0);
  gridLocal($('sync-lock-table'), [
    { key: 'name', label: 'Lock', text: true, value: (r) => r.name, show: (r) => r.name },
    { key: 'kind', label: 'Kind', text: true, value: (r) => r.kind, show: (r) => r.kind },
  ].concat(syncNumCols([
    ['acquisitions', 'Acquired', (r) => r.acquisitions], ['contended', 'Contended', (r) => r.contended],
    ['failed', 'Failed', (r) => r.try_failures + r.failures], ['waits', 'Waits', (r) => r.waits],
    ['wait_ns', 'Wait', (r) => r.wait_ns, true], ['avg_ns', 'Avg wait', avg, true],
    ['wait_max_ns', 'Max wait', (r) => r.wait_max_ns, true], ['wait_p99_ns', 'p99 wait', (r) => r.wait_p99_ns, true],
    ['holds', 'Holds', (r) => r.holds], ['hold_ns', 'Hold', (r) => r.hold_ns, true],
    ['hold_max_ns', 'Max hold', (r) => r.hold_max_ns, true],
  ]), [site]), d.locks, syncState, 'locks');

  const uses = [];
  for (const l of d.locks) for (const t of l.threads) uses.push(Object.assign({ lock: l.name }, t));
  gridLocal($('sync-use-table'), [
    { key: 'lock', label: 'Lock', text: true, value: (r) => r.lock, show: (r) => r.lock },
    { key: 'tid', label: 'Thread', value: (r) => r.tid, show: (r) => String(r.tid) },
  ].concat(syncNumCols([
    ['acquisitions', 'Acquired', (r) => r.acquisitions], ['waits', 'Waits', (r) => r.waits],
    ['wait_ns', 'Wait', (r) => r.wait_ns, true], ['wait_max_ns', 'Max wait', (r) => r.wait_max_ns, true],
    ['holds', 'Holds', (r) => r.holds], ['hold_ns', 'Hold', (r) => r.hold_ns, true],
  ])), uses, syncState, 'uses');

  const signals = (r) => (r.kind === 'cond' ? r.signals + r.broadcasts : r.kind === 'semaphore' ? r.posts :
    r.kind === 'futex' ? r.wakes : 0);
  const who = (list, n) => list.map((x) => x.tid + ' (' + fmtCount(n(x)) + ')').join(', ');
  gridLocal($('sync-wait-table'), [
    { key: 'name', label: 'Object', text: true, value: (r) => r.name, show: (r) => r.name },
    { key: 'kind', label: 'Kind', text: true, value: (r) => r.kind, show: (r) => r.kind },
  ].concat(syncNumCols([
    ['calls', 'Calls', (r) => r.calls], ['waits', 'Waits', (r) => r.waits], ['wait_ns', 'Wait', (r) => r.wait_ns, true],
    ['wait_max_ns', 'Max wait', (r) => r.wait_max_ns, true], ['wait_p99_ns', 'p99 wait', (r) => r.wait_p99_ns, true],
    ['timeouts', 'Timed out', (r) => r.timeouts], ['signals', 'Signals / posts', signals],
  ]), [
    { key: 'waiters', label: 'Waiters (waits)', text: true, value: (r) => who(r.waiters, (x) => x.waits),
      show: (r) => who(r.waiters, (x) => x.waits) },
    { key: 'signallers', label: 'Signallers', text: true, value: (r) => who(r.signallers || [], (x) => x.count),
      show: (r) => who(r.signallers || [], (x) => x.count) },
    site,
  ]), d.conditions.concat(d.barriers, d.futexes), syncState, 'waitables');

  gridLocal($('sync-thread-table'), [
    { key: 'tid', label: 'Thread', value: (r) => r.tid, show: (r) => String(r.tid) },
    { key: 'comm', label: 'Comm', text: true, value: (r) => r.comm, show: (r) => r.comm },
  ].concat(syncNumCols([['operations', 'Operations', (r) => r.operations], ['wait_ns', 'Wait', (r) => r.wait_ns, true]]),
  [{ key: 'wait_share', label: 'Wait %', value: (r) => r.wait_share, show: (r) => syncPct(r.wait_share) }],
  syncNumCols(SYNC_KINDS.map((k) => [k, k, (r) => r.waits_by_kind[k].wait_ns, true])), syncNumCols([
    ['acquisitions', 'Acquired', (r) => r.acquisitions], ['hold_ns', 'Hold', (r) => r.hold_ns, true],
    ['signals', 'Signals', (r) => r.signals], ['posts', 'Posts', (r) => r.posts], ['creates', 'Created', (r) => r.creates],
  ])), d.threads, syncState, 'threads');

  const pairs = $('sync-pairs');
  pairs.textContent = '';
  for (const p of d.pairs) pairs.append(el('li', 'sync-pair', p.text + ' — through ' + p.objects.join(', ')));
  if (!d.pairs.length) pairs.append(el('li', 'muted', 'no producer/consumer pair of threads'));
  gridLocal($('sync-pair-table'), [
    { key: 'producers', label: 'Producers', text: true, value: (r) => r.producers.join(', '),
      show: (r) => r.producers.join(', ') },
    { key: 'consumers', label: 'Consumers', text: true, value: (r) => r.consumers.join(', '),
      show: (r) => r.consumers.join(', ') },
  ].concat(syncNumCols([
    ['span_ns', 'Span', (r) => r.span_ns, true], ['producer_wait_ns', 'Producers wait', (r) => r.producer_wait_ns, true],
    ['consumer_wait_ns', 'Consumers wait', (r) => r.consumer_wait_ns, true],
  ]), [
    { key: 'producer_share', label: 'Producers %', value: (r) => r.producer_share, show: (r) => syncPct(r.producer_share) },
    { key: 'consumer_share', label: 'Consumers %', value: (r) => r.consumer_share, show: (r) => syncPct(r.consumer_share) },
    { key: 'share', label: 'Slow side', text: true, value: (r) => Math.max(r.producer_share, r.consumer_share),
      show: (r) => r.slow },
  ]), d.pairs, syncState, 'pairs');
  $('sync-pair-table').hidden = !d.pairs.length;

  $('sync-join-part').hidden = !d.joins.length;
  gridLocal($('sync-join-table'), [
    { key: 'tid', label: 'Thread', value: (r) => r.tid, show: (r) => String(r.tid) },
    { key: 'joined', label: 'Joined', value: (r) => r.joined_tid, show: (r) => (r.joined_tid === null ? r.pthread :
      String(r.joined_tid)) },
    { key: 'wait_ns', label: 'Wait', value: (r) => r.wait_ns, show: (r) => fmtNs(r.wait_ns) },
    { key: 'failed', label: 'Failed', value: (r) => (r.failed ? 1 : 0), show: (r) => (r.failed ? 'yes' : '') },
  ], d.joins, syncState, 'joins');

  gridLocal($('sync-top-table'), [
    { key: 'wait_ns', label: 'Wait', value: (r) => r.wait_ns, show: (r) => fmtNs(r.wait_ns) },
    { key: 'tid', label: 'Thread', value: (r) => r.tid, show: (r) => String(r.tid) },
    { key: 'kind', label: 'Kind', text: true, value: (r) => r.kind, show: (r) => r.kind },
    { key: 'object', label: 'Object', text: true, value: (r) => r.object, show: (r) => r.object },
    { key: 'waker_tid', label: 'Ended by', value: (r) => r.waker_tid,
      show: (r) => (r.waker_tid === null ? '' : String(r.waker_tid)) },
  ], d.longest_waits, syncState, 'top');
}

async function loadSync() {
  if (!syncState.data) {
    const d = await api('sync');
    if (!d.has_sync) {
      $('sync-empty').textContent = d.reason;
      $('sync-empty').hidden = false;
      $('sync-body').hidden = true;
      return;
    }
    syncState.data = d;
  }
  $('sync-empty').hidden = true;
  $('sync-body').hidden = false;
  syncFacts(syncState.data);
  syncTables(syncState.data);
}
