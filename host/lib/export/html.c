/* The report as one self-contained HTML page (see export/html.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/lib/export/html.h"
#include "host/lib/util/escape.h"
#include "host/lib/util/names.h"
#include "host/lib/util/options.h"
#include "layerprof/format.h"

static const char html_head[] =
    "<!DOCTYPE html>\n"
    "<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
    "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
    "script-src 'unsafe-inline'\">\n"
    "<meta name=\"generator\" content=\"layerprof\">\n"
    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";

static const char html_style[] =
    "<style>\n"
    "body{font-family:system-ui,sans-serif;margin:1em 2em;color:#222;background:#fff}\n"
    "h1{font-size:1.4em}h2{font-size:1.2em;margin-top:1.6em}h3{font-size:1em;margin:1.2em 0 .3em}\n"
    ".meta{color:#555}.banner{padding:.6em 1em;margin:.8em 0;border-radius:4px;font-weight:bold}\n"
    ".lost{background:#fde2e1;border:1px solid #d33;color:#900}.warn{background:#fff4d6;border:1px solid #d9a400}\n"
    "table{border-collapse:collapse;font-size:.9em}th,td{padding:.15em .6em;text-align:right;white-space:nowrap}\n"
    "th{background:#eee;cursor:pointer;user-select:none;position:sticky;top:0}\n"
    "th[aria-sort=descending]::after{content:\" \\25BE\"}th[aria-sort=ascending]::after{content:\" \\25B4\"}\n"
    "td.name,th.name{text-align:left}tbody tr:nth-child(even){background:#f7f7f7}\n"
    "td,.num{font-variant-numeric:tabular-nums}.name{font-family:ui-monospace,monospace}\n"
    ".tree{font-size:.9em}.row{display:flex;gap:.8em;padding:.05em 0;cursor:default}\n"
    ".row:hover{background:#eef4ff}.row .num{width:7.5em;text-align:right;flex:none}\n"
    ".tog{display:inline-block;width:1.2em;color:#555}.row:has(.tog:not(:empty)){cursor:pointer}\n"
    ".hdr{font-weight:bold;background:#eee}.sys .name{color:#06c}.kern .name{color:#2e7d32}.err{color:#c00}\n"
    "button{margin-right:.5em}\n"
    ".chart{max-width:60em;width:100%;height:auto;border:1px solid #ccc}.chart text{font-size:11px;fill:#555}\n"
    ".chart polyline{fill:none;stroke:#c33;stroke-width:1.5}.stack{margin:.2em 0 .6em 1.5em;font-size:.85em}\n"
    "</style>\n";

/* Sortable tables, and call trees drawn from the JSON in #tree-data:
 * per thread a flat array of 6 numbers a node (depth, name index, calls,
 * total ns, self ns, and a system call's errors, -1 for a function or -2
 * for a kernel event) in depth-first order. */
