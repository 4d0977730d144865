/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The applier: journal first, then change; restore only what is still
 * ours. See apply.h for the contract and affinityd-journal(5) for the
 * file format.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdarg.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>

#include "apply/apply.h"
#include "common/protocol.h"
#include "common/util.h"
#include "apply/journal.h"

/* One value of any target type. str holds sysctl text (normalised). */
struct value {
        cpumask_t mask;
        uint64_t weight;
        bool enabled;
        char str[256];
};

struct entry {
        uint64_t seq;
        char key[128];
        struct action act;        /* the target (identity, names), policy, reason, evidence */
        struct value original;
        struct value target;      /* what we set */
        bool applied;             /* false only for a recovered BEGIN without APPLIED */
        char restore[512];        /* weight: what the backend needs to undo it exactly (apply_ops.weight_prepare) */
        uint64_t since_usec;      /* CLOCK_MONOTONIC */
        uint64_t time_usec;       /* CLOCK_REALTIME */
};

struct applier {
        char *runtime_dir;
        const struct apply_ops *ops;
        void *userdata;
        struct journal *journal;
        int lock_fd;
        char boot_id[40];
        bool recovered;
        uint64_t next_seq;

        struct entry *entries;    /* in seq order: restore walks it backwards */
        size_t n_entries, allocated;

        struct managed *view;     /* applier_list() */
        size_t n_view;

        applier_event_fn event_fn;
        void *event_userdata;

        struct applier_recover_report recover_report;
};

static const char *const event_names[] = {
        [APPLIER_EVENT_SET] = "set",
        [APPLIER_EVENT_RESTORED] = "restored",
        [APPLIER_EVENT_FOREIGN] = "foreign",
        [APPLIER_EVENT_GONE] = "gone",
        [APPLIER_EVENT_FAILED] = "failed",
        [APPLIER_EVENT_JOURNAL] = "journal",
};

const char *applier_event_kind_to_string(enum applier_event_kind k) {
        return k >= 0 && k < (int) ELEMENTSOF(event_names) ? event_names[k] : "unknown";
}

/* Copy with truncation (snprintf "%s" would trip -Wformat-truncation). */
static void copy_str(char *dst, size_t size, const char *src) {
        size_t n = strnlen(src, size - 1);

        memcpy(dst, src, n);
        dst[n] = '\0';
}

/* ---- values ---- */

/* "a  b\tc\n" → "a b c": sysctls with several numbers print tabs. */
static void normalize_ws(const char *in, char *out, size_t size) {
        size_t o = 0;
        bool space = false;

        for (; *in && o + 1 < size; in++) {
                if (*in == ' ' || *in == '\t' || *in == '\n' || *in == '\r') {
                        space = o > 0;
                        continue;
                }
                if (space && o + 2 < size)
                        out[o++] = ' ';
                space = false;
                out[o++] = *in;
        }
        out[o] = '\0';
}

static bool is_cgroup_entry(const struct action *act) {
        return act->type == ACT_CGROUP_WEIGHT || act->type == ACT_CGROUP_SUBTREE;
}

static const char *target_name(const struct action *act) {
        return is_cgroup_entry(act) ? act->cgroup : act->name;
}

static void value_from_action(const struct action *act, struct value *v) {
        *v = (struct value) {};
        switch (act->type) {
        case ACT_AFFINITY:
                v->mask = act->mask;
                break;
        case ACT_CGROUP_WEIGHT:
                v->weight = act->weight;
                break;
        case ACT_SCHED_FEATURE:
        case ACT_CGROUP_SUBTREE:
                v->enabled = act->enable;
                break;
        case ACT_SYSCTL:
                normalize_ws(act->value, v->str, sizeof(v->str));
                break;
        default:
                break;
        }
}

static void value_to_action(const struct value *v, struct action *act) {
        switch (act->type) {
        case ACT_AFFINITY:
                act->mask = v->mask;
                break;
        case ACT_CGROUP_WEIGHT:
                act->weight = v->weight;
                break;
        case ACT_SCHED_FEATURE:
        case ACT_CGROUP_SUBTREE:
                act->enable = v->enabled;
                break;
        case ACT_SYSCTL:
                copy_str(act->value, sizeof(act->value), v->str);
                break;
        default:
                break;
        }
}

static bool value_equal(enum action_type t, const struct value *x, const struct value *y) {
        switch (t) {
        case ACT_AFFINITY:
                return cpumask_equal(&x->mask, &y->mask);
        case ACT_CGROUP_WEIGHT:
                return x->weight == y->weight;
        case ACT_SCHED_FEATURE:
        case ACT_CGROUP_SUBTREE:
                return x->enabled == y->enabled;
        case ACT_SYSCTL:
                return streq(x->str, y->str);
        default:
                return false;
        }
}

static char *value_format(enum action_type t, const char *name, const struct value *v, char *buf, size_t size) {
        switch (t) {
        case ACT_AFFINITY:
                if (!cpumask_format_list(&v->mask, buf, size))
                        snprintf(buf, size, "?");
                break;
        case ACT_CGROUP_WEIGHT:
                snprintf(buf, size, "%" PRIu64, v->weight);
                break;
        case ACT_SCHED_FEATURE:
                snprintf(buf, size, "%s%s", v->enabled ? "" : "NO_", name);
                break;
        case ACT_CGROUP_SUBTREE:
                snprintf(buf, size, "%scpu", v->enabled ? "+" : "-");
                break;
        case ACT_SYSCTL:
                snprintf(buf, size, "%s", v->str);
                break;
        default:
                snprintf(buf, size, "?");
                break;
        }
        return buf;
}

/* Short form for struct managed / outcome fields; marks truncation. */
static void value_format_short(enum action_type t, const char *name, const struct value *v, char *buf, size_t size) {
        char big[JOURNAL_VALUE_MAX];

        value_format(t, name, v, big, sizeof(big));
        if (strlen(big) < size)
                strcpy(buf, big);
        else if (size > 4)
                snprintf(buf, size, "%.*s...", (int) (size - 4), big);
}

static int value_parse(enum action_type t, const char *name, const char *s, struct value *v) {
        *v = (struct value) {};
        switch (t) {
        case ACT_AFFINITY:
                return cpumask_parse_list(s, &v->mask);
        case ACT_CGROUP_WEIGHT:
                return util_parse_u64(s, &v->weight);
        case ACT_SCHED_FEATURE:
                if (streq(s, name))
                        v->enabled = true;
                else if (strncmp(s, "NO_", 3) == 0 && streq(s + 3, name))
                        v->enabled = false;
                else
                        return -EINVAL;
                return 0;
        case ACT_SYSCTL:
                normalize_ws(s, v->str, sizeof(v->str));
                return 0;
        case ACT_CGROUP_SUBTREE:
                if (streq(s, "+cpu"))
                        v->enabled = true;
                else if (streq(s, "-cpu"))
                        v->enabled = false;
                else
                        return -EINVAL;
                return 0;
        default:
                return -EINVAL;
        }
}

static int value_get(struct applier *a, const struct action *act, struct value *v) {
        const struct apply_ops *o = a->ops;
        char buf[256];
        int r;

        *v = (struct value) {};
        switch (act->type) {
        case ACT_AFFINITY:
                return o->affinity_get ? o->affinity_get(a->userdata, &act->task, &v->mask) : -EOPNOTSUPP;
        case ACT_CGROUP_WEIGHT:
                return o->weight_get ? o->weight_get(a->userdata, act->cgroup, &v->weight) : -EOPNOTSUPP;
        case ACT_SCHED_FEATURE:
                return o->feature_get ? o->feature_get(a->userdata, act->name, &v->enabled) : -EOPNOTSUPP;
        case ACT_SYSCTL:
                if (!o->sysctl_get)
                        return -EOPNOTSUPP;
                r = o->sysctl_get(a->userdata, act->name, buf, sizeof(buf));
                if (r < 0)
                        return r;
                normalize_ws(buf, v->str, sizeof(v->str));
                return 0;
        case ACT_CGROUP_SUBTREE:
                return o->subtree_get ? o->subtree_get(a->userdata, act->cgroup, &v->enabled) : -EOPNOTSUPP;
        default:
                return -EINVAL;
        }
}

