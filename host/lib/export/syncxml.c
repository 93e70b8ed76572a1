/* `report --sync --format xml` (see syncreport.h and docs/report.xsd):
 * the <sync> element, between the trace and the lost events as the other
 * reports write them (export/xml.c). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#include "host/lib/export/syncreport.h"
#include "host/lib/export/xml.h"
#include "host/lib/util/escape.h"

static void attr_waits(FILE *f, const struct syncstats_waits *w)
{
	xml_attr_u64(f, "waits", w->n);
	xml_attr_u64(f, "wait-ns", w->total_ns);
	xml_attr_u64(f, "wait-max-ns", w->max_ns);
}

static void xml_object(FILE *f, struct walk *w, const struct syncstats *st, const struct syncstats_object *o)
{
	char buf[SYNCSTATS_NAME_MAX], site[512];
	bool lock = o->kind <= SYNCSTATS_SPIN;

	fputs(lock ? "      <lock" : "      <object", f);
	xml_attr_str(f, "name", syncstats_object_name(o, buf, sizeof(buf)));
	xml_attr_str(f, "kind", syncstats_kind_name(o->kind));
	xml_attr_hex(f, "addr", o->addr);
	xml_attr_u64(f, "image", o->image);
	xml_attr_u64(f, "pid", o->pid);
	if (o->site)
		xml_attr_str(f, "first-site", syncstats_object_site(w, o, site, sizeof(site)));
	xml_attr_u64(f, "first-ns", o->first_ns);
	xml_attr_u64(f, "last-ns", o->last_ns);
	attr_waits(f, &o->waits);
	xml_attr_u64(f, "wait-p99-ns", o->wait_p99_ns);
	fprintf(f, " wait-p99-approx=\"%s\"", o->p99_approx ? "true" : "false");
	if (lock) {
		xml_attr_u64(f, "acquisitions", o->acquisitions);
		xml_attr_u64(f, "read-acquisitions", o->rd_acquisitions);
		xml_attr_u64(f, "contended", o->contended);
		xml_attr_u64(f, "try-failures", o->try_failures);
		xml_attr_u64(f, "failures", o->failures);
		xml_attr_u64(f, "holds", o->holds);
		xml_attr_u64(f, "hold-ns", o->hold_ns);
		xml_attr_u64(f, "hold-max-ns", o->hold_max_ns);
		xml_attr_u64(f, "held-ns", o->held_ns);
		xml_attr_u64(f, "releases", o->releases);
		xml_attr_u64(f, "unmatched-releases", o->unmatched_releases);
		xml_attr_u64(f, "held-at-end", o->held_at_end);
	} else {
		xml_attr_u64(f, "calls", o->calls);
		xml_attr_u64(f, "timeouts", o->timeouts);
		xml_attr_u64(f, "failures", o->failures);
		xml_attr_u64(f, "try-failures", o->try_failures);
		xml_attr_u64(f, "signals", o->signals + o->broadcasts + o->posts);
	}
	fputs(">\n", f);
	for (uint32_t k = 0; k < o->nuses; k++) {
		const struct syncstats_use *u = &st->uses[o->first_use + k];

		fputs("        <use", f);
		xml_attr_u64(f, "tid", st->threads[u->thread].tid);
		xml_attr_u64(f, "operations", u->ops);
		xml_attr_u64(f, "acquisitions", u->acquisitions);
		xml_attr_u64(f, "holds", u->holds);
		xml_attr_u64(f, "hold-ns", u->hold_ns);
		xml_attr_u64(f, "calls", u->calls);
		xml_attr_u64(f, "signals", u->signals);
		attr_waits(f, &u->waits);
		fputs("/>\n", f);
	}
	fputs(lock ? "      </lock>\n" : "      </object>\n", f);
}

static void xml_objects(FILE *f, struct walk *w, const struct syncstats *st, const char *tag, const uint32_t *idx,
                        uint32_t n)
{
	fprintf(f, "    <%s>\n", tag);
	for (uint32_t i = 0; i < n; i++)
		xml_object(f, w, st, &st->objects[idx[i]]);
	fprintf(f, "    </%s>\n", tag);
}

static void xml_rest(FILE *f, const struct syncstats *st, const struct syncstats_result *r)
{
	char buf[SYNCSTATS_NAME_MAX];

	fputs("    <threads>\n", f);
	for (uint32_t i = 0; i < r->nthreads; i++) {
		const struct syncstats_thread *t = &st->threads[r->threads[i]];

		fputs("      <thread", f);
		xml_attr_u64(f, "tid", t->tid);
		xml_attr_u64(f, "pid", t->pid);
		xml_attr_u64(f, "image", t->image);
		xml_attr_str(f, "comm", t->comm);
		if (t->pthread)
			xml_attr_hex(f, "pthread", t->pthread);
		xml_attr_u64(f, "operations", t->ops);
		xml_attr_u64(f, "wait-ns", t->wait_ns);
		xml_attr_f64(f, "wait-share", t->wait_share);
		xml_attr_u64(f, "acquisitions", t->acquisitions);
		xml_attr_u64(f, "holds", t->holds);
		xml_attr_u64(f, "hold-ns", t->hold_ns);
		xml_attr_u64(f, "signals", t->signals);
		xml_attr_u64(f, "posts", t->posts);
		xml_attr_u64(f, "creates", t->creates);
		fputs(">\n", f);
		for (unsigned k = 0; k < SYNCSTATS_KINDS; k++) {
			if (!t->waits[k].n)
				continue;
			fputs("        <wait", f);
			xml_attr_str(f, "kind", syncstats_kind_name(k));
			xml_attr_u64(f, "count", t->waits[k].n);
			xml_attr_u64(f, "ns", t->waits[k].total_ns);
			xml_attr_u64(f, "max-ns", t->waits[k].max_ns);
			fputs("/>\n", f);
		}
		fputs("      </thread>\n", f);
	}
	fputs("    </threads>\n    <joins>\n", f);
	for (uint32_t i = 0; i < st->njoins; i++) {
		const struct syncstats_join *jn = &st->joins[i];

		fputs("      <join", f);
		xml_attr_u64(f, "tid", st->threads[jn->thread].tid);
		if (jn->joined)
			xml_attr_u64(f, "joined-tid", st->threads[jn->joined - 1].tid);
		xml_attr_hex(f, "pthread", jn->pthread);
		xml_attr_u64(f, "ns", jn->ns);
		xml_attr_u64(f, "wait-ns", jn->wait_ns);
		fprintf(f, " failed=\"%s\"/>\n", jn->failed ? "true" : "false");
	}
	fputs("    </joins>\n    <pairs>\n", f);
	for (uint32_t i = 0; i < r->npairs; i++) {
		const struct syncstats_pair *p = &r->pairs[i];

		fputs("      <pair", f);
		xml_attr_u64(f, "span-ns", p->span_ns);
		xml_attr_u64(f, "producer-wait-ns", p->wait_ns[0]);
		xml_attr_u64(f, "consumer-wait-ns", p->wait_ns[1]);
		xml_attr_f64(f, "producer-share", p->share[0]);
		xml_attr_f64(f, "consumer-share", p->share[1]);
		xml_attr_str(f, "slow", p->slow == 0 ? "producer" : p->slow == 1 ? "consumer" : "neither");
		xml_attr_str(f, "text", syncreport_pair_text(st, p, buf, sizeof(buf)));
		fputs(">\n", f);
		for (int s = 0; s < 2; s++)
			for (uint32_t k = 0; k < p->nside[s]; k++)
				fprintf(f, "        <%s tid=\"%u\"/>\n", s ? "consumer" : "producer",
				        st->threads[p->side[s][k]].tid);
		for (uint32_t k = 0; k < p->nobjects && k < SYNCSTATS_PAIR_OBJECTS; k++) {
			fputs("        <through", f);
			xml_attr_str(f, "name", syncstats_object_name(&st->objects[p->objects[k]], buf, sizeof(buf)));
			fputs("/>\n", f);
		}
		fputs("      </pair>\n", f);
	}
	fputs("    </pairs>\n", f);
}

void syncreport_xml(FILE *f, struct walk *w, const struct syncstats *st, const struct syncstats_result *r)
{
	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", f);
	fputs("<layerprof-report format-version=\"1\" generator=\"layerprof\">\n", f);
	export_xml_trace(f, w);
	fputs("  <sync", f);
	xml_attr_u64(f, "malformed-sync-events", w->sync_malformed);
	xml_attr_u64(f, "operations", st->ops);
	xml_attr_u64(f, "late-operations", st->late);
	xml_attr_u64(f, "futex-waits", st->futex_waits);
	xml_attr_u64(f, "futex-waits-inside-operations", st->futex_waits_inside);
	fputs(">\n", f);
	xml_objects(f, w, st, "locks", r->locks, r->nlocks);
	xml_objects(f, w, st, "conditions", r->conds, r->nconds);
	xml_objects(f, w, st, "barriers", r->barriers, r->nbarriers);
	xml_objects(f, w, st, "futexes", r->futexes, r->nfutexes);
	xml_rest(f, st, r);
	fputs("  </sync>\n", f);
	export_xml_lost(f, w);
	fputs("</layerprof-report>\n", f);
}