static const char html_script[] =
    "<script>\n"
    "(function () {\n"
    "\"use strict\";\n"
    "function fmt(ns) {\n"
    "  if (ns < 1000) return ns + \" ns\";\n"
    "  if (ns < 1e6) return (ns / 1e3).toFixed(3) + \" us\";\n"
    "  if (ns < 999999500) return (ns / 1e6).toFixed(3) + \" ms\";\n"
    "  return (ns / 1e9).toFixed(3) + \" s\";\n"
    "}\n"
    "function el(tag, cls, text) {\n"
    "  var e = document.createElement(tag);\n"
    "  if (cls) e.className = cls;\n"
    "  if (text !== undefined) e.textContent = text;\n"
    "  return e;\n"
    "}\n"
    "Array.prototype.forEach.call(document.querySelectorAll(\"table.sortable\"), function (t) {\n"
    "  var ths = t.tHead.rows[0].cells;\n"
    "  Array.prototype.forEach.call(ths, function (th, col) {\n"
    "    th.addEventListener(\"click\", function () {\n"
    "      var num = th.getAttribute(\"data-type\") === \"num\";\n"
    "      var cur = th.getAttribute(\"aria-sort\");\n"
    "      var desc = cur ? cur === \"ascending\" : num;\n"
    "      var body = t.tBodies[0], rows = Array.prototype.slice.call(body.rows);\n"
    "      rows.sort(function (a, b) {\n"
    "        var x = a.cells[col], y = b.cells[col];\n"
    "        var c = num ? Number(x.getAttribute(\"data-v\")) - Number(y.getAttribute(\"data-v\"))\n"
    "                    : x.textContent.localeCompare(y.textContent);\n"
    "        return desc ? -c : c;\n"
    "      });\n"
    "      rows.forEach(function (r) { body.appendChild(r); });\n"
    "      Array.prototype.forEach.call(ths, function (h) { h.removeAttribute(\"aria-sort\"); });\n"
    "      th.setAttribute(\"aria-sort\", desc ? \"descending\" : \"ascending\");\n"
    "    });\n"
    "  });\n"
    "});\n"
    "var src = document.getElementById(\"tree-data\");\n"
    "if (!src) return;\n"
    "var data = JSON.parse(src.textContent), names = data.names;\n"
    "var EXPAND_ALL_MAX = 20000;\n"
    "data.threads.forEach(function (n, k) {\n"
    "  var box = document.getElementById(\"tree-\" + k), count = n.length / 6;\n"
    "  var children = [[]], stack = [0], i;\n"
    "  for (i = 0; i < count; i++) {\n"
    "    var d = n[6 * i];\n"
    "    children[stack[d]].push(i);\n"
    "    children.push([]);\n"
    "    stack[d + 1] = i + 1;\n"
    "  }\n"
    "  function row(i) {\n"
    "    var r = el(\"div\", \"row\" + (n[6 * i + 5] >= 0 ? \" sys\" : n[6 * i + 5] === -2 ? \" kern\" : \"\"));\n"
    "    r.appendChild(el(\"span\", \"num\", fmt(n[6 * i + 3])));\n"
    "    r.appendChild(el(\"span\", \"num\", fmt(n[6 * i + 4])));\n"
    "    r.appendChild(el(\"span\", \"num\", String(n[6 * i + 2])));\n"
    "    var name = el(\"span\", \"name\");\n"
    "    name.style.paddingLeft = (1.2 * n[6 * i]) + \"em\";\n"
    "    name.appendChild(el(\"span\", \"tog\", children[i + 1].length ? \"\\u25B8\" : \"\"));\n"
    "    var leaf = n[6 * i + 5] >= 0 ? \"[sys] \" : n[6 * i + 5] === -2 ? \"[kernel] \" : \"\";\n"
    "    name.appendChild(document.createTextNode(leaf + names[n[6 * i + 1]]));\n"
    "    if (n[6 * i + 5] > 0) name.appendChild(el(\"span\", \"err\", \" (\" + n[6 * i + 5] + \" failed)\"));\n"
    "    r.appendChild(name);\n"
    "    return r;\n"
    "  }\n"
    "  function draw(parent, key) {\n"
    "    children[key].forEach(function (i) {\n"
    "      var node = el(\"div\", \"node\"), r = row(i);\n"
    "      node.appendChild(r);\n"
    "      node.lpIndex = i;\n"
    "      if (children[i + 1].length) r.addEventListener(\"click\", function () { toggle(node); });\n"
    "      parent.appendChild(node);\n"
    "    });\n"
    "  }\n"
    "  function open(node, on) {\n"
    "    var kids = node.lastChild.className === \"kids\" ? node.lastChild : null;\n"
    "    if (on && !kids) {\n"
    "      kids = el(\"div\", \"kids\");\n"
    "      draw(kids, node.lpIndex + 1);\n"
    "      node.appendChild(kids);\n"
    "    }\n"
    "    if (kids) kids.hidden = !on;\n"
    "    node.firstChild.querySelector(\".tog\").textContent = on ? \"\\u25BE\" : \"\\u25B8\";\n"
    "    return kids;\n"
    "  }\n"
    "  function toggle(node) {\n"
    "    var kids = node.lastChild.className === \"kids\" ? node.lastChild : null;\n"
    "    open(node, !kids || kids.hidden);\n"
    "  }\n"
    "  box.lpAll = function (on) {\n"
    "    var todo = Array.prototype.slice.call(box.querySelectorAll(\".node\")), done = 0;\n"
    "    while (todo.length && done < EXPAND_ALL_MAX) {\n"
    "      var node = todo.pop();\n"
    "      if (!children[node.lpIndex + 1].length) continue;\n"
    "      var kids = open(node, on);\n"
    "      done++;\n"
    "      if (on && kids) Array.prototype.push.apply(todo, kids.children);\n"
    "    }\n"
    "  };\n"
    "  var hdr = el(\"div\", \"row hdr\");\n"
    "  [\"Total\", \"Self\", \"Calls\"].forEach(function (h) { hdr.appendChild(el(\"span\", \"num\", h)); });\n"
    "  hdr.appendChild(el(\"span\", \"name\", \"Function\"));\n"
    "  box.appendChild(hdr);\n"
    "  draw(box, 0);\n"
    "  Array.prototype.forEach.call(box.children, function (node) {\n"
    "    if (node.lpIndex !== undefined && children[node.lpIndex + 1].length) open(node, true);\n"
    "  });\n"
    "});\n"
    "function all(on) {\n"
    "  Array.prototype.forEach.call(document.querySelectorAll(\".tree\"), function (b) { if (b.lpAll) "
    "b.lpAll(on); });\n"
    "}\n"
    "document.getElementById(\"expand-all\").addEventListener(\"click\", function () { all(true); });\n"
    "document.getElementById(\"collapse-all\").addEventListener(\"click\", function () { all(false); });\n"
    "})();\n"
    "</script>\n";

static void put_text(FILE *f, const char *s)
{
	escape_xml(f, s);
}

/* A numeric cell: the value for sorting, the duration for reading. */
static void td_ns(FILE *f, uint64_t ns)
{
	char buf[32];

	fprintf(f, "<td data-v=\"%" PRIu64 "\">%s</td>", ns, options_format_duration(ns, buf, sizeof(buf)));
}

static void td_u64(FILE *f, uint64_t v)
{
	fprintf(f, "<td data-v=\"%" PRIu64 "\">%" PRIu64 "</td>", v, v);
}

static void td_name(FILE *f, const char *s)
{
	fputs("<td class=\"name\">", f);
	put_text(f, s);
	fputs("</td>", f);
}

/* Header cells: "num" columns sort as numbers (largest first), the others
 * as text. */
static void thead(FILE *f, const char *const *cols, size_t n)
{
	size_t i;

	fputs("<thead><tr>", f);
	for (i = 0; i < n; i++) {
		bool text = cols[i][0] == '~';

		fprintf(f, "<th%s>%s</th>", text ? " class=\"name\" data-type=\"str\"" : " data-type=\"num\"",
		        cols[i] + (text ? 1 : 0));
	}
	fputs("</tr></thead>\n<tbody>\n", f);
}

static void put_header(FILE *f, const struct reportdata *rd)
{
	const struct walk *w = rd->w;
	char host[256], command[1024], d[32];
	uint64_t calls = 0;
	uint32_t threads = 0;
	size_t i;

	for (i = 0; i < rd->rows.n; i++)
		calls += rd->rows.row[i].calls;
	for (i = 0; i < w->nstreams; i++)
		threads += w->streams[i]->selected;
	fputs("<title>layerprof report: ", f);
	put_text(f, w->dir ? w->dir : "");
	fputs("</title>\n", f);
	fputs(html_style, f);
	fputs("</head>\n<body>\n<h1>layerprof report: ", f);
	put_text(f, w->dir ? w->dir : "");
	fputs("</h1>\n<p class=\"meta\">", f);
	fprintf(f, "%" PRIu64 " calls, %zu functions, %" PRIu32 " threads, %" PRIu64 " events, %s traced", calls,
	        rd->rows.n, threads, w->events,
	        options_format_duration(w->last_ns > w->first_ns ? w->last_ns - w->first_ns : 0, d, sizeof(d)));
	if (walk_meta(w, "command", command, sizeof(command))) {
		fputs("; command <span class=\"name\">", f);
		put_text(f, command);
		fputs("</span>", f);
	}
	if (walk_meta(w, "host", host, sizeof(host))) {
		fputs(" on ", f);
		put_text(f, host);
	}
	fputs("</p>\n", f);
	if (w->lost)
		fprintf(f,
		        "<div class=\"banner lost\" id=\"lost-banner\" role=\"alert\">%" PRIu64
		        " events lost: the profile and the call trees are incomplete</div>\n",
		        w->lost);
	if (w->r.state == READER_DAMAGED) {
		fputs("<div class=\"banner warn\" role=\"alert\">The trace is damaged (", f);
		put_text(f, w->r.damage);
		fputs("): this report covers its readable part</div>\n", f);
	} else if (!w->r.seen_end) {
		fputs("<div class=\"banner warn\">The trace has no end record: the recording was interrupted</div>\n",
		      f);
	}
	if (w->filtered_at_record)
		fputs("<div class=\"banner warn\">Recorded with filters: calls outside them are not in this "
		      "trace</div>\n",
		      f);
	fprintf(f, "<p><a href=\"#flat\">Flat profile</a> &middot; %s%s%s<a href=\"#trees\">Call trees</a></p>\n",
	        w->syscalls ? "<a href=\"#syscalls\">System calls</a> &middot; " : "",
	        rd->has_layers ? "<a href=\"#layers\">Layers</a> &middot; " : "",
	        rd->has_kernel ? "<a href=\"#kernel\">Kernel events</a> &middot; " : "");
}