/*
 * Is r, from value_get(), a target gone for good? A thread that exited or
 * whose TID names another (-ESRCH), or a cgroup removed (-ENOENT on a
 * weight or subtree entry): an entry kept for a removed group fails every
 * restore, and a weight's holds its parents' +cpu (subtree_needed()) for
 * as long as the daemon lives, and across its restarts.
 */
static bool value_gone(const struct action *act, int r) {
        return r == -ESRCH || (r == -ENOENT && is_cgroup_entry(act));
}

/* The journal's and the log's one wording for value_gone(). */
static const char *gone_how(const struct action *act) {
        if (is_cgroup_entry(act))
                return "cgroup removed";
        return act->type == ACT_AFFINITY ? "target exited or PID reused" : "target exited";
}

static int value_set(struct applier *a, const struct action *act, const struct value *v) {
        const struct apply_ops *o = a->ops;

        switch (act->type) {
        case ACT_AFFINITY:
                return o->affinity_set ? o->affinity_set(a->userdata, &act->task, &v->mask) : -EOPNOTSUPP;
        case ACT_CGROUP_WEIGHT:
                return o->weight_set ? o->weight_set(a->userdata, act->cgroup, v->weight) : -EOPNOTSUPP;
        case ACT_SCHED_FEATURE:
                return o->feature_set ? o->feature_set(a->userdata, act->name, v->enabled) : -EOPNOTSUPP;
        case ACT_SYSCTL:
                return o->sysctl_set ? o->sysctl_set(a->userdata, act->name, v->str) : -EOPNOTSUPP;
        case ACT_CGROUP_SUBTREE:
                return o->subtree_set ? o->subtree_set(a->userdata, act->cgroup, v->enabled) : -EOPNOTSUPP;
        default:
                return -EINVAL;
        }
}

static int action_validate(const struct action *act) {
        switch (act->type) {
        case ACT_AFFINITY:
                if (act->task.tid <= 0)
                        return -EINVAL;
                if (act->verb == VERB_SET && cpumask_empty(&act->mask))
                        return -EINVAL;
                return 0;
        case ACT_CGROUP_WEIGHT:
                if (act->cgroup[0] == '\0')
                        return -EINVAL;
                /* cgroup v2 cpu.weight range */
                if (act->verb == VERB_SET && (act->weight < 1 || act->weight > 10000))
                        return -EINVAL;
                return 0;
        case ACT_SCHED_FEATURE:
        case ACT_SYSCTL:
                return act->name[0] ? 0 : -EINVAL;
        case ACT_CGROUP_SUBTREE:
                return act->cgroup[0] ? 0 : -EINVAL;
        default:
                return -EINVAL;
        }
}

/* "tid 1234 (pid 1200)", "cgroup /x", "sched feature NAME", "sysctl NAME" */
static char *describe(const struct action *act, char *buf, size_t size) {
        switch (act->type) {
        case ACT_AFFINITY:
                if (act->task.pid > 0 && act->task.pid != act->task.tid)
                        snprintf(buf, size, "affinity of tid %d (pid %d)", (int) act->task.tid, (int) act->task.pid);
                else
                        snprintf(buf, size, "affinity of pid %d", (int) act->task.tid);
                break;
        case ACT_CGROUP_WEIGHT:
                snprintf(buf, size, "cpu weight of cgroup %s", act->cgroup);
                break;
        case ACT_SCHED_FEATURE:
                snprintf(buf, size, "sched feature %s", act->name);
                break;
        case ACT_SYSCTL:
                snprintf(buf, size, "sysctl %s", act->name);
                break;
        case ACT_CGROUP_SUBTREE:
                snprintf(buf, size, "cpu in cgroup.subtree_control of %s", act->cgroup);
                break;
        default:
                snprintf(buf, size, "unknown target");
                break;
        }
        return buf;
}

/* ---- events and the managed view ---- */

static void entry_to_managed(const struct entry *e, struct managed *m) {
        const char *name = target_name(&e->act);

        *m = (struct managed) {
                .type = e->act.type,
                .task = e->act.task,
                .mask = e->act.type == ACT_AFFINITY ? e->target.mask : (cpumask_t) {},
                .kind = e->act.kind,
                .partner = e->act.partner,
                .since_usec = e->since_usec,
        };
        snprintf(m->key, sizeof(m->key), "%s", e->key);
        snprintf(m->policy, sizeof(m->policy), "%s", e->act.policy);
        snprintf(m->reason, sizeof(m->reason), "%s", e->act.reason);
        value_format_short(e->act.type, name, &e->original, m->original, sizeof(m->original));
        value_format_short(e->act.type, name, &e->target, m->current, sizeof(m->current));
}

