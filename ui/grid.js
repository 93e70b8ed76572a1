/* layerprof web UI: tables built from a list of columns and sorted in the
 * page by a click on a column (again: the other way), for the Counters
 * and Sync tabs.  Loaded before app.js, whose helpers (el, td) it calls
 * once the page runs. */
'use strict';

/* Fills table (its thead's first row and its first tbody) from rows.
 * cols: [{key, label, text (a left-aligned text column), show(row) -> text,
 * value(row) -> what it sorts by, title}]; a column without key does not
 * sort.  sort: {key, dir} marks the sorted column; onSort(col) is called
 * on a click.  Returns the tbody, its rows in the order of rows. */
function gridTable(table, cols, rows, sort, onSort) {
  const head = table.tHead.rows[0];
  head.textContent = '';
  for (const col of cols) {
    const th = el('th', col.text ? 'text' : '', col.label);
    th.dataset.key = col.key || '';
    if (col.title) th.title = col.title;
    if (sort && col.key && sort.key === col.key) th.classList.add('sorted', sort.dir);
    if (onSort && col.key) th.addEventListener('click', () => onSort(col));
    head.append(th);
  }
  const body = table.tBodies[0];
  body.textContent = '';
  for (const r of rows) {
    const tr = el('tr');
    for (const col of cols) tr.append(td(col.show(r), col.text ? 'text' : ''));
    body.append(tr);
  }
  return body;
}

/* rows sorted by the value of sort.key's column (null sorts lowest); ties
 * keep their order. */
function gridSorted(cols, rows, sort) {
  const col = cols.find((x) => x.key === sort.key);
  if (!col) return rows;
  const v = rows.map((r, i) => ({ r, i, x: col.value(r) }));
  v.sort((a, b) => {
    const x = a.x === null || a.x === undefined ? -Infinity : a.x;
    const y = b.x === null || b.x === undefined ? -Infinity : b.x;
    const c = typeof x === 'string' && typeof y === 'string' ? x.localeCompare(y) : (x < y ? -1 : x > y ? 1 : 0);
    return (sort.dir === 'asc' ? c : -c) || a.i - b.i;
  });
  return v.map((e) => e.r);
}

/* The sort after a click on col: the other way on the sorted column, else
 * that column, text alphabetical, numbers largest first. */
function gridFlip(sort, col) {
  if (sort.key === col.key) return { key: col.key, dir: sort.dir === 'desc' ? 'asc' : 'desc' };
  return { key: col.key, dir: col.text ? 'asc' : 'desc' };
}

/* A sortable table kept in holder[name] ({key, dir}): drawn now and again
 * after each click. */
function gridLocal(table, cols, rows, holder, name) {
  gridTable(table, cols, gridSorted(cols, rows, holder[name]), holder[name], (col) => {
    holder[name] = gridFlip(holder[name], col);
    gridLocal(table, cols, rows, holder, name);
  });
}