static void put_flat(FILE *f, const struct reportdata *rd)
{
	static const char *const cols[] = { "Total", "Self", "Calls", "Avg", "Min", "Max" };
	bool per_thread = rd->flags & PROFILE_PER_THREAD;
	size_t i;

	fputs("<h2 id=\"flat\">Flat profile</h2>\n<p class=\"meta\">Total is inclusive (a recursive function counts "
	      "once per outermost call); avg, min and max are per call. Click a column to sort.</p>\n",
	      f);
	fputs("<table class=\"sortable\" id=\"flat-table\">\n", f);
	fputs("<thead><tr>", f);
	for (i = 0; i < sizeof(cols) / sizeof(cols[0]); i++)
		fprintf(f, "<th data-type=\"num\"%s>%s</th>", i ? "" : " aria-sort=\"descending\"", cols[i]);
	if (per_thread)
		fputs("<th data-type=\"num\">TID</th>", f);
	fputs("<th class=\"name\" data-type=\"str\">Function</th><th class=\"name\" data-type=\"str\">Source</th>"
	      "</tr></thead>\n<tbody>\n",
	      f);
	for (i = 0; i < rd->rows.n; i++) {
		const struct profile_row *r = &rd->rows.row[i];

		fputs("<tr>", f);
		td_ns(f, r->total_ns);
		td_ns(f, r->self_ns);
		td_u64(f, r->calls);
		td_ns(f, profile_row_avg(r));
		td_ns(f, r->min_ns == UINT64_MAX ? 0 : r->min_ns);
		td_ns(f, r->max_ns);
		if (per_thread)
			td_u64(f, r->tid);
		td_name(f, r->name);
		fputs("<td class=\"name\">", f);
		if (r->file) {
			put_text(f, r->file);
			fprintf(f, ":%u", r->line);
		}
		fputs("</td></tr>\n", f);
	}
	fputs("</tbody>\n</table>\n", f);
}

static void put_syscalls(FILE *f, const struct reportdata *rd)
{
	static const char *const cols[] = { "Calls", "Errors", "Total", "Avg", "Min", "Max", "p50", "p99", "~Syscall" };
	static const char *const fcols[] = { "Calls", "Errors", "Total", "~Syscall", "~Function" };
	static const char *const tcols[] = { "Calls", "Errors", "Total", "TID", "~Syscall", "~Function" };
	bool per_thread = rd->flags & PROFILE_PER_THREAD;
	size_t i;

	fprintf(f,
	        "<h2 id=\"syscalls\">System calls</h2>\n<p class=\"meta\">%" PRIu64 " calls, %" PRIu64
	        " errors.</p>\n<table class=\"sortable\" id=\"syscall-table\">\n",
	        rd->st.calls, rd->st.errors);
	thead(f, cols, sizeof(cols) / sizeof(cols[0]));
	for (i = 0; i < rd->sys.nrows; i++) {
		const struct sysstats_row *r = &rd->sys.rows[i];

		fputs("<tr>", f);
		td_u64(f, r->calls);
		td_u64(f, r->errors);
		td_ns(f, r->total_ns);
		td_ns(f, r->timed ? r->total_ns / r->timed : 0);
		td_ns(f, r->min_ns);
		td_ns(f, r->max_ns);
		td_ns(f, r->p50_ns);
		td_ns(f, r->p99_ns);
		td_name(f, r->name);
		fputs("</tr>\n", f);
	}
	fputs("</tbody>\n</table>\n<h3>By function</h3>\n<table class=\"sortable\" id=\"syscall-function-table\">\n",
	      f);
	if (per_thread)
		thead(f, tcols, sizeof(tcols) / sizeof(tcols[0]));
	else
		thead(f, fcols, sizeof(fcols) / sizeof(fcols[0]));
	for (i = 0; i < rd->sys.nfns; i++) {
		const struct sysstats_fn *fn = &rd->sys.fns[i];

		fputs("<tr>", f);
		td_u64(f, fn->calls);
		td_u64(f, fn->errors);
		td_ns(f, fn->total_ns);
		if (per_thread)
			td_u64(f, fn->tid);
		td_name(f, fn->syscall);
		td_name(f, fn->name);
		fputs("</tr>\n", f);
	}
	fputs("</tbody>\n</table>\n", f);
}

/* ------------------------------------------------------------ the kernel layer */

/* The columns of a klayer_parts (report --layers), before the name. */
static const char *const parts_cols[] = { "Total",  "User",     "Syscall",   "Off-CPU",     "Off R",
	                                  "Off S",  "Off D",    "Off other", "Irq",         "Softirq",
	                                  "Faults", "Switches", "Voluntary", "Involuntary", "Syscalls" };
#define PARTS_COLS (sizeof(parts_cols) / sizeof(parts_cols[0]))