static void emit(struct applier *a, enum applier_event_kind kind, const struct entry *e, int error,
                 const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void emit(struct applier *a, enum applier_event_kind kind, const struct entry *e, int error,
                 const char *fmt, ...) {
        struct managed m;
        char msg[512];
        va_list ap;

        if (!a->event_fn)
                return;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        if (e)
                entry_to_managed(e, &m);
        a->event_fn(&(struct applier_event) {
                .kind = kind,
                .target = e ? &m : NULL,
                .error = error,
                .message = msg,
        }, a->event_userdata);
}

/* ---- journal glue ---- */

static void entry_to_record(const struct entry *e, struct journal_record *r) {
        const char *name = target_name(&e->act);

        *r = (struct journal_record) {
                .rec = JREC_BEGIN,
                .seq = e->seq,
                .type = e->act.type,
                .task = e->act.type == ACT_AFFINITY ? e->act.task : (struct task_id) {},
                .evidence = e->act.evidence_before,
                .kind = e->act.kind,
                .since_usec = e->since_usec,
                .time_usec = e->time_usec,
        };
        snprintf(r->key, sizeof(r->key), "%s", e->key);
        snprintf(r->name, sizeof(r->name), "%s", name);
        value_format(e->act.type, name, &e->original, r->original, sizeof(r->original));
        value_format(e->act.type, name, &e->target, r->target, sizeof(r->target));
        snprintf(r->policy, sizeof(r->policy), "%s", e->act.policy);
        snprintf(r->reason, sizeof(r->reason), "%s", e->act.reason);
        snprintf(r->restore, sizeof(r->restore), "%s", e->restore);
}

static int entry_from_record(const struct journal_record *r, bool applied, struct entry *e) {
        int k;

        *e = (struct entry) {
                .seq = r->seq,
                .applied = applied,
                .since_usec = r->since_usec,
                .time_usec = r->time_usec,
        };
        snprintf(e->key, sizeof(e->key), "%s", r->key);
        e->act.type = r->type;
        e->act.verb = VERB_SET;
        switch (r->type) {
        case ACT_AFFINITY:
                e->act.task = r->task;
                if (r->task.tid <= 0)
                        return -EINVAL;
                break;
        case ACT_CGROUP_WEIGHT:
        case ACT_CGROUP_SUBTREE:
                if (strlen(r->name) >= sizeof(e->act.cgroup))
                        return -EINVAL;
                strcpy(e->act.cgroup, r->name);
                break;
        case ACT_SCHED_FEATURE:
        case ACT_SYSCTL:
                if (strlen(r->name) >= sizeof(e->act.name))
                        return -EINVAL;
                strcpy(e->act.name, r->name);
                break;
        default:
                return -EINVAL;
        }
        snprintf(e->act.policy, sizeof(e->act.policy), "%s", r->policy);
        snprintf(e->act.reason, sizeof(e->act.reason), "%s", r->reason);
        snprintf(e->restore, sizeof(e->restore), "%s", r->restore);
        e->act.evidence_before = r->evidence;
        e->act.kind = r->kind;
        k = value_parse(r->type, target_name(&e->act), r->original, &e->original);
        if (k < 0)
                return k;
        k = value_parse(r->type, target_name(&e->act), r->target, &e->target);
        if (k < 0)
                return k;
        value_to_action(&e->target, &e->act);
        return 0;
}

static int journal_note(struct applier *a, enum journal_rec_type rec, uint64_t seq, const char *how) {
        struct journal_record *r;
        int k;

        /* struct journal_record carries two value buffers: keep it off the stack. */
        r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        r->rec = rec;
        r->seq = seq;
        if (how)
                snprintf(r->how, sizeof(r->how), "%s", how);
        k = journal_append(a->journal, r);
        free(r);
        return k;
}

static int journal_begin(struct applier *a, const struct entry *e) {
        struct journal_record *r;
        int k;

        r = malloc(sizeof(*r));
        if (!r)
                return -ENOMEM;
        entry_to_record(e, r);
        /* a mask too long for the record (value_format()'s "?") could not
         * be restored after a crash: such a change is not made */
        if (e->act.type == ACT_AFFINITY && (streq(r->original, "?") || streq(r->target, "?")))
                k = -E2BIG;
        else
                k = journal_append(a->journal, r);
        free(r);
        return k;
}

/* RELEASED is best effort: the change is already undone (or not ours);
 * a stale BEGIN replays as a no-op because the live value is checked. */
static void journal_released(struct applier *a, const struct entry *e, const char *how) {
        int k = journal_note(a, JREC_RELEASED, e->seq, how);
        if (k < 0)
                emit(a, APPLIER_EVENT_JOURNAL, e, k, "journal %s: cannot record release of seq %" PRIu64 ": %s",
                     journal_path(a->journal), e->seq, strerror(-k));
}

static int journal_rewrite_entries(struct applier *a) {
        struct journal_entry *je;
        int k;

        je = calloc(a->n_entries ? a->n_entries : 1, sizeof(*je));
        if (!je)
                return -ENOMEM;
        for (size_t i = 0; i < a->n_entries; i++) {
                entry_to_record(&a->entries[i], &je[i].begin);
                je[i].applied = a->entries[i].applied;
        }
        k = journal_rewrite(a->journal, je, a->n_entries);
        free(je);
        return k;
}

/* Rewrite when nothing is in force any more, or when the file grew. */
static void maybe_compact(struct applier *a) {
        int k;

        if (a->n_entries > 0 && journal_size(a->journal) < JOURNAL_COMPACT_BYTES)
                return;
        if (a->n_entries == 0 && journal_size(a->journal) < 256)
                return;   /* header only already */
        k = journal_rewrite_entries(a);
        if (k < 0)
                emit(a, APPLIER_EVENT_JOURNAL, NULL, k, "journal %s: compaction failed: %s",
                     journal_path(a->journal), strerror(-k));
}

/* ---- entries ---- */

static ssize_t find_key(struct applier *a, const char *key) {
        for (size_t i = 0; i < a->n_entries; i++)
                if (streq(a->entries[i].key, key))
                        return (ssize_t) i;
        return -1;
}

static int entries_push(struct applier *a, const struct entry *e) {
        if (a->n_entries >= a->allocated) {
                size_t na = a->allocated ? a->allocated * 2 : 8;
                struct entry *ne = realloc(a->entries, na * sizeof(*ne));
                if (!ne)
                        return -ENOMEM;
                a->entries = ne;
                a->allocated = na;
        }
        a->entries[a->n_entries++] = *e;
        return 0;
}

static void entries_remove(struct applier *a, size_t i) {
        memmove(a->entries + i, a->entries + i + 1, (a->n_entries - i - 1) * sizeof(struct entry));
        a->n_entries--;
}

/* Does an older entry of the same target hold exactly this live value? */
static bool older_entry_set(struct applier *a, size_t i, const struct value *live) {
        for (size_t j = 0; j < i; j++)
                if (streq(a->entries[j].key, a->entries[i].key) &&
                    value_equal(a->entries[i].act.type, live, &a->entries[j].target))
                        return true;
        return false;
}

/* Is child (a cgroup path) parent itself or below it? */
static bool cgroup_below(const char *child, const char *parent) {
        size_t n = strlen(parent);

        while (n > 0 && parent[n - 1] == '/')
                n--;
        if (n == 0)
                return true;   /* the root is everyone's ancestor */
        return strncmp(child, parent, n) == 0 && (child[n] == '/' || child[n] == '\0');
}

/* A subtree entry stays while a weight we manage lives below it. */
static bool subtree_needed(struct applier *a, const struct entry *sub) {
        for (size_t i = 0; i < a->n_entries; i++)
                if (a->entries[i].act.type == ACT_CGROUP_WEIGHT &&
                    !streq(a->entries[i].act.cgroup, sub->act.cgroup) &&
                    cgroup_below(a->entries[i].act.cgroup, sub->act.cgroup))
                        return true;
        return false;
}

/* Put the original back: a weight through the backend's exact restore when it has one. */
static int value_restore(struct applier *a, const struct entry *e, const struct value *v) {
        if (e->act.type == ACT_CGROUP_WEIGHT && a->ops->weight_restore)
                return a->ops->weight_restore(a->userdata, e->act.cgroup, v->weight, e->restore);
        return value_set(a, &e->act, v);
}

static const char *ops_last_error(struct applier *a) {
        const char *s = a->ops->last_error ? a->ops->last_error(a->userdata) : NULL;
        return s && s[0] ? s : NULL;
}

/* End of a batch of restores: let the backend finish what it deferred. */
static void ops_flush(struct applier *a) {
        int r;

        if (!a->ops->flush)
                return;
        r = a->ops->flush(a->userdata);
        if (r < 0)
                emit(a, APPLIER_EVENT_FAILED, NULL, r, "after restoring: %s",
                     ops_last_error(a) ? ops_last_error(a) : strerror(-r));
}

/* One entry_release(): the entry, its live value and how it went. */
struct release_pass {
        struct entry *e;
        const char *name;
        struct value live;
        const char *how;        /* the journal's word for it: restored, unchanged, foreign, gone... */
        char what[300], live_s[64], orig_s[64], ours_s[64];
};

static int release_gone(struct applier *a, struct release_pass *s, struct apply_outcome *o) {
        s->how = "gone";
        emit(a, APPLIER_EVENT_GONE, s->e, 0, "%s: %s: forgotten, nothing touched", s->what, gone_how(&s->e->act));
        if (o)
                snprintf(o->message, sizeof(o->message), "%s: %s: forgotten", s->what, gone_how(&s->e->act));
        return APPLY_GONE;
}

/*
 * The original no longer fits (CPU hotplug, cpuset change): narrow it as the
 * kernel would, or fall back to all allowed CPUs, but never leave it pinned.
 * Returns value_set()'s result, or @r when the allowed CPUs are unknown.
 */
static int restore_narrowed(struct applier *a, struct release_pass *s, struct value *restore, int r) {
        struct entry *e = s->e;
        cpumask_t allowed;

        if (a->ops->affinity_allowed(a->userdata, &e->act.task, &allowed) < 0 || cpumask_empty(&allowed))
                return r;
        restore->mask = cpumask_and(&e->original.mask, &allowed);
        if (cpumask_empty(&restore->mask))
                restore->mask = allowed;
        r = value_set(a, &e->act, restore);
        value_format_short(e->act.type, s->name, restore, s->orig_s, sizeof(s->orig_s));
        return r;
}

/* Put the original back: it is still what we set. */
static int release_restore(struct applier *a, struct release_pass *s, struct apply_outcome *o) {
        struct entry *e = s->e;
        struct value restore = e->original;
        const char *why, *d;
        int r;

        r = value_restore(a, e, &restore);
        if (r == -EINVAL && e->act.type == ACT_AFFINITY && a->ops->affinity_allowed)
                r = restore_narrowed(a, s, &restore, r);
        if (value_gone(&e->act, r))
                return release_gone(a, s, o);
        if (r == -EBUSY && e->act.type == ACT_CGROUP_SUBTREE) {
                /* Someone depends on the controller now (systemd for another
                 * unit, a child cgroup): taking it away would reset their
                 * weights. Leave it, say why, stop managing it. */
                why = ops_last_error(a);
                s->how = "in-use";
                emit(a, APPLIER_EVENT_FOREIGN, e, 0, "left %s enabled: in use now (%s)", s->what,
                     why ? why : strerror(-r));
                if (o)
                        snprintf(o->message, sizeof(o->message), "left %s enabled: in use now (%s)", s->what,
                                 why ? why : strerror(-r));
                return APPLY_FOREIGN;
        }
        if (r < 0) {
                why = ops_last_error(a);
                emit(a, APPLIER_EVENT_FAILED, e, r, "cannot restore %s to %s: %s%s%s", s->what, s->orig_s,
                     strerror(-r), why ? ": " : "", why ? why : "");
                if (o)
                        snprintf(o->message, sizeof(o->message), "cannot restore %s to %s: %s", s->what, s->orig_s,
                                 strerror(-r));
                return r;
        }
        s->how = "restored";
        /* how a weight went back (systemd, drop-in removed, exact cpu.shares) */
        d = e->act.type == ACT_CGROUP_WEIGHT && a->ops->last_detail ? a->ops->last_detail(a->userdata) : NULL;
        emit(a, APPLIER_EVENT_RESTORED, e, 0, "restored %s: %s -> %s%s%s%s", s->what, s->live_s, s->orig_s,
             d && d[0] ? " [" : "", d && d[0] ? d : "", d && d[0] ? "]" : "");
        if (o) {
                snprintf(o->after, sizeof(o->after), "%s", s->orig_s);
                snprintf(o->message, sizeof(o->message), "restored %s: %s -> %s", s->what, s->live_s, s->orig_s);
        }
        return APPLY_CHANGED;
}

/*
 * Is live still what we set? A thread's affinity reads back narrowed to
 * the CPUs online (sched_getaffinity() gives the mask and the active
 * CPUs): a pin of 0,2-7 reads 0,2-6 with CPU 7 offline, which is still
 * ours, not someone else's change to leave in place.
 */
static bool still_ours(struct applier *a, const struct entry *e, const struct value *live) {
        cpumask_t allowed, narrowed;

        if (value_equal(e->act.type, live, &e->target))
                return true;
        if (e->act.type != ACT_AFFINITY || !a->ops->affinity_allowed ||
            a->ops->affinity_allowed(a->userdata, &e->act.task, &allowed) < 0)
                return false;
        narrowed = cpumask_and(&e->target.mask, &allowed);
        return !cpumask_empty(&narrowed) && !cpumask_equal(&narrowed, &e->target.mask) &&
               cpumask_equal(&live->mask, &narrowed);
}

/* The live value against the original and ours: nothing to do, theirs, or a restore. */
static int release_decide(struct applier *a, size_t i, struct release_pass *s, struct apply_outcome *o) {
        struct entry *e = s->e;

        if (value_equal(e->act.type, &s->live, &e->original)) {
                /* BEGIN without APPLIED (crash before the change), or a crash
                 * after restoring but before RELEASED, or someone put the
                 * original back: nothing to do. */
                s->how = "unchanged";
                if (o)
                        snprintf(o->message, sizeof(o->message), "%s already %s: nothing to restore", s->what,
                                 s->live_s);
                return APPLY_NOTHING;
        }
        if (still_ours(a, e, &s->live))
                return release_restore(a, s, o);
        if (older_entry_set(a, i, &s->live)) {
                /* Crash between a superseding BEGIN and its change: the older
                 * entry of the same target still holds; it is handled next. */
                s->how = "superseded";
                if (o)
                        snprintf(o->message, sizeof(o->message), "%s: superseded entry, nothing to do", s->what);
                return APPLY_NOTHING;
        }
        /* Someone else changed it after us (taskset, systemd, a cpuset
         * move): theirs wins, we stop managing it. */
        s->how = "foreign";
        emit(a, APPLIER_EVENT_FOREIGN, e, 0,
             "%s changed by someone else to %s (we set %s, original %s): left alone, no longer managed", s->what,
             s->live_s, s->ours_s, s->orig_s);
        if (o)
                snprintf(o->message, sizeof(o->message), "%s changed by someone else to %s: left alone", s->what,
                         s->live_s);
        return APPLY_FOREIGN;
}

/*
 * Put entry i back if it is still ours; forget it in every case but a
 * failure. with_journal=false during recovery (the old file may end in a
 * torn line; it is rewritten afterwards instead).
 * Returns APPLY_CHANGED, APPLY_NOTHING (already the original),
 * APPLY_FOREIGN, APPLY_GONE or -errno (entry kept).
 */
static int entry_release(struct applier *a, size_t i, bool with_journal, struct apply_outcome *o) {
        struct release_pass s = { .e = &a->entries[i], .name = target_name(&a->entries[i].act) };
        struct entry *e = s.e;
        int r, result;

        describe(&e->act, s.what, sizeof(s.what));
        value_format_short(e->act.type, s.name, &e->original, s.orig_s, sizeof(s.orig_s));
        value_format_short(e->act.type, s.name, &e->target, s.ours_s, sizeof(s.ours_s));

        r = value_get(a, &e->act, &s.live);
        if (value_gone(&e->act, r))
                result = release_gone(a, &s, o);
        else if (r < 0) {
                emit(a, APPLIER_EVENT_FAILED, e, r, "cannot read %s to restore it: %s", s.what, strerror(-r));
                if (o)
                        snprintf(o->message, sizeof(o->message), "cannot read %s: %s", s.what, strerror(-r));
                return r;
        } else {
                value_format_short(e->act.type, s.name, &s.live, s.live_s, sizeof(s.live_s));
                if (o) {
                        snprintf(o->before, sizeof(o->before), "%s", s.live_s);
                        snprintf(o->after, sizeof(o->after), "%s", s.live_s);
                }
                result = release_decide(a, i, &s, o);
                if (result < 0)
                        return result;
        }

        if (with_journal)
                journal_released(a, e, s.how);
        entries_remove(a, i);
        if (with_journal)
                maybe_compact(a);
        return result;
}

/* ---- public ---- */

int applier_new(const char *runtime_dir, const struct apply_ops *ops, void *userdata, struct applier **ret) {
        struct applier *a;
        char path[PATH_MAX];
        int r;

        if (!runtime_dir || !ops || !ret)
                return -EINVAL;
        if (mkdir(runtime_dir, 0755) < 0 && errno != EEXIST)
                return -errno;

        a = calloc(1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        a->lock_fd = -1;
        a->ops = ops;
        a->userdata = userdata;
        a->next_seq = 1;
        a->runtime_dir = strdup(runtime_dir);
        if (!a->runtime_dir) {
                r = -ENOMEM;
                goto fail;
        }

        /* One writer per journal: a second daemon on the same runtime dir
         * would restore values under the first one's feet. A separate lock
         * file because the journal itself is replaced by rename. */
        if (snprintf(path, sizeof(path), "%s/" JOURNAL_FILE ".lock", runtime_dir) >= (int) sizeof(path)) {
                r = -ENAMETOOLONG;
                goto fail;
        }
        a->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (a->lock_fd < 0) {
                r = -errno;
                goto fail;
        }
        if (flock(a->lock_fd, LOCK_EX | LOCK_NB) < 0) {
                r = errno == EWOULDBLOCK ? -EBUSY : -errno;
                goto fail;
        }

        if (ops->boot_id) {
                char buf[64];
                r = ops->boot_id(userdata, buf, sizeof(buf));
                if (r >= 0)
                        normalize_ws(buf, a->boot_id, sizeof(a->boot_id));
        }

        r = journal_new(runtime_dir, a->boot_id, &a->journal);
        if (r < 0)
                goto fail;

        *ret = a;
        return 0;
fail:
        applier_free(a);
        return r;
}

struct applier *applier_free(struct applier *a) {
        if (!a)
                return NULL;
        journal_free(a->journal);
        if (a->lock_fd >= 0)
                close(a->lock_fd);   /* releases the flock */
        free(a->entries);
        free(a->view);
        free(a->runtime_dir);
        free(a);
        return NULL;
}

void applier_set_event_handler(struct applier *a, applier_event_fn fn, void *userdata) {
        a->event_fn = fn;
        a->event_userdata = userdata;
}

const char *applier_journal_path(struct applier *a) {
        return journal_path(a->journal);
}

static int start_fresh(struct applier *a) {
        a->n_entries = 0;
        return journal_rewrite(a->journal, NULL, 0);
}

const struct applier_recover_report *applier_get_recover_report(struct applier *a) {
        return &a->recover_report;
}

/* A journal of another version, or not a journal at all: kept aside, and a new one started. */
static int recover_unreadable(struct applier *a, const struct journal_contents *c, int err,
                              struct applier_recover_report *rep) {
        int k;

        /* Never guess what a journal of another version means: keep it
         * for the administrator and start a new one. */
        k = journal_move_aside(a->journal, rep->moved_aside, sizeof(rep->moved_aside));
        if (k < 0)
                return k;
        k = start_fresh(a);
        if (k < 0)
                return k;
        a->recovered = true;
        if (err == -EPROTONOSUPPORT)
                snprintf(rep->message, sizeof(rep->message),
                         "journal version %u is not supported (this build reads %d): moved aside to %s, "
                         "nothing restored from it; check its entries by hand",
                         c->version, JOURNAL_VERSION, rep->moved_aside);
        else
                snprintf(rep->message, sizeof(rep->message),
                         "journal is not an affinityd journal: moved aside to %s, nothing restored from it",
                         rep->moved_aside);
        emit(a, APPLIER_EVENT_JOURNAL, NULL, err, "%s", rep->message);
        a->recover_report = *rep;
        return err;
}

/* What reading found wrong; a damaged or oversized journal is kept aside as it is. */
static int recover_keep_damaged(struct applier *a, const struct journal_contents *c,
                                struct applier_recover_report *rep) {
        int k;

        for (size_t i = 0; i < c->n_warnings; i++)
                emit(a, APPLIER_EVENT_JOURNAL, NULL, -EBADMSG, "%s: %s", journal_path(a->journal), c->warnings[i]);
        rep->torn = c->n_torn;
        rep->corrupt = c->n_corrupt;
        rep->unknown = c->n_unknown;
        rep->entries = (unsigned) c->n_entries;
        if (c->n_corrupt == 0 && !c->too_large)
                return 0;
        /* A damaged record may be a change still in force whose original
         * only it knew; the rewrite below would lose it. Keep the file as
         * it is for the administrator (as for a bad header); the good
         * records are restored from what was read. */
        k = journal_move_aside(a->journal, rep->moved_aside, sizeof(rep->moved_aside));
        if (k < 0)
                return k;
        if (c->too_large)
                emit(a, APPLIER_EVENT_JOURNAL, NULL, -EFBIG,
                     "journal is too large (%" PRIu64 " bytes > %u): kept as %s; restoring from its first %u bytes",
                     c->too_large, JOURNAL_READ_MAX, rep->moved_aside, JOURNAL_READ_MAX);
        if (c->n_corrupt > 0)
                emit(a, APPLIER_EVENT_JOURNAL, NULL, -EBADMSG,
                     "journal has %u damaged record(s) (logged above): kept as %s; the changes they "
                     "recorded may still be in force, check them by hand",
                     c->n_corrupt, rep->moved_aside);
        return 0;
}

/* The journal's entries become ours, unless they are of another boot. */
static int recover_load(struct applier *a, struct journal_contents *c, struct applier_recover_report *rep) {
        int k;

        if (c->max_seq >= a->next_seq)
                a->next_seq = c->max_seq + 1;

        if (c->n_entries > 0 && a->boot_id[0] && c->boot_id[0] && !streq(c->boot_id, "-") &&
            !streq(c->boot_id, a->boot_id)) {
                /* Kernel state does not survive a reboot (affinity, cgroups,
                 * sched_features, sysctls are all reset), and task identities
                 * of another boot may collide with this one's: drop it all. */
                rep->stale_boot = (unsigned) c->n_entries;
                emit(a, APPLIER_EVENT_JOURNAL, NULL, 0,
                     "journal is from another boot (%s): %zu entries dropped, nothing restored",
                     c->boot_id, c->n_entries);
                c->n_entries = 0;
        }

        a->n_entries = 0;
        for (size_t i = 0; i < c->n_entries; i++) {
                struct entry e;

                k = entry_from_record(&c->entries[i].begin, c->entries[i].applied, &e);
                if (k < 0) {
                        rep->corrupt++;
                        emit(a, APPLIER_EVENT_JOURNAL, NULL, k, "journal entry seq %" PRIu64 " (%s) unusable: %s",
                             c->entries[i].begin.seq, c->entries[i].begin.key, strerror(-k));
                        continue;
                }
                k = entries_push(a, &e);
                if (k < 0)
                        return k;
        }
        return 0;
}

/* Every loaded entry put back, newest first as on stop; what fails stays. */
static void recover_restore(struct applier *a, struct applier_recover_report *rep) {
        /* The backend relearns what it needs for an exact restore (v1 cpu.shares). */
        for (size_t i = 0; i < a->n_entries; i++)
                if (a->entries[i].act.type == ACT_CGROUP_WEIGHT && a->ops->weight_recall)
                        (void) a->ops->weight_recall(a->userdata, a->entries[i].act.cgroup, a->entries[i].restore);

        for (size_t i = a->n_entries; i > 0; i--) {
                if (a->entries[i - 1].act.type == ACT_CGROUP_SUBTREE && subtree_needed(a, &a->entries[i - 1])) {
                        rep->failed++;   /* a weight below it could not be restored: kept with it */
                        continue;
                }
                switch (entry_release(a, i - 1, false, NULL)) {
                case APPLY_CHANGED: rep->restored++; break;
                case APPLY_NOTHING: rep->unchanged++; break;
                case APPLY_FOREIGN: rep->foreign++; break;
                case APPLY_GONE: rep->gone++; break;
                default: rep->failed++; break;
                }
        }

        if (rep->restored > 0)
                ops_flush(a);
}

static void recover_message(struct applier *a, struct applier_recover_report *rep) {
        snprintf(rep->message, sizeof(rep->message),
                 "journal %s: %u entries: %u restored, %u already original, %u changed by others (left), "
                 "%u exited, %u failed (kept), %u from another boot; %u torn, %u damaged, %u unknown lines ignored%s%s",
                 journal_path(a->journal), rep->entries, rep->restored, rep->unchanged, rep->foreign, rep->gone,
                 rep->failed, rep->stale_boot, rep->torn, rep->corrupt, rep->unknown,
                 rep->moved_aside[0] ? "; the damaged journal is kept as " : "", rep->moved_aside);
}

int applier_recover(struct applier *a) {
        struct applier_recover_report rep = {};
        struct journal_contents c = {};
        int r;

        if (a->recovered)
                return -EALREADY;

        r = journal_read(journal_path(a->journal), &c);
        if (r == -ENOENT) {
                r = start_fresh(a);
                if (r < 0)
                        return r;
                a->recovered = true;
                snprintf(rep.message, sizeof(rep.message), "no journal at %s: nothing to restore",
                         journal_path(a->journal));
                a->recover_report = rep;
                return 0;
        }
        if (r == -EPROTONOSUPPORT || r == -EBADMSG)
                return recover_unreadable(a, &c, r, &rep);
        if (r < 0)
                return r;

        r = recover_keep_damaged(a, &c, &rep);
        if (r >= 0)
                r = recover_load(a, &c, &rep);
        journal_contents_clear(&c);
        /* a damaged journal was moved aside: the good records go into a
         * new one before the restores, which can take minutes (systemd's
         * reloads), so that a kill among them loses none */
        if (r >= 0 && rep.moved_aside[0])
                r = journal_rewrite_entries(a);
        if (r < 0)
                return r;

        recover_restore(a, &rep);

        /* Only what failed stays; the rewrite also drops a torn tail so
         * appends never glue onto half a line. */
        r = journal_rewrite_entries(a);
        if (r < 0)
                return r;
        a->recovered = true;
        recover_message(a, &rep);
        a->recover_report = rep;
        return (int) rep.restored;
}

/*
 * Their entry for a target one of ours (the first n of a's) holds: ours
 * keeps its original and its restore, and takes their later change as what
 * is in force (the two chained, O -> ours -> theirs, restore to O). Not
 * when theirs is not known to be in force (no APPLIED), or is the same
 * change (both journals hold it after a kill between the two rewrites).
 * True when the target is one of ours: theirs is then no entry of its own.
 */
static bool adopt_into_ours(struct applier *a, size_t n, const struct entry *theirs) {
        for (size_t k = 0; k < n; k++) {
                struct entry *ours = &a->entries[k];

                if (!streq(ours->key, theirs->key))
                        continue;
                if (theirs->applied && !value_equal(ours->act.type, &ours->target, &theirs->target)) {
                        ours->target = theirs->target;
                        ours->act = theirs->act;
                }
                return true;
        }
        return false;
}

int applier_adopt(struct applier *a, struct applier *from) {
        size_t n0 = a->n_entries;
        _cleanup_free_ struct entry *saved = NULL;
        int r = 0;

        if (!a->recovered || !from->recovered)
                return -ESTALE;
        if (from->n_entries == 0)
                return 0;
        if (n0 > 0) {   /* ours as they were, for a failed rewrite */
                saved = malloc(n0 * sizeof(*saved));
                if (!saved)
                        return -ENOMEM;
                memcpy(saved, a->entries, n0 * sizeof(*saved));
        }
        /* theirs are newer than ours (they ran last), so pushed after ours:
         * restored first; two of theirs for one target stay a chain */
        for (size_t i = 0; r >= 0 && i < from->n_entries; i++) {
                struct entry e = from->entries[i];

                if (adopt_into_ours(a, n0, &e))
                        continue;
                e.seq = a->next_seq++;   /* spent even on failure, as a set's: the rewrite may have landed */
                r = entries_push(a, &e);
        }
        /* in our journal before out of theirs: a kill in between leaves
         * both, and the second restore finds the original live ("unchanged") */
        if (r >= 0)
                r = journal_rewrite_entries(a);
        if (r < 0) {
                if (n0 > 0)
                        memcpy(a->entries, saved, n0 * sizeof(*saved));
                a->n_entries = n0;
                return r;
        }
        r = (int) (a->n_entries - n0);
        from->n_entries = 0;
        int k = journal_rewrite_entries(from);
        if (k < 0)
                emit(a, APPLIER_EVENT_JOURNAL, NULL, k, "journal %s: cannot empty it after taking over its entries: %s",
                     journal_path(from->journal), strerror(-k));
        return r;
}

static int apply_release(struct applier *a, const struct action *act, const char *key, bool dry_run,
                         struct apply_outcome *o) {
        ssize_t i = find_key(a, key);
        char what[300];

        describe(act, what, sizeof(what));
        if (i < 0) {
                snprintf(o->message, sizeof(o->message), "%s is not managed: nothing to release", what);
                return APPLY_NOTHING;
        }
        if (dry_run) {
                struct entry *e = &a->entries[i];
                const char *name = target_name(&e->act);
                char orig_s[64];
                struct value live;

                value_format_short(e->act.type, name, &e->original, orig_s, sizeof(orig_s));
                if (value_get(a, &e->act, &live) >= 0)
                        value_format_short(e->act.type, name, &live, o->before, sizeof(o->before));
                snprintf(o->after, sizeof(o->after), "%s", orig_s);
                snprintf(o->message, sizeof(o->message), "would restore %s: %s -> %s", what,
                         o->before[0] ? o->before : "?", orig_s);
                return APPLY_NOTHING;
        }
        return entry_release(a, (size_t) i, true, o);
}

static void entry_adopt(struct entry *e, const struct action *act) {
        e->act.kind = act->kind;
        e->act.partner = act->partner;
        e->act.evidence_before = act->evidence_before;
        snprintf(e->act.policy, sizeof(e->act.policy), "%s", act->policy);
        snprintf(e->act.reason, sizeof(e->act.reason), "%s", act->reason);
}

static int apply_set(struct applier *a, const struct action *act, const char *key, uint64_t now_usec,
                     bool dry_run, struct apply_outcome *o);

/*
 * Before the first change of a cgroup's weight: ask the backend what it
 * needs. Every ancestor that must hand "cpu" down becomes its own journaled
 * change (ACT_CGROUP_SUBTREE), made before the weight's BEGIN, so that
 * restoring newest first takes the weight back and then the controller.
 */
static int weight_prepare(struct applier *a, const struct action *act, uint64_t now_usec, char *restore,
                          size_t restore_size) {
        _cleanup_strv_free_ char **parents = NULL;
        int r;

        restore[0] = '\0';
        if (!a->ops->weight_prepare)
                return 0;
        r = a->ops->weight_prepare(a->userdata, act->cgroup, act->weight, &parents, restore, restore_size);
        if (r < 0)
                return r;
        for (char **p = parents; p && *p; p++) {
                struct action sub = {
                        .type = ACT_CGROUP_SUBTREE,
                        .verb = VERB_SET,
                        .enable = true,
                        .kind = act->kind,
                        .evidence_before = act->evidence_before,
                };
                struct apply_outcome so = {};
                char key[128];

                if (strlen(*p) >= sizeof(sub.cgroup))
                        return -ENAMETOOLONG;
                strcpy(sub.cgroup, *p);
                snprintf(sub.name, sizeof(sub.name), "cpu");
                snprintf(sub.policy, sizeof(sub.policy), "%s", act->policy);
                snprintf(sub.reason, sizeof(sub.reason), "so that %.100s has a cpu.weight", act->cgroup);
                if (!action_target_key(&sub, key, sizeof(key)))
                        return -ENAMETOOLONG;
                r = apply_set(a, &sub, key, now_usec, false, &so);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* What weight_prepare() would enable first, for a dry run's message:
 * ", and +cpu in the cgroup.subtree_control of /a, /a/b" (prepare only reads). */
static void dry_run_subtrees(struct applier *a, const struct action *act, char *buf, size_t size) {
        _cleanup_strv_free_ char **parents = NULL;
        char restore[512];
        size_t n;

        buf[0] = '\0';
        if (!a->ops->weight_prepare ||
            a->ops->weight_prepare(a->userdata, act->cgroup, act->weight, &parents, restore, sizeof(restore)) < 0 ||
            !parents || !parents[0])
                return;
        snprintf(buf, size, ", and +cpu in the cgroup.subtree_control of");
        for (char **p = parents; *p; p++) {
                n = strlen(buf);
                snprintf(buf + n, size - n, "%s %s", p == parents ? "" : ",", *p);
        }
}

/* One apply_set(): the action's target, its live value and the entry it would become. */
struct set_pass {
        const struct action *act;
        const char *name;
        ssize_t i;              /* the entry that manages the target already, or -1 */
        struct value live, target;
        struct entry e;
        char what[300], live_s[64], target_s[64], orig_s[64];
};

/* What the action asks for, and whether we manage its target already. */
static void set_target(struct applier *a, struct set_pass *s, const char *key, struct apply_outcome *o) {
        describe(s->act, s->what, sizeof(s->what));
        value_from_action(s->act, &s->target);
        value_format_short(s->act->type, s->name, &s->target, s->target_s, sizeof(s->target_s));
        snprintf(o->after, sizeof(o->after), "%s", s->target_s);
        s->i = find_key(a, key);
}

static int set_unreadable(const struct set_pass *s, int error, bool dry_run, struct apply_outcome *o) {
        if (dry_run) {
                snprintf(o->message, sizeof(o->message), "would set %s to %s (cannot read it now: %s)", s->what,
                         s->target_s, strerror(-error));
                return APPLY_NOTHING;
        }
        snprintf(o->message, sizeof(o->message), "cannot read %s: %s", s->what, strerror(-error));
        return error;
}

enum set_verdict {
        SET_NOTHING,    /* as wanted already, or dry run: o->message says why */
        SET_RELEASE,    /* the managed entry is let go of instead */
        SET_CHANGE,
};

/* The live value against the target and against the entry that manages it. */
static enum set_verdict set_verdict(struct applier *a, const struct set_pass *s, bool dry_run,
                                    struct apply_outcome *o) {
        enum action_type t = s->act->type;
        struct entry *old = s->i >= 0 ? &a->entries[s->i] : NULL;

        if (value_equal(t, &s->live, &s->target)) {
                if (old && !dry_run && value_equal(t, &s->target, &old->target))
                        /* Ours already, now for another reason: a server thread kept on its
                         * CPU for its next client. Its original stays as recorded; who it
                         * is held for changes, so the pair that ended lets go of nothing. */
                        entry_adopt(old, s->act);
                snprintf(o->message, sizeof(o->message), "%s already %s: nothing to do", s->what, s->live_s);
                return SET_NOTHING;
        }

        if (old && !value_equal(t, &s->live, &old->target)) {
                /* We manage it, but the live value is not what we set. */
                if (dry_run) {
                        snprintf(o->message, sizeof(o->message),
                                 "would leave %s alone: changed by someone else to %s", s->what, s->live_s);
                        return SET_NOTHING;
                }
                return SET_RELEASE;
        }
        if (old && value_equal(t, &s->target, &old->original)) {
                /* Asked to go back to the original: that is a release. */
                if (dry_run) {
                        snprintf(o->message, sizeof(o->message), "would restore %s: %s -> %s", s->what, s->live_s,
                                 s->target_s);
                        return SET_NOTHING;
                }
                return SET_RELEASE;
        }
        return SET_CHANGE;
}

/* The entry of the change: the original is the old entry's when there is one. */
static void set_entry_new(struct applier *a, struct set_pass *s, const char *key, uint64_t now_usec) {
        s->e = (struct entry) {
                .seq = a->next_seq,
                .act = *s->act,
                .original = s->i >= 0 ? a->entries[s->i].original : s->live,
                .target = s->target,
                .applied = true,
                .since_usec = now_usec,
        };
        s->e.act.verb = VERB_SET;
        snprintf(s->e.key, sizeof(s->e.key), "%s", key);
        value_format_short(s->act->type, s->name, &s->e.original, s->orig_s, sizeof(s->orig_s));
}

static int set_dry_run(struct applier *a, const struct set_pass *s, struct apply_outcome *o) {
        char also[256] = "";

        if (s->act->type == ACT_CGROUP_WEIGHT && s->i < 0)
                dry_run_subtrees(a, s->act, also, sizeof(also));
        snprintf(o->message, sizeof(o->message), "would set %s: %s -> %s (original %s)%s", s->what, s->live_s,
                 s->target_s, s->orig_s, also);
        return APPLY_NOTHING;
}

/* A weight's restore: the old entry's, or what weight_prepare() made ready. */
static int set_weight_restore(struct applier *a, struct set_pass *s, uint64_t now_usec, struct apply_outcome *o) {
        int r;

        if (s->i >= 0) {
                /* The true original, and how to put it back, are the old entry's. */
                snprintf(s->e.restore, sizeof(s->e.restore), "%s", a->entries[s->i].restore);
                return 0;
        }
        r = weight_prepare(a, s->act, now_usec, s->e.restore, sizeof(s->e.restore));
        if (r < 0) {
                snprintf(o->message, sizeof(o->message), "cannot prepare %s: %s", s->what, strerror(-r));
                return r;
        }
        /* weight_prepare may have added entries: the seq moved on */
        s->e.seq = a->next_seq;
        return 0;
}

/* Write-ahead: no change without a durable record of the original. */
static int set_write(struct applier *a, struct set_pass *s, struct apply_outcome *o) {
        struct timespec ts;
        int r;

        clock_gettime(CLOCK_REALTIME, &ts);
        s->e.time_usec = (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;

        r = journal_begin(a, &s->e);
        /* spent even on failure: a BEGIN that reached the file but not the
         * disk's cache may still be there, and two of one seq are read as one */
        a->next_seq++;
        if (r < 0) {
                emit(a, APPLIER_EVENT_JOURNAL, NULL, r, "journal %s: cannot record change of %s, not changing it: %s",
                     journal_path(a->journal), s->what, strerror(-r));
                snprintf(o->message, sizeof(o->message), "journal write failed: %s", strerror(-r));
                return r;
        }

        r = value_set(a, s->act, &s->target);
        if (r < 0) {
                journal_released(a, &s->e, "failed");
                snprintf(o->message, sizeof(o->message), "cannot set %s to %s: %s", s->what, s->target_s,
                         strerror(-r));
                if (r == -ESRCH && s->i >= 0) {
                        /* The managed target itself is gone. */
                        emit(a, APPLIER_EVENT_GONE, &a->entries[s->i], 0, "%s: %s: forgotten, nothing touched",
                             s->what, gone_how(s->act));
                        journal_released(a, &a->entries[s->i], "gone");
                        entries_remove(a, (size_t) s->i);
                        maybe_compact(a);
                } else if (r != -ESRCH)
                        emit(a, APPLIER_EVENT_FAILED, &s->e, r, "cannot set %s to %s: %s", s->what, s->target_s,
                             strerror(-r));
                return r;
        }
        return 0;
}

static int set_journal_applied(struct applier *a, const struct set_pass *s, struct apply_outcome *o) {
        int k, u;

        k = journal_note(a, JREC_APPLIED, s->e.seq, NULL);
        if (k >= 0)
                return 0;
        /* The journal cannot follow: undo rather than run with a change
         * whose record may be incomplete. */
        u = value_set(a, s->act, &s->live);
        emit(a, APPLIER_EVENT_JOURNAL, &s->e, k, "journal %s: cannot record change of %s: %s; change %s",
             journal_path(a->journal), s->what, strerror(-k), u >= 0 ? "undone" : "could NOT be undone");
        if (u >= 0)
                journal_released(a, &s->e, "failed");
        snprintf(o->message, sizeof(o->message), "journal write failed: %s", strerror(-k));
        return k;
}

/* The new entry carries the true original; the old one is done. */
static int set_keep(struct applier *a, const struct set_pass *s, struct apply_outcome *o) {
        int r;

        if (s->i >= 0) {
                journal_released(a, &a->entries[s->i], "superseded");
                entries_remove(a, (size_t) s->i);
        }
        r = entries_push(a, &s->e);
        if (r < 0)
                return r;   /* in the journal; restored at the next start */

        emit(a, APPLIER_EVENT_SET, &s->e, 0, "set %s: %s -> %s (original %s) [%s: %s]", s->what, s->live_s,
             s->target_s, s->orig_s, s->act->policy, s->act->reason);
        snprintf(o->message, sizeof(o->message), "set %s: %s -> %s", s->what, s->live_s, s->target_s);
        maybe_compact(a);
        return APPLY_CHANGED;
}

/*
 * Set the action's target: read it, decide (nothing, release, change), and
 * for a change write the journal's BEGIN, change it, record APPLIED and keep
 * the entry.
 */
static int apply_set(struct applier *a, const struct action *act, const char *key, uint64_t now_usec,
                     bool dry_run, struct apply_outcome *o) {
        struct set_pass s = { .act = act, .name = target_name(act) };
        int r;

        set_target(a, &s, key, o);
        r = value_get(a, act, &s.live);
        if (r == -ESRCH && s.i >= 0 && !dry_run)
                return entry_release(a, (size_t) s.i, true, o);   /* the managed target is gone */
        if (r < 0)
                return set_unreadable(&s, r, dry_run, o);
        value_format_short(act->type, s.name, &s.live, s.live_s, sizeof(s.live_s));
        snprintf(o->before, sizeof(o->before), "%s", s.live_s);

        switch (set_verdict(a, &s, dry_run, o)) {
        case SET_NOTHING:
                return APPLY_NOTHING;
        case SET_RELEASE:
                return entry_release(a, (size_t) s.i, true, o);
        case SET_CHANGE:
                break;
        }

        set_entry_new(a, &s, key, now_usec);
        if (dry_run)
                return set_dry_run(a, &s, o);
        if (act->type == ACT_CGROUP_WEIGHT) {
                r = set_weight_restore(a, &s, now_usec, o);
                if (r < 0)
                        return r;
        }
        r = set_write(a, &s, o);
        if (r < 0)
                return r;
        r = set_journal_applied(a, &s, o);
        if (r < 0)
                return r;
        return set_keep(a, &s, o);
}

/*
 * A "+cpu" we enabled for weights that are all gone (released, failed,
 * changed by someone else) is taken back now rather than at stop. Newest
 * first: a deeper cgroup's subtree_control goes before its parent's (the
 * kernel refuses the other order).
 */
static void release_unneeded_subtrees(struct applier *a) {
        for (size_t i = a->n_entries; i > 0; i--) {
                if (i > a->n_entries)
                        continue;   /* entries went away under us */
                if (a->entries[i - 1].act.type != ACT_CGROUP_SUBTREE || subtree_needed(a, &a->entries[i - 1]))
                        continue;
                (void) entry_release(a, i - 1, true, NULL);
        }
}

int applier_apply_full(struct applier *a, const struct action *act, uint64_t now_usec, bool dry_run,
                       struct apply_outcome *ret_outcome) {
        struct apply_outcome o = {};
        char key[128];
        int r;

        if (!a || !act)
                return -EINVAL;
        if (!a->recovered && !dry_run)
                return -ESTALE;
        r = action_validate(act);
        if (r < 0)
                return r;
        if (!action_target_key(act, key, sizeof(key)))
                return -ENAMETOOLONG;
        snprintf(o.key, sizeof(o.key), "%s", key);

        if (act->verb == VERB_RELEASE)
                r = apply_release(a, act, key, dry_run, &o);
        else
                r = apply_set(a, act, key, now_usec, dry_run, &o);
        if (act->type == ACT_CGROUP_WEIGHT && !dry_run) {
                release_unneeded_subtrees(a);
                ops_flush(a);
        }
        if (r >= 0)
                o.result = r;
        if (ret_outcome)
                *ret_outcome = o;
        if (r < 0)
                return r;
        return r == APPLY_CHANGED ? 1 : 0;
}

int applier_apply(struct applier *a, const struct action *act, uint64_t now_usec, bool dry_run) {
        return applier_apply_full(a, act, now_usec, dry_run, NULL);
}

static int restore_matching(struct applier *a, pid_t pid) {
        int restored = 0, first_error = 0;
        bool any = false;

        if (!a->recovered)
                return -ESTALE;
        for (size_t i = a->n_entries; i > 0; i--) {
                struct entry *e = &a->entries[i - 1];
                int r;

                if (pid > 0 && (e->act.type != ACT_AFFINITY || e->act.task.pid != pid))
                        continue;
                if (e->act.type == ACT_CGROUP_SUBTREE && subtree_needed(a, e)) {
                        /* a weight below it could not be restored: it still needs cpu */
                        if (first_error == 0)
                                first_error = -EBUSY;
                        continue;
                }
                any = true;
                r = entry_release(a, i - 1, true, NULL);
                if (r == APPLY_CHANGED)
                        restored++;
                else if (r < 0 && first_error == 0)
                        first_error = r;
        }
        if (restored > 0)
                ops_flush(a);
        if (pid > 0 && !any)
                return -ENOENT;
        return first_error < 0 ? first_error : restored;
}

int applier_restore_all(struct applier *a) {
        return restore_matching(a, 0);
}

int applier_restore_pid(struct applier *a, pid_t pid) {
        if (pid <= 0)
                return -EINVAL;
        return restore_matching(a, pid);
}

int applier_reconcile(struct applier *a) {
        int dropped = 0;

        if (!a->recovered)
                return -ESTALE;
        for (size_t i = a->n_entries; i > 0; i--) {
                struct entry *e = &a->entries[i - 1];
                struct value live;
                char what[300], live_s[64], ours_s[64];
                int r;

                r = value_get(a, &e->act, &live);
                if (r < 0 && !value_gone(&e->act, r))
                        continue;   /* transient: ask again next interval */
                if (r >= 0 && still_ours(a, e, &live))
                        continue;

                describe(&e->act, what, sizeof(what));
                if (r < 0) {
                        emit(a, APPLIER_EVENT_GONE, e, 0, "%s: %s: forgotten", what, gone_how(&e->act));
                        journal_released(a, e, "gone");
                } else {
                        value_format_short(e->act.type, target_name(&e->act), &live, live_s, sizeof(live_s));
                        value_format_short(e->act.type, target_name(&e->act), &e->target, ours_s, sizeof(ours_s));
                        emit(a, APPLIER_EVENT_FOREIGN, e, 0,
                             "%s changed by someone else to %s (we set %s): left alone, no longer managed",
                             what, live_s, ours_s);
                        journal_released(a, e, "foreign");
                }
                entries_remove(a, i - 1);
                dropped++;
        }
        if (dropped > 0) {
                release_unneeded_subtrees(a);
                maybe_compact(a);
        }
        return dropped;
}

int applier_list(struct applier *a, const struct managed **ret, size_t *ret_n) {
        if (a->n_entries > a->n_view || !a->view) {
                struct managed *nv = realloc(a->view, (a->n_entries ? a->n_entries : 1) * sizeof(*nv));
                if (!nv)
                        return -ENOMEM;
                a->view = nv;
        }
        for (size_t i = 0; i < a->n_entries; i++)
                entry_to_managed(&a->entries[i], &a->view[i]);
        a->n_view = a->n_entries;
        *ret = a->view;
        *ret_n = a->n_entries;
        return 0;
}

int applier_get_evidence(struct applier *a, const char *key, double *ret_evidence_before, uint64_t *ret_since_usec) {
        ssize_t i = find_key(a, key);

        if (i < 0)
                return -ENOENT;
        if (ret_evidence_before)
                *ret_evidence_before = a->entries[i].act.evidence_before;
        if (ret_since_usec)
                *ret_since_usec = a->entries[i].since_usec;
        return 0;
}

int applier_to_json(struct applier *a, uint64_t now_usec, struct json_object **ret) {
        struct json_object *arr;

        arr = json_object_new_array();
        if (!arr)
                return -ENOMEM;
        for (size_t i = 0; i < a->n_entries; i++) {
                const struct entry *e = &a->entries[i];
                const char *name = target_name(&e->act);
                char orig[JOURNAL_VALUE_MAX], cur[JOURNAL_VALUE_MAX];
                struct json_object *o = json_object_new_object();

                if (!o) {
                        json_object_put(arr);
                        return -ENOMEM;
                }
                json_object_object_add(o, AFF_CHANGE_TARGET, json_object_new_string(e->key));
                json_object_object_add(o, AFF_CHANGE_TYPE, json_object_new_string(action_type_to_string(e->act.type)));
                if (e->act.type == ACT_AFFINITY) {
                        json_object_object_add(o, "pid", json_object_new_int(e->act.task.pid));
                        json_object_object_add(o, "tid", json_object_new_int(e->act.task.tid));
                } else
                        json_object_object_add(o, "name", json_object_new_string(name));
                json_object_object_add(o, AFF_CHANGE_POLICY, json_object_new_string(e->act.policy));
                json_object_object_add(o, AFF_CHANGE_REASON, json_object_new_string(e->act.reason));
                json_object_object_add(o, "evidence", json_object_new_double(e->act.evidence_before));
                json_object_object_add(o, AFF_CHANGE_ORIGINAL,
                                       json_object_new_string(value_format(e->act.type, name, &e->original, orig, sizeof(orig))));
                json_object_object_add(o, AFF_CHANGE_CURRENT,
                                       json_object_new_string(value_format(e->act.type, name, &e->target, cur, sizeof(cur))));
                json_object_object_add(o, "since_usec", json_object_new_uint64(e->since_usec));
                json_object_object_add(o, AFF_CHANGE_AGE_S,
                                       json_object_new_double(now_usec > e->since_usec
                                                              ? (double) (now_usec - e->since_usec) / USEC_PER_SEC
                                                              : 0.0));
                json_object_object_add(o, "applied", json_object_new_boolean(e->applied));
                json_object_array_add(arr, o);
        }
        *ret = arr;
        return 0;
}
