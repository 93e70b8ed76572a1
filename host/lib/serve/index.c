/* The index file of `layerprof serve` (see serve/index.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/crc32c.h"
#include "host/lib/serve/index.h"
#include "host/lib/serve/index_impl.h"
#include "host/lib/serve/store.h"
#include "host/lib/util/outfile.h"

#define INDEX_MAGIC "LPSRVIX" /* and a NUL: 8 bytes */
#define INDEX_MAGIC_SIZE 8u
#define INDEX_BOM 0x01020304u
#define INDEX_HEADER_SIZE 56u
#define BUCKET_BYTES (3 * 8 + 2 * 4)

/* The data file's identity: the index is of this file only. */
struct data_key {
	uint64_t size, mtime_ns, ino;
};

static int data_key_of(const char *dir, struct data_key *k)
{
	char path[4096];
	struct stat st;

	if (snprintf(path, sizeof(path), "%s/data", dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	if (stat(path, &st))
		return -errno;
	k->size = (uint64_t)st.st_size;
	k->mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000ull + (uint64_t)st.st_mtim.tv_nsec;
	k->ino = (uint64_t)st.st_ino;
	return 0;
}

/* ------------------------------------------------------------ writing */

static void write_info(struct indexout *o, const struct serve_info *in)
{
	uint32_t i;

	put_u64(o, in->events);
	put_u64(o, in->lost);
	put_u64(o, in->syscall_events);
	put_u64(o, in->first_ns);
	put_u64(o, in->last_ns);
	put_u8(o, (uint8_t)(in->complete | in->damaged << 1 | in->filtered_at_record << 2 | in->source_filtered << 3));
	put_str(o, in->damage);
	put_str(o, in->command);
	put_str(o, in->host);
	put_u32(o, in->nthreads);
	for (i = 0; i < in->nthreads; i++) {
		const struct serve_thread *t = &in->threads[i];

		put_u32(o, t->id);
		put_u32(o, t->pid);
		put_u32(o, t->tid);
		put_u32(o, t->image);
		put_u32(o, t->parent_pid);
		put_u32(o, t->status);
		put_u8(o, (uint8_t)(t->after_exec | t->exited << 1));
		put_str(o, t->comm);
		put_u64(o, t->first_ns);
		put_u64(o, t->last_ns);
		put_u64(o, t->calls);
		put_u64(o, t->lost);
		put_u64(o, t->syscalls);
	}
}

static void write_rows(struct indexout *o, const struct servemodel *m)
{
	const struct sysstats_result *sr = &m->sysres;
	size_t i;

	put_u64(o, m->rows.n);
	for (i = 0; i < m->rows.n; i++) {
		const struct profile_row *r = &m->rows.row[i];

		put_str(o, r->name);
		put_str(o, r->file);
		put_u32(o, r->line);
		put_u32(o, r->tid);
		put_u32(o, r->pid);
		put_u64(o, r->calls);
		put_u64(o, r->total_ns);
		put_u64(o, r->self_ns);
		put_u64(o, r->sum_ns);
		put_u64(o, r->min_ns);
		put_u64(o, r->max_ns);
	}
	put_u64(o, sr->nrows);
	for (i = 0; i < sr->nrows; i++) {
		const struct sysstats_row *r = &sr->rows[i];

		put_u8(o, r->arch);
		put_u32(o, r->nr);
		put_str(o, r->name);
		put_u64(o, r->calls);
		put_u64(o, r->errors);
		put_u64(o, r->unfinished);
		put_u64(o, r->timed);
		put_u64(o, r->total_ns);
		put_u64(o, r->min_ns);
		put_u64(o, r->max_ns);
		put_u64(o, r->p50_ns);
		put_u64(o, r->p99_ns);
	}
	put_u64(o, sr->nfns);
	for (i = 0; i < sr->nfns; i++) {
		const struct sysstats_fn *f = &sr->fns[i];

		put_str(o, f->name);
		put_u32(o, f->tid);
		put_u8(o, f->arch);
		put_u32(o, f->nr);
		put_str(o, f->syscall);
		put_u64(o, f->calls);
		put_u64(o, f->errors);
		put_u64(o, f->total_ns);
	}
}

static void write_trees(struct indexout *o, const struct servemodel *m)
{
	const struct calltree *ct = &m->tree;
	uint32_t k, i;

	put_u32(o, m->names.n);
	for (i = 0; i < m->names.n; i++)
		put_str(o, names_get(&m->names, i));
	put_u32(o, ct->nstreams);
	for (k = 0; k < ct->nstreams; k++) {
		const struct calltree_stream *t = ct->streams[k];

		put_u32(o, t ? t->named : 0);
		for (i = 0; t && i < t->named; i++) {
			const struct calltree_node *nd = &t->nodes[i];

			put_u64(o, nd->addr);
			put_u32(o, nd->parent);
			put_u32(o, nd->name);
			put_u64(o, nd->calls);
			put_u64(o, nd->total_ns);
			put_u64(o, nd->self_ns);
			put_u64(o, nd->min_ns);
			put_u64(o, nd->max_ns);
			put_u64(o, nd->errors);
			put_u64(o, nd->sys_calls);
		}
	}
}

static void write_timeline(struct indexout *o, const struct timeline *tl)
{
	uint32_t k, i, d;

	put_u32(o, tl->nsnap_frames);
	for (i = 0; i < tl->nsnap_frames; i++) {
		put_u64(o, tl->snap_frames[i].addr);
		put_u64(o, tl->snap_frames[i].entry_ns);
	}
	put_u32(o, tl->nstreams);
	for (k = 0; k < tl->nstreams; k++) {
		const struct timeline_stream *ts = tl->streams[k];
		uint64_t mask = 0;

		put_u8(o, ts != NULL);
		if (!ts)
			continue;
		put_u32(o, ts->nchunks);
		for (i = 0; i < ts->nchunks; i++) {
			const struct timeline_chunk *c = &ts->chunks[i];

			put_u64(o, (uint64_t)c->offset);
			put_u64(o, c->first_ns);
			put_u64(o, c->last_ns);
			put_u32(o, c->events);
			put_u32(o, c->depth);
			put_u32(o, c->snap);
			put_u32(o, c->nsnap);
		}
		put_u64(o, ts->base);
		put_u32(o, ts->width ? ts->shift : UINT32_MAX);
		put_u32(o, ts->max_depth);
		put_u8(o, ts->grid_partial);
		put_u32(o, ts->nlost);
		for (i = 0; i < ts->nlost; i++) {
			put_u64(o, ts->lost[i][0]);
			put_u64(o, ts->lost[i][1]);
		}
		for (d = 0; d < TIMELINE_GRID_DEPTH; d++)
			if (ts->level[d])
				mask |= 1ull << d;
		put_u64(o, mask);
		/* each level's buckets that hold anything, by index */
		for (d = 0; d < TIMELINE_GRID_DEPTH; d++) {
			const struct timeline_bucket *lv = ts->level[d];
			uint32_t used = 0;

			for (i = 0; lv && i < TIMELINE_GRID_BUCKETS; i++)
				used += lv[i].busy_ns || lv[i].calls;
			if (lv)
				put_u32(o, used);
			for (i = 0; lv && i < TIMELINE_GRID_BUCKETS; i++) {
				if (!lv[i].busy_ns && !lv[i].calls)
					continue;
				put_u32(o, i);
				put_u64(o, lv[i].busy_ns);
				put_u64(o, lv[i].cand);
				put_u64(o, lv[i].cand_ns);
				put_u32(o, lv[i].calls);
				put_u32(o, lv[i].syscalls);
			}
		}
	}
}

int serveindex_write(struct servemodel *m, const char *dir, char *err, size_t errlen)
{
	uint8_t header[INDEX_HEADER_SIZE] = INDEX_MAGIC;
	char tmp[SERVESTORE_NAME_MAX + 32];
	struct servestore st;
	struct data_key key = { 0 };
	struct indexout o = { 0 };
	uint32_t v32;
	int r, fd;

	r = data_key_of(dir, &key);
	if (!r)
		r = servestore_open(&st, dir, SERVEINDEX_FILE);
	if (r) {
		snprintf(err, errlen, "cannot keep an index of trace '%s': %s", dir, strerror(-r));
		return r;
	}
	/* an exclusive temporary renamed over the index: nothing planted there is written through */
	fd = outfile_tmp_create(st.dirfd, st.name, tmp, sizeof(tmp));
	if (fd < 0 || !(o.f = fdopen(fd, "wb"))) {
		r = fd < 0 ? fd : -errno;
		if (fd >= 0) {
			close(fd);
			unlinkat(st.dirfd, tmp, 0);
		}
		snprintf(err, errlen, "cannot write index '%s': %s", st.path, strerror(-r));
		servestore_release(&st);
		return r;
	}
	/* the header last, once the payload's length and checksum are known */
	fwrite(header, 1, sizeof(header), o.f);
	write_info(&o, &m->info);
	write_rows(&o, m);
	write_trees(&o, m);
	write_timeline(&o, &m->tl);
	serveindex_write_kernel(&o, &m->kern);
	serveindex_write_sync(&o, &m->sync);
	v32 = SERVEINDEX_VERSION;
	memcpy(header + 8, &v32, 4);
	v32 = INDEX_BOM;
	memcpy(header + 12, &v32, 4);
	memcpy(header + 16, &key.size, 8);
	memcpy(header + 24, &key.mtime_ns, 8);
	memcpy(header + 32, &key.ino, 8);
	memcpy(header + 40, &o.len, 8);
	memcpy(header + 48, &o.crc, 4);
	r = 0;
	if (fseek(o.f, 0, SEEK_SET) || fwrite(header, 1, sizeof(header), o.f) != sizeof(header) || fflush(o.f) ||
	    ferror(o.f))
		r = errno ? -errno : -EIO;
	if (fclose(o.f) && !r)
		r = errno ? -errno : -EIO;
	if (r)
		unlinkat(st.dirfd, tmp, 0);
	else
		r = outfile_tmp_commit(st.dirfd, tmp, st.name);
	if (r)
		snprintf(err, errlen, "cannot write index '%s': %s", st.path, strerror(-r));
	servestore_release(&st);
	return r;
}

/* ------------------------------------------------------------ reading */

static int read_info(struct indexin *c, struct serve_info *in)
{
	uint32_t i, n;
	uint8_t fl;

	in->events = get_u64(c);
	in->lost = get_u64(c);
	in->syscall_events = get_u64(c);
	in->first_ns = get_u64(c);
	in->last_ns = get_u64(c);
	fl = get_u8(c);
	in->complete = fl & 1;
	in->damaged = fl >> 1 & 1;
	in->filtered_at_record = fl >> 2 & 1;
	in->source_filtered = fl >> 3 & 1;
	snprintf(in->damage, sizeof(in->damage), "%s", get_str(c, sizeof(in->damage) - 1));
	snprintf(in->command, sizeof(in->command), "%s", get_str(c, sizeof(in->command) - 1));
	snprintf(in->host, sizeof(in->host), "%s", get_str(c, sizeof(in->host) - 1));
	n = get_u32(c);
	if (n > WALK_STREAMS_MAX || !room_for(c, n, 6 * 4 + 1 + 4 + 5 * 8))
		return -EBADMSG;
	in->threads = calloc(n + 1, sizeof(*in->threads));
	if (!in->threads)
		return -ENOMEM;
	for (i = 0; i < n && !c->bad; i++) {
		struct serve_thread *t = &in->threads[i];

		t->id = get_u32(c);
		t->pid = get_u32(c);
		t->tid = get_u32(c);
		t->image = get_u32(c);
		t->parent_pid = get_u32(c);
		t->status = get_u32(c);
		fl = get_u8(c);
		t->after_exec = fl & 1;
		t->exited = fl >> 1 & 1;
		snprintf(t->comm, sizeof(t->comm), "%s", get_str(c, sizeof(t->comm) - 1));
		t->first_ns = get_u64(c);
		t->last_ns = get_u64(c);
		t->calls = get_u64(c);
		t->lost = get_u64(c);
		t->syscalls = get_u64(c);
		if (t->id >= WALK_STREAMS_MAX || t->last_ns < t->first_ns || t->first_ns < in->first_ns)
			c->bad = true;
	}
	in->nthreads = n;
	return c->bad ? -EBADMSG : 0;
}

static int read_rows(struct indexin *c, struct servemodel *m)
{
	struct sysstats_result *sr = &m->sysres;
	uint32_t *file_ids = NULL;
	uint64_t n, i;
	int r = -EBADMSG;

	n = get_u64(c);
	if (!room_for(c, n, 2 * 4 + 3 * 4 + 6 * 8))
		return -EBADMSG;
	m->rows.row = calloc(n + 1, sizeof(*m->rows.row));
	file_ids = calloc(n + 1, sizeof(*file_ids));
	if (!m->rows.row || !file_ids) {
		free(file_ids);
		return -ENOMEM;
	}
	for (i = 0; i < n && !c->bad; i++) {
		struct profile_row *row = &m->rows.row[i];
		const char *s = get_str(c, INDEX_STR_MAX);

		row->name = strdup(s);
		if (!row->name) {
			r = -ENOMEM;
			goto out;
		}
		m->rows.n = i + 1;
		s = get_str(c, INDEX_STR_MAX);
		file_ids[i] = *s ? names_intern(&m->files, s) : NAMES_NONE;
		if (*s && file_ids[i] == NAMES_NONE) {
			r = -ENOMEM;
			goto out;
		}
		row->line = get_u32(c);
		row->tid = get_u32(c);
		row->pid = get_u32(c);
		row->calls = get_u64(c);
		row->total_ns = get_u64(c);
		row->self_ns = get_u64(c);
		row->sum_ns = get_u64(c);
		row->min_ns = get_u64(c);
		row->max_ns = get_u64(c);
	}
	/* the file names moved while they were interned: point at them now */
	for (i = 0; i < m->rows.n; i++)
		m->rows.row[i].file = file_ids[i] == NAMES_NONE ? NULL : names_get(&m->files, file_ids[i]);
	m->rows_valid = true;

	n = get_u64(c);
	if (!room_for(c, n, 1 + 4 + 4 + 9 * 8))
		goto out;
	sr->rows = calloc(n + 1, sizeof(*sr->rows));
	if (!sr->rows) {
		r = -ENOMEM;
		goto out;
	}
	for (i = 0; i < n && !c->bad; i++) {
		struct sysstats_row *row = &sr->rows[i];

		row->arch = get_u8(c);
		row->nr = get_u32(c);
		snprintf(row->name, sizeof(row->name), "%s", get_str(c, sizeof(row->name) - 1));
		row->calls = get_u64(c);
		row->errors = get_u64(c);
		row->unfinished = get_u64(c);
		row->timed = get_u64(c);
		row->total_ns = get_u64(c);
		row->min_ns = get_u64(c);
		row->max_ns = get_u64(c);
		row->p50_ns = get_u64(c);
		row->p99_ns = get_u64(c);
	}
	sr->nrows = n;
	n = get_u64(c);
	if (!room_for(c, n, 4 + 4 + 1 + 4 + 4 + 3 * 8))
		goto out;
	sr->fns = calloc(n + 1, sizeof(*sr->fns));
	if (!sr->fns) {
		r = -ENOMEM;
		goto out;
	}
	for (i = 0; i < n && !c->bad; i++) {
		struct sysstats_fn *f = &sr->fns[i];

		f->name = strdup(get_str(c, INDEX_STR_MAX));
		if (!f->name) {
			r = -ENOMEM;
			goto out;
		}
		sr->nfns = i + 1;
		f->tid = get_u32(c);
		f->arch = get_u8(c);
		f->nr = get_u32(c);
		snprintf(f->syscall, sizeof(f->syscall), "%s", get_str(c, sizeof(f->syscall) - 1));
		f->calls = get_u64(c);
		f->errors = get_u64(c);
		f->total_ns = get_u64(c);
	}
	m->sys_valid = true;
	r = c->bad ? -EBADMSG : 0;
out:
	free(file_ids);
	return r;
}

static int read_trees(struct indexin *c, struct servemodel *m)
{
	struct calltree *ct = &m->tree;
	uint32_t n, k, i;

	n = get_u32(c);
	if (!room_for(c, n, 4))
		return -EBADMSG;
	for (i = 0; i < n && !c->bad; i++)
		if (names_intern(&m->names, get_str(c, INDEX_STR_MAX)) != i)
			return c->bad ? -EBADMSG : -ENOMEM; /* a repeated name is damage too */
	n = get_u32(c);
	if (n > WALK_STREAMS_MAX || !room_for(c, n, 4))
		return -EBADMSG;
	ct->streams = calloc(n + 1, sizeof(*ct->streams));
	if (!ct->streams)
		return -ENOMEM;
	ct->nstreams = n;
	for (k = 0; k < ct->nstreams && !c->bad; k++) {
		struct calltree_stream *t;
		uint32_t nodes = get_u32(c);

		if (!nodes)
			continue;
		if (nodes > CALLTREE_NODES_MAX || !room_for(c, nodes, 8 + 2 * 4 + 7 * 8))
			return -EBADMSG;
		t = calloc(1, sizeof(*t));
		if (!t)
			return -ENOMEM;
		ct->streams[k] = t;
		t->nodes = calloc(nodes, sizeof(*t->nodes));
		if (!t->nodes)
			return -ENOMEM;
		t->n = t->cap = t->named = nodes;
		for (i = 0; i < nodes && !c->bad; i++) {
			struct calltree_node *nd = &t->nodes[i];

			nd->addr = get_u64(c);
			nd->parent = get_u32(c);
			nd->name = get_u32(c);
			nd->calls = get_u64(c);
			nd->total_ns = get_u64(c);
			nd->self_ns = get_u64(c);
			nd->min_ns = get_u64(c);
			nd->max_ns = get_u64(c);
			nd->errors = get_u64(c);
			nd->sys_calls = get_u64(c);
			if (i && (nd->parent >= i || nd->name >= m->names.n)) {
				c->bad = true;
				break;
			}
			if (!i)
				continue;
			/* children in the order they were added, as in the pass */
			if (t->nodes[nd->parent].last_child)
				t->nodes[t->nodes[nd->parent].last_child].next_sibling = i;
			else
				t->nodes[nd->parent].first_child = i;
			t->nodes[nd->parent].last_child = i;
			t->nodes[nd->parent].nchildren++;
		}
	}
	return c->bad ? -EBADMSG : 0;
}

static int read_timeline(struct indexin *c, struct timeline *tl, uint64_t data_size)
{
	uint32_t n, k, i, d;

	n = get_u32(c);
	if (n > TIMELINE_SNAP_FRAMES_MAX || !room_for(c, n, 16))
		return -EBADMSG;
	tl->snap_frames = malloc((n + 1) * sizeof(*tl->snap_frames));
	if (!tl->snap_frames)
		return -ENOMEM;
	tl->nsnap_frames = tl->snap_cap = n;
	for (i = 0; i < n; i++) {
		tl->snap_frames[i].addr = get_u64(c);
		tl->snap_frames[i].entry_ns = get_u64(c);
	}
	n = get_u32(c);
	if (n > WALK_STREAMS_MAX || !room_for(c, n, 1))
		return -EBADMSG;
	tl->streams = calloc(n + 1, sizeof(*tl->streams));
	if (!tl->streams)
		return -ENOMEM;
	tl->nstreams = n;
	for (k = 0; k < tl->nstreams && !c->bad; k++) {
		struct timeline_stream *ts;
		uint32_t shift;
		uint64_t mask;

		if (!get_u8(c))
			continue;
		ts = calloc(1, sizeof(*ts));
		if (!ts)
			return -ENOMEM;
		tl->streams[k] = ts;
		n = get_u32(c);
		if (!room_for(c, n, 3 * 8 + 4 * 4))
			return -EBADMSG;
		ts->chunks = malloc((n + 1) * sizeof(*ts->chunks));
		if (!ts->chunks)
			return -ENOMEM;
		ts->nchunks = ts->chunks_cap = n;
		for (i = 0; i < n; i++) {
			struct timeline_chunk *ch = &ts->chunks[i];

			ch->offset = (off_t)get_u64(c);
			ch->first_ns = get_u64(c);
			ch->last_ns = get_u64(c);
			ch->events = get_u32(c);
			ch->depth = get_u32(c);
			ch->snap = get_u32(c);
			ch->nsnap = get_u32(c);
			if (ch->offset < 0 || (uint64_t)ch->offset >= data_size || ch->nsnap > TIMELINE_SNAP_MAX ||
			    ch->snap > tl->nsnap_frames || ch->nsnap > tl->nsnap_frames - ch->snap ||
			    ch->last_ns < ch->first_ns)
				c->bad = true;
		}
		ts->base = get_u64(c);
		shift = get_u32(c);
		if (shift != UINT32_MAX) {
			if (shift >= 48) /* 2^48 ns buckets: no trace is that long */
				return -EBADMSG;
			ts->shift = shift;
			ts->width = 1ull << shift;
		}
		ts->max_depth = get_u32(c);
		ts->grid_partial = get_u8(c);
		n = get_u32(c);
		if (n > TIMELINE_LOST_MAX || !room_for(c, n, 16))
			return -EBADMSG;
		ts->lost = malloc((n + 1) * sizeof(*ts->lost));
		if (!ts->lost)
			return -ENOMEM;
		for (i = 0; i < n; i++) {
			ts->lost[i][0] = get_u64(c);
			ts->lost[i][1] = get_u64(c);
		}
		ts->nlost = n;
		mask = get_u64(c);
		if (mask && !ts->width)
			return -EBADMSG;
		for (d = 0; d < TIMELINE_GRID_DEPTH && !c->bad; d++) {
			struct timeline_bucket *lv;
			uint32_t used, k2, prev;

			if (!(mask >> d & 1))
				continue;
			used = get_u32(c);
			if (used > TIMELINE_GRID_BUCKETS ||
			    tl->grid_bytes + TIMELINE_GRID_BUCKETS * sizeof(*lv) > TIMELINE_GRID_BYTES_MAX ||
			    !room_for(c, used, 4 + BUCKET_BYTES))
				return -EBADMSG;
			lv = calloc(TIMELINE_GRID_BUCKETS, sizeof(*lv));
			if (!lv)
				return -ENOMEM;
			ts->level[d] = lv;
			tl->grid_bytes += TIMELINE_GRID_BUCKETS * sizeof(*lv);
			for (k2 = 0, prev = 0; k2 < used; k2++) {
				i = get_u32(c);
				if (i >= TIMELINE_GRID_BUCKETS || (k2 && i <= prev))
					return -EBADMSG;
				prev = i;
				lv[i].busy_ns = get_u64(c);
				lv[i].cand = get_u64(c);
				lv[i].cand_ns = get_u64(c);
				lv[i].calls = get_u32(c);
				lv[i].syscalls = get_u32(c);
			}
		}
	}
	return c->bad ? -EBADMSG : 0;
}

/* Empties what a failed read filled in. */
static void reset(struct servemodel *m)
{
	free(m->info.threads);
	memset(&m->info, 0, sizeof(m->info));
	profile_rows_release(&m->rows);
	sysstats_result_release(&m->sysres);
	calltree_release(&m->tree);
	timeline_release(&m->tl);
	names_release(&m->names);
	names_release(&m->files);
	servekernel_release(&m->kern);
	servekernel_init(&m->kern);
	synctrack_release(&m->sync);
	synctrack_init(&m->sync);
	m->rows_valid = m->sys_valid = false;
}

/* Reads the whole file (at most SERVEINDEX_MAX bytes) into *buf. */
static int slurp(const struct servestore *where, uint8_t **buf, size_t *len)
{
	struct stat st;
	size_t got = 0;
	int fd = servestore_read(where), r = 0;

	*buf = NULL;
	if (fd < 0)
		return fd;
	if (fstat(fd, &st)) {
		r = -errno;
		goto out;
	}
	if (st.st_size < (off_t)INDEX_HEADER_SIZE || (uint64_t)st.st_size > SERVEINDEX_MAX) {
		r = -EBADMSG;
		goto out;
	}
	*buf = malloc((size_t)st.st_size);
	if (!*buf) {
		r = -ENOMEM;
		goto out;
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, *buf + got, (size_t)st.st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			r = n < 0 ? -errno : -EBADMSG;
			goto out;
		}
		got += (size_t)n;
	}
	*len = got;
out:
	close(fd);
	if (r) {
		free(*buf);
		*buf = NULL;
	}
	return r;
}

int serveindex_read(struct servemodel *m, const char *dir, char *err, size_t errlen)
{
	struct indexin c = { 0 };
	struct data_key key, had;
	uint32_t version, bom, crc;
	uint64_t plen;
	struct servestore st;
	const char *path;
	uint8_t *buf;
	size_t len = 0;
	int r;

	r = data_key_of(dir, &key);
	if (r) {
		snprintf(err, errlen, "cannot read trace '%s': %s", dir, strerror(-r));
		return -ENOENT; /* the pass says why, with the reader's words */
	}
	r = servestore_open(&st, dir, SERVEINDEX_FILE);
	if (r) {
		snprintf(err, errlen, "no index of '%s': %s", dir, strerror(-r));
		return -ENOENT;
	}
	path = st.path;
	r = slurp(&st, &buf, &len);
	servestore_release(&st); /* st.path stays readable */
	if (r == -ENOENT) {
		snprintf(err, errlen, "no index '%s'", path);
		return r;
	}
	if (r) {
		snprintf(err, errlen, "cannot read index '%s': %s", path, strerror(-r));
		return r == -ENOMEM ? r : -EBADMSG;
	}
	memcpy(&version, buf + 8, 4);
	memcpy(&bom, buf + 12, 4);
	memcpy(&had.size, buf + 16, 8);
	memcpy(&had.mtime_ns, buf + 24, 8);
	memcpy(&had.ino, buf + 32, 8);
	memcpy(&plen, buf + 40, 8);
	memcpy(&crc, buf + 48, 4);
	if (memcmp(buf, INDEX_MAGIC, INDEX_MAGIC_SIZE) || bom != INDEX_BOM || plen != len - INDEX_HEADER_SIZE ||
	    crc32c(0, buf + INDEX_HEADER_SIZE, (size_t)plen) != crc) {
		snprintf(err, errlen, "index '%s' is damaged", path);
		free(buf);
		return -EBADMSG;
	}
	if (version != SERVEINDEX_VERSION || memcmp(&had, &key, sizeof(key))) {
		snprintf(err, errlen, "index '%s' is of %s", path,
		         version != SERVEINDEX_VERSION ? "another version" : "an older trace");
		free(buf);
		return -ESTALE;
	}
	c.p = buf + INDEX_HEADER_SIZE;
	c.end = buf + len;
	r = read_info(&c, &m->info);
	if (!r)
		r = read_rows(&c, m);
	if (!r)
		r = read_trees(&c, m);
	if (!r)
		r = read_timeline(&c, &m->tl, key.size);
	if (!r)
		r = serveindex_read_kernel(&c, &m->kern);
	if (!r)
		r = serveindex_read_sync(&c, &m->sync);
	if (!r && c.p != c.end)
		r = -EBADMSG;
	free(c.str);
	free(buf);
	if (r) {
		reset(m);
		snprintf(err, errlen, r == -ENOMEM ? "out of memory reading index '%s'" : "index '%s' is damaged",
		         path);
		return r;
	}
	m->info_valid = true;
	return 0;
}