static void td_parts(FILE *f, uint64_t total, const struct klayer_parts *p)
{
	static const enum klayer_mode modes[] = { KL_USER, KL_SYSCALL, KL_OFF_R, KL_OFF_S, KL_OFF_D, KL_OFF_OTHER };

	td_ns(f, total);
	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		if (modes[m] == KL_OFF_R)
			td_ns(f, klayer_off_ns(p));
		td_ns(f, p->ns[modes[m]]);
	}
	td_ns(f, p->ns[KL_IRQ]);
	td_ns(f, p->ns[KL_SOFTIRQ]);
	td_u64(f, p->faults);
	td_u64(f, p->switches_vol + p->switches_invol);
	td_u64(f, p->switches_vol);
	td_u64(f, p->switches_invol);
	td_u64(f, p->syscalls);
}

/* A table of klayer_parts rows: the parts columns, then `more` (text). */
static void parts_table(FILE *f, const char *id, const char *const *more, size_t nmore)
{
	const char *cols[PARTS_COLS + 3];
	size_t n = 0;

	for (size_t i = 0; i < PARTS_COLS; i++)
		cols[n++] = parts_cols[i];
	for (size_t i = 0; i < nmore && n < sizeof(cols) / sizeof(cols[0]); i++)
		cols[n++] = more[i];
	fprintf(f, "<table class=\"sortable\" id=\"%s\">\n", id);
	thead(f, cols, n);
}

static void put_layers(FILE *f, const struct reportdata *rd)
{
	static const char *const tcols[] = { "TID", "~Thread" }, *const fcols[] = { "Calls", "~Function" };
	const struct klayer_result *r = &rd->layers;
	size_t i;

	fputs("<h2 id=\"layers\">Layers</h2>\n<p class=\"meta\">Where the time went (<code>report --layers</code>): "
	      "on a CPU in the program's code (user) or in a system call, off the CPU by state (R preempted, S "
	      "sleeping, D blocked), handling irqs and softirqs; with the page faults and context switches in "
	      "that time.",
	      f);
	if (!rd->has_kernel)
		fputs(" No kernel events in this trace (record with <code>--kernel</code>): the off-CPU, irq and fault "
		      "columns are empty.",
		      f);
	if (!rd->w->syscalls)
		fputs(" No system calls in this trace (record with <code>--syscalls</code>): syscall time counts as "
		      "user time.",
		      f);
	fputs("</p>\n<h3>Per thread</h3>\n", f);
	parts_table(f, "layers-thread-table", tcols, 2);
	for (i = 0; i < r->nthreads; i++) {
		const struct klayer_thread *t = &r->threads[i];

		fputs("<tr>", f);
		td_parts(f, t->last_ns > t->first_ns ? t->last_ns - t->first_ns : 0, &t->parts);
		td_u64(f, t->tid);
		td_name(f, t->comm);
		fputs("</tr>\n", f);
	}
	fputs("</tbody>\n</table>\n<h3>Per function, inclusive</h3>\n", f);
	parts_table(f, "layers-table", fcols, 2);
	for (i = 0; i < r->nfuncs; i++) {
		fputs("<tr>", f);
		td_parts(f, r->funcs[i].total_ns, &r->funcs[i].incl);
		td_u64(f, r->funcs[i].calls);
		td_name(f, r->funcs[i].name);
		fputs("</tr>\n", f);
	}
	fputs("</tbody>\n</table>\n<h3>Per function, self (not in the functions it called)</h3>\n", f);
	parts_table(f, "layers-self-table", fcols, 2);
	for (i = 0; i < r->nfuncs; i++) {
		const struct klayer_parts *p = &r->funcs[i].self;
		uint64_t self = 0;

		for (int m = 0; m < KL_MODES; m++)
			self += p->ns[m];
		fputs("<tr>", f);
		td_parts(f, self, p);
		td_u64(f, r->funcs[i].calls);
		td_name(f, r->funcs[i].name);
		fputs("</tr>\n", f);
	}
	fputs("</tbody>\n</table>\n", f);
}

static void keyrows_table(FILE *f, const char *title, const char *id, const char *what,
                          const struct klayer_keyrow *rows, size_t n)
{
	const char *cols[] = { "Count", "~Event", what };

	fprintf(f, "<h3>%s</h3>\n<table class=\"sortable\" id=\"%s\">\n", title, id);
	thead(f, cols, 3);
	for (size_t i = 0; i < n; i++) {
		fputs("<tr>", f);
		td_u64(f, rows[i].count);
		td_name(f, rows[i].event);
		td_name(f, rows[i].what);
		fputs("</tr>\n", f);
	}
	fputs("</tbody>\n</table>\n", f);
}

static void put_kernel(FILE *f, const struct reportdata *rd)
{
	static const char *const wcols[] = { "Total", "Count", "Avg", "Max", "~State", "~Syscall", "~Woken by" };
	static const char *const bcols[] = { "Issued", "Completed", "Total", "Avg", "Max", "~Syscall" };
	static const char *const ecols[] = { "Count", "~Event" };
	const struct klayer_result *r = &rd->layers;
	size_t i;

	fprintf(f,
	        "<h2 id=\"kernel\">Kernel events</h2>\n<p class=\"meta\">%" PRIu64 " kernel events (%" PRIu64
	        " undecodable), %" PRIu64 " context switches, %" PRIu64 " page faults, %" PRIu64
	        " wake-ups given (<code>report --kernel</code>), in the streams of the threads they concern.</p>\n"
	        "<table class=\"sortable\" id=\"kernel-event-table\">\n",
	        r->kernel_events, r->undecodable, r->switches, r->faults, r->wakeups);
	thead(f, ecols, 2);
	for (i = 0; i < r->nevents; i++) {
		fputs("<tr>", f);
		td_u64(f, r->events[i].count);
		td_name(f, r->events[i].name);
		fputs("</tr>\n", f);
	}
	fputs("</tbody>\n</table>\n<h3>Off-CPU time per reason, and who woke the thread</h3>\n"
	      "<table class=\"sortable\" id=\"offcpu-table\">\n",
	      f);
	thead(f, wcols, sizeof(wcols) / sizeof(wcols[0]));
	for (i = 0; i < r->nwaits; i++) {
		const struct klayer_wait *wt = &r->waits[i];

		fputs("<tr>", f);
		td_ns(f, wt->total_ns);
		td_u64(f, wt->count);
		td_ns(f, wt->count ? wt->total_ns / wt->count : 0);
		td_ns(f, wt->max_ns);
		fprintf(f, "<td class=\"name\">%c</td>", wt->state);
		td_name(f, wt->syscall[0] ? wt->syscall : wt->state == 'R' ? "(preempted)" : "(in its own code)");
		fputs("<td class=\"name\">", f);
		for (uint32_t k = 0; k < wt->nwakers; k++) {
			fprintf(f, "%s%" PRIu64 " &times; ", k ? "<br>" : "", wt->wakers[k].count);
			put_text(f, wt->wakers[k].who);
		}
		if (wt->unknown_wakers)
			fprintf(f, "%s%" PRIu64 " &times; (no wake-up event seen)", wt->nwakers ? "<br>" : "",
			        wt->unknown_wakers);
		fputs("</td></tr>\n", f);
	}
	fputs("</tbody>\n</table>\n", f);
	keyrows_table(f, "Per thread", "kernel-thread-table", "~TID", r->by_thread, r->nby_thread);
	keyrows_table(f, "Per function running then", "kernel-function-table", "~Function", r->by_func, r->nby_func);
	keyrows_table(f, "Per system call under way", "kernel-syscall-table", "~Syscall", r->by_syscall,
	              r->nby_syscall);
	if (!r->nblocks)
		return;
	fputs("<h3>Block requests per issuing system call</h3>\n<table class=\"sortable\" id=\"block-table\">\n", f);
	thead(f, bcols, sizeof(bcols) / sizeof(bcols[0]));
	for (i = 0; i < r->nblocks; i++) {
		const struct klayer_block *b = &r->blocks[i];

		fputs("<tr>", f);
		td_u64(f, b->issued);
		td_u64(f, b->completed);
		td_ns(f, b->total_ns);
		td_ns(f, b->completed ? b->total_ns / b->completed : 0);
		td_ns(f, b->max_ns);
		td_name(f, b->syscall[0] ? b->syscall : "(none)");
		fputs("</tr>\n", f);
	}
	fputs("</tbody>\n</table>\n", f);
}

/* The last number of a node in the script's array: a system call's
 * errors, -1 for a function, -2 for a kernel event. */
static int64_t node_code(const struct calltree_node *nd)
{
	if (CALLTREE_IS_SYSCALL(nd->addr))
		return (int64_t)nd->errors;
	return CALLTREE_IS_KERNEL(nd->addr) ? -2 : -1;
}

/* One thread's nodes as the flat array the script reads. */
static int put_tree_nodes(FILE *f, struct reportdata *rd, struct names *nm, const struct walk_stream *s,
                          const struct calltree_stream *t)
{
	struct calltree_iter it;
	uint32_t i, depth;
	char name[1024];
	bool first = true;
	int r = 0;

	if (calltree_iter_init(&it, t))
		return -ENOMEM;
	fputc('[', f);
	while ((i = calltree_iter_next(&it, &depth))) {
		const struct calltree_node *nd = &t->nodes[i];
		uint32_t id = names_intern(nm, calltree_node_name(rd->w, s, nd, false, name, sizeof(name)));

		if (id == NAMES_NONE) {
			r = -ENOMEM;
			break;
		}
		fprintf(f, "%s%" PRIu32 ",%" PRIu32 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRId64, first ? "" : ",",
		        depth, id, nd->calls, nd->total_ns, nd->self_ns, node_code(nd));
		first = false;
	}
	if (it.oom)
		r = -ENOMEM;
	calltree_iter_release(&it);
	fputc(']', f);
	return r;
}

static int put_trees(FILE *f, struct reportdata *rd)
{
	const struct walk *w = rd->w;
	struct names nm;
	uint32_t i, k = 0;
	int r = 0;

	/* each distinct node name once, shared by all threads */
	names_init_max(&nm, CALLTREE_NODES_MAX);
	fputs("<h2 id=\"trees\">Call trees</h2>\n<p class=\"meta\">Per thread: inclusive (total) and self time and "
	      "calls of each call path; system calls are <span class=\"name\">[sys]</span> leaves under the "
	      "function that made them, kernel events <span class=\"name\">[kernel]</span> leaves under the system "
	      "call or function under way (with the time off the CPU of a switch-out, and of interrupt handlers), "
	      "and their time is not in its self time. Click a row to open or fold it.</p>\n"
	      "<p><button id=\"expand-all\" type=\"button\">Expand all</button><button id=\"collapse-all\" "
	      "type=\"button\">Collapse all</button></p>\n"
	      "<noscript><p>The call trees need JavaScript; the same numbers are in <code>layerprof tree</code> and "
	      "<code>report --format xml</code>.</p></noscript>\n",
	      f);
	for (i = 0; i < w->nstreams; i++) {
		const struct walk_stream *s = w->streams[i];

		if (!calltree_stream(&rd->ct, s->index))
			continue;
		fprintf(f, "<h3>Thread %" PRIu32 " (", s->tid);
		put_text(f, s->comm);
		fprintf(f, "), process %" PRIu32, s->pid);
		if (s->parent_pid)
			fprintf(f, ", forked from %" PRIu32, s->parent_pid);
		else if (s->after_exec)
			fputs(" (after exec)", f);
		fputs("</h3>\n", f);
		if (s->lost)
			fprintf(f,
			        "<p class=\"err\">%" PRIu64 " events lost in this thread: its tree is incomplete</p>\n",
			        s->lost);
		fprintf(f, "<div class=\"tree\" id=\"tree-%" PRIu32 "\"></div>\n", k++);
	}
	fputs("<script id=\"tree-data\" type=\"application/json\">{\"threads\":[", f);
	for (i = 0, k = 0; i < w->nstreams && !r; i++) {
		const struct calltree_stream *t = calltree_stream(&rd->ct, w->streams[i]->index);

		if (!t)
			continue;
		if (k++)
			fputc(',', f);
		r = put_tree_nodes(f, rd, &nm, w->streams[i], t);
	}
	fputs("],\n\"names\":[", f);
	for (i = 0; i < nm.n; i++) {
		if (i)
			fputc(',', f);
		escape_json(f, names_get(&nm, i));
	}
	fputs("]}</script>\n", f);
	names_release(&nm);
	return r;
}

int export_html(struct reportdata *rd, FILE *f)
{
	int r;

	fputs(html_head, f);
	put_header(f, rd);
	put_flat(f, rd);
	if (rd->w->syscalls)
		put_syscalls(f, rd);
	if (rd->has_layers)
		put_layers(f, rd);
	if (rd->has_kernel)
		put_kernel(f, rd);
	r = put_trees(f, rd);
	fputs(html_script, f);
	fputs("</body>\n</html>\n", f);
	if (r)
		return r;
	return ferror(f) ? -EIO : 0;
}

/* ------------------------------------------------------------ the heap */

#define CHART_W 800
#define CHART_H 220
#define CHART_PAD 48 /* room for the axis labels */

static const char *rel_time(const struct heapview_opts *o, uint64_t ns, char *buf, size_t size)
{
	uint64_t t = ns > o->origin_ns ? ns - o->origin_ns : 0;

	snprintf(buf, size, "%" PRIu64 ".%06" PRIu64 " s", t / 1000000000u, t % 1000000000u / 1000u);
	return buf;
}

/* The whole heap's live bytes over time: a polyline over the growth
 * samples, starting from nothing at the heap's first operation. */
static void put_growth_chart(FILE *f, const struct heap *h)
{
	uint64_t t[HEAP_SERIES_LEN], v[HEAP_SERIES_LEN], tmax = 1, vmax = 1;
	uint32_t n = heapview_series(h, NULL, HEAP_SERIES_LEN, t, v), i;
	const double pw = CHART_W - CHART_PAD - 8, ph = CHART_H - 2 * 16;

	fputs("<h2 id=\"growth\">Live bytes over time</h2>\n", f);
	if (!n) {
		fputs("<p class=\"meta\">No heap operations.</p>\n", f);
		return;
	}
	for (i = 0; i < n; i++) {
		if (t[i] - h->first_ns > tmax)
			tmax = t[i] - h->first_ns;
		if (v[i] > vmax)
			vmax = v[i];
	}
	fprintf(f,
	        "<p class=\"meta\">The whole heap, sampled at the end of each %.3f ms interval from the first "
	        "heap operation (%" PRIu32 " samples); peak %" PRIu64 " bytes.</p>\n",
	        (double)h->step_ns / 1e6, n, h->peak_bytes);
	fprintf(f,
	        "<svg class=\"chart\" id=\"growth-chart\" viewBox=\"0 0 %d %d\" role=\"img\" "
	        "aria-label=\"live bytes over time\">\n",
	        CHART_W, CHART_H);
	fprintf(f, "<line x1=\"%d\" y1=\"16\" x2=\"%d\" y2=\"%d\" stroke=\"#999\"/>", CHART_PAD, CHART_PAD,
	        CHART_H - 16);
	fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#999\"/>\n", CHART_PAD, CHART_H - 16,
	        CHART_W - 8, CHART_H - 16);
	fprintf(f, "<text x=\"%d\" y=\"20\" text-anchor=\"end\">%" PRIu64 "</text>", CHART_PAD - 4, vmax);
	fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">0</text>", CHART_PAD - 4, CHART_H - 16);
	fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%.3f s</text>\n", CHART_W - 8, CHART_H - 2,
	        (double)tmax / 1e9);
	fprintf(f, "<polyline points=\"%d,%d", CHART_PAD, CHART_H - 16);
	for (i = 0; i < n; i++)
		fprintf(f, " %.1f,%.1f", CHART_PAD + pw * (double)(t[i] - h->first_ns) / (double)tmax,
		        16 + ph - ph * (double)v[i] / (double)vmax);
	fputs("\"/>\n", f);
	for (i = 0; i < n; i++)
		fprintf(f,
		        "<circle class=\"sample\" cx=\"%.1f\" cy=\"%.1f\" r=\"2\" fill=\"#c33\"><title>%.3f s: %" PRIu64
		        " bytes</title></circle>\n",
		        CHART_PAD + pw * (double)(t[i] - h->first_ns) / (double)tmax,
		        16 + ph - ph * (double)v[i] / (double)vmax, (double)(t[i] - h->first_ns) / 1e9, v[i]);
	fputs("</svg>\n", f);
}

static void td_growth(FILE *f, const struct heap *h, const struct heap_counts *c)
{
	struct heap_growth g;

	heap_growth(h, c, &g);
	if (g.growing)
		fprintf(f, "<td data-v=\"%.0f\" class=\"err\">+%.0f B/s (p = %.2g)</td>", g.rate_bps, g.rate_bps,
		        g.p_value);
	else
		fputs("<td data-v=\"0\">-</td>", f);
}

static void put_counts_cells(FILE *f, const struct heap *h, const struct heap_counts *c, bool at_peak)
{
	td_u64(f, at_peak ? c->at_peak_objects : c->live_objects);
	td_u64(f, at_peak ? c->at_peak_bytes : c->live_bytes);
	td_u64(f, c->peak_bytes);
	td_u64(f, c->allocs);
	td_u64(f, c->frees);
	td_u64(f, c->unfreed_objects);
	td_growth(f, h, c);
}

static void put_heap_tables(FILE *f, const struct heap *h, bool at_peak)
{
	static const char *const cols[] = { "Live objects",    "Live bytes", "Peak bytes", "Allocs",     "Frees",
		                            "Unfreed at exit", "Growth",     "~Function",  "~Call site", "~Source" };
	uint32_t *idx, n, i;

	fputs("<h2 id=\"sites\">By call site</h2>\n<p class=\"meta\">Live objects and bytes", f);
	fputs(at_peak ? " when the heap was largest" : " at the end", f);
	fputs("; growth is a rise over the later half of the samples (Mann-Kendall test). Click a column to "
	      "sort.</p>\n<table class=\"sortable\" id=\"site-table\">\n",
	      f);
	thead(f, cols, sizeof(cols) / sizeof(cols[0]));
	idx = heapview_sorted_sites(h, at_peak, &n);
	for (i = 0; idx && i < n; i++) {
		const struct heap_site *s = &h->sites[idx[i]];

		fputs("<tr>", f);
		put_counts_cells(f, h, &s->c, at_peak);
		td_name(f, s->function);
		td_name(f, s->key);
		fputs("<td class=\"name\">", f);
		if (s->file) {
			put_text(f, s->file);
			fprintf(f, ":%u", s->line);
		}
		fputs("</td></tr>\n", f);
	}
	free(idx);
	fputs("</tbody>\n</table>\n<h2 id=\"functions\">By function</h2>\n<table class=\"sortable\" "
	      "id=\"function-table\">\n",
	      f);
	thead(f, cols, sizeof(cols) / sizeof(cols[0]) - 2);
	idx = heapview_sorted_fns(h, at_peak, &n);
	for (i = 0; idx && i < n; i++) {
		fputs("<tr>", f);
		put_counts_cells(f, h, &h->fns[idx[i]].c, at_peak);
		td_name(f, h->fns[idx[i]].name);
		fputs("</tr>\n", f);
	}
	free(idx);
	fputs("</tbody>\n</table>\n", f);
}

static void put_site_where(FILE *f, const struct heap *h, uint32_t site)
{
	const struct heap_site *s = &h->sites[site];

	fputs("<span class=\"name\">", f);
	put_text(f, s->key);
	fputs("</span>", f);
	if (s->file) {
		fputs(" (", f);
		put_text(f, s->file);
		fprintf(f, ":%u)", s->line);
	}
}

static void put_html_stack(FILE *f, struct walk *w, const struct heap *h, uint32_t stack)
{
	const struct heap_stack *s = stack < h->nstacks ? &h->stacks[stack] : NULL;
	struct heapview_frame fr;
	uint32_t i;

	if (!s || !s->n) {
		fputs("<p class=\"stack meta\">(no stack)</p>\n", f);
		return;
	}
	fputs("<ol class=\"stack\" start=\"0\">", f);
	for (i = 0; i < s->n; i++) {
		heapview_frame(w, s->image, s->ips[i], &fr);
		fputs("<li class=\"name\">", f);
		put_text(f, fr.name);
		if (fr.file) {
			fputs(" (", f);
			put_text(f, fr.file);
			fprintf(f, ":%u)", fr.line);
		}
		fputs("</li>", f);
	}
	fputs("</ol>\n", f);
}

static void put_heap_illegal(FILE *f, struct walk *w, const struct heap *h, const struct heapview_opts *o)
{
	char t[48];
	uint32_t i;

	fprintf(f,
	        "<h2 id=\"illegal\">Illegal releases</h2>\n<p class=\"meta\">%" PRIu64 " (never allocated %" PRIu64
	        ", double free %" PRIu64 ", interior pointer %" PRIu64 ", mismatch %" PRIu64 ")</p>\n<div "
	        "id=\"illegal-list\">\n",
	        heapview_illegal_total(h), h->illegal_counts[HEAP_NEVER_ALLOCATED], h->illegal_counts[HEAP_DOUBLE_FREE],
	        h->illegal_counts[HEAP_INTERIOR_POINTER], h->illegal_counts[HEAP_MISMATCH]);
	for (i = 0; i < h->nillegal; i++) {
		const struct heap_illegal *il = &h->illegal[i];

		fprintf(f, "<div class=\"illegal\"><h3>%s: %s(0x%" PRIx64 ") in ", heap_illegal_name(il->kind),
		        heap_op_name(il->op), il->ptr);
		put_text(f, h->sites[il->site].function);
		fprintf(f, " at %s, process %" PRIu32 " thread %" PRIu32, rel_time(o, il->ns, t, sizeof(t)), il->pid,
		        il->tid);
		if (il->count > 1)
			fprintf(f, " (%" PRIu64 " times)", il->count);
		if (il->kept)
			fputs(" [kept from libc]", f);
		if (il->after_loss)
			fputs(" [after lost events: maybe only their consequence]", f);
		fputs("</h3>\n<p>Released at ", f);
		put_site_where(f, h, il->site);
		fputs(":</p>\n", f);
		put_html_stack(f, w, h, il->stack);
		if (il->has_free) {
			fprintf(f, "<p>Already released by %s at %s, thread %" PRIu32 ", at ",
			        heap_op_name(il->free_op), rel_time(o, il->free_ns, t, sizeof(t)), il->free_tid);
			put_site_where(f, h, il->free_site);
			fputs(":</p>\n", f);
			put_html_stack(f, w, h, il->free_stack);
		}
		if (il->has_block) {
			fprintf(f, "<p>Allocated by %s(%" PRIu64 ") = 0x%" PRIx64 " at %s, at ",
			        heap_op_name(il->alloc_op), il->block_size, il->block_ptr,
			        rel_time(o, il->alloc_ns, t, sizeof(t)));
			put_site_where(f, h, il->alloc_site);
			fputs(":</p>\n", f);
			put_html_stack(f, w, h, il->alloc_stack);
		}
		fputs("</div>\n", f);
	}
	if (h->illegal_dropped)
		fprintf(f, "<p class=\"meta\">%" PRIu64 " more distinct illegal releases not shown.</p>\n",
		        h->illegal_dropped);
	fputs("</div>\n", f);
}

static void put_heap_overlaps(FILE *f, struct walk *w, const struct heap *h, const struct heapview_opts *o)
{
	char t[48];
	uint32_t i;

	fprintf(f,
	        "<h2 id=\"overlaps\">Allocations overlapping live blocks</h2>\n<p class=\"meta\">%" PRIu64
	        "</p>\n<div id=\"overlap-list\">\n",
	        h->overlap_count);
	for (i = 0; i < h->noverlaps; i++) {
		const struct heap_overlap *ov = &h->overlaps[i];

		fprintf(f,
		        "<div class=\"overlap\"><h3>%s(%" PRIu64 ") = 0x%" PRIx64 " at %s, process %" PRIu32
		        " thread %" PRIu32 "%s</h3>\n<p>At ",
		        heap_op_name(ov->op), ov->size, ov->ptr, rel_time(o, ov->ns, t, sizeof(t)), ov->pid, ov->tid,
		        ov->after_loss ? " [after lost events: maybe only their consequence]" : "");
		put_site_where(f, h, ov->site);
		fputs(":</p>\n", f);
		put_html_stack(f, w, h, ov->stack);
		fprintf(f, "<p>Overlaps the live block 0x%" PRIx64 " (%" PRIu64 " bytes) from %s at %s, at ",
		        ov->old_ptr, ov->old_size, heap_op_name(ov->old_op), rel_time(o, ov->old_ns, t, sizeof(t)));
		put_site_where(f, h, ov->old_site);
		fputs(":</p>\n", f);
		put_html_stack(f, w, h, ov->old_stack);
		fputs("</div>\n", f);
	}
	fputs("</div>\n", f);
}

static void put_heap_processes(FILE *f, const struct heap *h)
{
	uint32_t i;

	fputs("<h2 id=\"processes\">Processes</h2>\n<ul>\n", f);
	for (i = 0; i < h->nprocs; i++) {
		const struct heap_proc *p = &h->procs[i];

		if (!p->ops && !p->inherited_objects)
			continue;
		fprintf(f, "<li>process %" PRIu32 " (image %" PRIu32 ")", p->pid, p->image);
		if (p->has_parent)
			fprintf(f, ", forked from image %" PRIu32 " with %" PRIu64 " blocks (%" PRIu64 " bytes)",
			        p->parent_image, p->inherited_objects, p->inherited_bytes);
		fprintf(f, ": %" PRIu64 " operations, peak %" PRIu64 " bytes", p->ops, p->peak_bytes);
		if (p->exited && p->exit_status == LP_EXIT_STATUS_UNKNOWN)
			fprintf(f, ", ended (exit status unknown) with %" PRIu64 " blocks (%" PRIu64 " bytes) unfreed",
			        p->unfreed_objects, p->unfreed_bytes);
		else if (p->exited)
			fprintf(f, ", exited (status %" PRIu32 ") with %" PRIu64 " blocks (%" PRIu64 " bytes) unfreed",
			        p->exit_status, p->unfreed_objects, p->unfreed_bytes);
		else if (p->execed)
			fputs(", replaced by exec", f);
		else
			fprintf(f, ", %" PRIu64 " blocks (%" PRIu64 " bytes) live at the end of the trace",
			        p->live_objects, p->live_bytes);
		fputs("</li>\n", f);
	}
	fputs("</ul>\n", f);
}

int export_html_memory(struct walk *w, const struct heap *h, const struct heapfeed *feed, const struct heapview_opts *o,
                       FILE *f)
{
	char t[48], command[1024];

	fputs(html_head, f);
	fputs("<title>layerprof memory report: ", f);
	put_text(f, w->dir ? w->dir : "");
	fputs("</title>\n", f);
	fputs(html_style, f);
	fputs("</head>\n<body>\n<h1>layerprof memory report: ", f);
	put_text(f, w->dir ? w->dir : "");
	fprintf(f,
	        "</h1>\n<p class=\"meta\" id=\"heap-totals\">%" PRIu64 " allocations, %" PRIu64 " releases, %" PRIu64
	        " live blocks (%" PRIu64 " bytes), peak %" PRIu64 " bytes at %s",
	        h->allocs, h->frees, h->live_objects, h->live_bytes, h->peak_bytes,
	        rel_time(o, h->peak_ns, t, sizeof(t)));
	if (walk_meta(w, "command", command, sizeof(command))) {
		fputs("; command <span class=\"name\">", f);
		put_text(f, command);
		fputs("</span>", f);
	}
	fputs("</p>\n", f);
	if (!w->mem_ops)
		fputs("<div class=\"banner warn\">No heap operations in this trace (record with --memory)</div>\n", f);
	if (o->at_peak)
		fprintf(f, "<p class=\"meta\">The state at the peak (%s): live objects and bytes then.</p>\n",
		        rel_time(o, h->peak_ns, t, sizeof(t)));
	else if (o->state_ns)
		fprintf(f, "<p class=\"meta\">The state at %s.</p>\n", rel_time(o, o->state_ns, t, sizeof(t)));
	if (w->lost)
		fprintf(f,
		        "<div class=\"banner lost\" id=\"lost-banner\" role=\"alert\">%" PRIu64
		        " events lost: missed releases read as live blocks, missed allocations as illegal releases "
		        "(%" PRIu64 " illegal releases and %" PRIu64 " overlaps came after a loss)</div>\n",
		        w->lost, h->illegal_after_loss, h->overlaps_after_loss);
	if (w->r.state == READER_DAMAGED) {
		fputs("<div class=\"banner warn\" role=\"alert\">The trace is damaged (", f);
		put_text(f, w->r.damage);
		fputs("): this report covers its readable part</div>\n", f);
	}
	if (h->oom)
		fputs("<div class=\"banner warn\">Out of memory: the heap state is incomplete</div>\n", f);
	fputs("<p><a href=\"#growth\">Growth</a> &middot; <a href=\"#sites\">Call sites</a> &middot; <a "
	      "href=\"#functions\">Functions</a> &middot; <a href=\"#illegal\">Illegal releases</a> &middot; <a "
	      "href=\"#overlaps\">Overlaps</a> &middot; <a href=\"#processes\">Processes</a></p>\n",
	      f);
	put_growth_chart(f, h);
	put_heap_tables(f, h, o->at_peak);
	put_heap_illegal(f, w, h, o);
	put_heap_overlaps(f, w, h, o);
	put_heap_processes(f, h);
	if (h->unfreed_objects)
		fprintf(
		    f, "<p class=\"meta\" id=\"unfreed\">Unfreed at exit: %" PRIu64 " blocks, %" PRIu64 " bytes.</p>\n",
		    h->unfreed_objects, h->unfreed_bytes);
	if (h->folded)
		fprintf(f,
		        "<p class=\"meta\">Folded: %" PRIu64 " short-lived blocks (%" PRIu64 " bytes) in %" PRIu64
		        " fold records, counted in allocs and frees, not one by one.</p>\n",
		        h->folded, h->folded_bytes, h->folds);
	if (feed && feed->late)
		fprintf(f,
		        "<p class=\"meta\">%" PRIu64
		        " heap events came later than the merge by time could wait for.</p>\n",
		        feed->late);
	fputs(html_script, f);
	fputs("</body>\n</html>\n", f);
	return ferror(f) ? -EIO : 0;
}
