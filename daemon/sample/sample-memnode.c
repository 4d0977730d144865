/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Reading where pair members' memory is (memnode.h): /proc/PID/numa_maps
 * below the root prefix, cached per process and bounded in cost.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/json-util.h"
#include "common/util.h"
#include "sample/memnode.h"
#include "sample/snapshot.h"

struct memnode_memo {
        struct memnode *items;
        size_t n, allocated;
        uint64_t next_read_usec;      /* the duty-cycle bound: no read before this */
        uint64_t reads, read_usec_total, last_cost_usec;
        uint64_t skipped_large;       /* processes over MEMNODE_RSS_MAX_KIB, not read */
        uint64_t failed;              /* reads that failed (exited, no permission, malformed) */
};

/* A whole word of [w, w + n) as an unsigned number; -EINVAL if it is not one. */
static int parse_word_u64(const char *w, size_t n, uint64_t *ret) {
        char num[24];

        if (n == 0 || n >= sizeof(num))
                return -EINVAL;
        memcpy(num, w, n);
        num[n] = '\0';
        return util_parse_u64(num, ret);
}

/*
 * One line: "7f.. default file=/usr/bin/x anon=3 dirty=3 N0=2 N1=1
 * kernelpagesize_kB=4", scanned word by word in place (a file name may be
 * as long as PATH_MAX, so no copy into a fixed buffer).
 */
static int parse_line(const char *line, size_t len, uint64_t page_kib, uint64_t kib[MEMNODE_NODES_MAX],
                      uint64_t *total) {
        uint64_t pages[MEMNODE_NODES_MAX] = {}, other = 0, psize = page_kib;
        const char *p = line, *end = line + len;
        bool any = false;

        while (p < end) {
                const char *w, *eq;
                size_t n;

                while (p < end && (*p == ' ' || *p == '\t'))
                        p++;
                w = p;
                while (p < end && *p != ' ' && *p != '\t')
                        p++;
                n = (size_t) (p - w);
                eq = memchr(w, '=', n);
                if (n > 18 && strncmp(w, "kernelpagesize_kB=", 18) == 0) {
                        if (parse_word_u64(w + 18, n - 18, &psize) < 0 || psize == 0)
                                return -EINVAL;
                } else if (n > 1 && w[0] == 'N' && w[1] >= '0' && w[1] <= '9') {
                        uint64_t node, v;

                        if (!eq || parse_word_u64(w + 1, (size_t) (eq - w - 1), &node) < 0 ||
                            parse_word_u64(eq + 1, (size_t) (w + n - eq - 1), &v) < 0)
                                return -EINVAL;
                        if (node < MEMNODE_NODES_MAX)
                                pages[node] += v;
                        else
                                other += v;
                        any = true;
                }
        }
        if (!any)
                return 0;
        for (int k = 0; k < MEMNODE_NODES_MAX; k++) {
                kib[k] += pages[k] * psize;
                *total += pages[k] * psize;
        }
        *total += other * psize;
        return 0;
}

int memnode_parse_numa_maps(const char *text, uint64_t page_kib, uint64_t kib[MEMNODE_NODES_MAX],
                            uint64_t *ret_total_kib) {
        uint64_t total = 0;

        memset(kib, 0, sizeof(uint64_t) * MEMNODE_NODES_MAX);
        *ret_total_kib = 0;
        if (!text)
                return 0;
        while (*text) {
                const char *nl = strchr(text, '\n');
                size_t len = nl ? (size_t) (nl - text) : strlen(text);
                int r = parse_line(text, len, page_kib, kib, &total);

                if (r < 0)
                        return r;
                text += len + (nl ? 1 : 0);
        }
        *ret_total_kib = total;
        return 0;
}

int memnode_majority(const struct memnode *a, const struct memnode *b, uint64_t min_kib, double *ret_share) {
        uint64_t total = 0, best_kib = 0;
        int best = -1;

        if (ret_share)
                *ret_share = 0;
        if (!a && !b)
                return -1;
        if (!a || a == b) {
                a = a ?: b;
                b = NULL;
        }
        total = a->total_kib + (b ? b->total_kib : 0);
        for (int k = 0; k < MEMNODE_NODES_MAX; k++) {
                uint64_t x = a->kib[k] + (b ? b->kib[k] : 0);

                if (x > best_kib) {
                        best_kib = x;
                        best = k;
                }
        }
        if (best < 0 || total < min_kib || total == 0 || best_kib * 2 <= total)
                return -1;
        if (ret_share)
                *ret_share = (double) best_kib / (double) total;
        return best;
}

int memnode_memo_new(struct memnode_memo **ret) {
        struct memnode_memo *m = calloc(1, sizeof(*m));

        if (!m)
                return -ENOMEM;
        *ret = m;
        return 0;
}

struct memnode_memo *memnode_memo_free(struct memnode_memo *m) {
        if (m) {
                free(m->items);
                free(m);
        }
        return NULL;
}

static struct memnode *memo_find(struct memnode_memo *m, pid_t pid, uint64_t start_time) {
        for (size_t i = 0; i < m->n; i++)
                if (m->items[i].pid == pid && m->items[i].start_time == start_time)
                        return &m->items[i];
        return NULL;
}

static struct memnode *memo_add(struct memnode_memo *m, pid_t pid, uint64_t start_time) {
        if (m->n >= m->allocated) {
                size_t na = m->allocated ? m->allocated * 2 : 8;
                struct memnode *n = reallocarray(m->items, na, sizeof(*n));

                if (!n)
                        return NULL;
                m->items = n;
                m->allocated = na;
        }
        m->items[m->n] = (struct memnode) { .pid = pid, .start_time = start_time };
        return &m->items[m->n++];
}

/* Resident KiB from /proc/PID/statm (its second field, in pages); 0 if unknown. */
static uint64_t resident_kib(const char *root, pid_t pid, uint64_t page_kib) {
        char path[64], buf[256];
        unsigned long long size, resident;

        snprintf(path, sizeof(path), "/proc/%d/statm", (int) pid);
        if (util_read_file_at(root, path, buf, sizeof(buf)) < 0 || sscanf(buf, "%llu %llu", &size, &resident) != 2)
                return 0;
        return resident * page_kib;
}

static int read_one(struct memnode_memo *m, const char *root, struct memnode *e, uint64_t page_kib,
                    uint64_t now_usec) {
        _cleanup_free_ char *text = NULL;
        char path[64];
        uint64_t t0, cost;
        int r;

        if (resident_kib(root, e->pid, page_kib) > MEMNODE_RSS_MAX_KIB) {
                m->skipped_large++;
                e->read_usec = now_usec;     /* not asked again before the TTL */
                e->total_kib = 0;
                return 0;
        }
        snprintf(path, sizeof(path), "/proc/%d/numa_maps", (int) e->pid);
        t0 = util_now_usec();
        r = util_read_full_file_at(root, path, &text, NULL);
        if (r >= 0)
                r = memnode_parse_numa_maps(text, page_kib, e->kib, &e->total_kib);
        cost = util_now_usec() - t0;
        e->read_usec = now_usec;
        e->cost_usec = cost;
        m->reads++;
        m->read_usec_total += cost;
        m->last_cost_usec = cost;
        m->next_read_usec = now_usec + cost * MEMNODE_DUTY_FACTOR;
        if (r < 0) {
                m->failed++;
                memset(e->kib, 0, sizeof(e->kib));
                e->total_kib = 0;
        }
        return 0;
}

/* The memnode of t's process: cached, read now if allowed, or NULL for not known. */
static int want(struct memnode_memo *m, const char *root, const struct task *t, uint64_t page_kib,
                uint64_t now_usec, unsigned *reads_left) {
        uint64_t start = t->proc ? t->proc->start_time : 0;
        pid_t pid = t->proc ? t->proc->pid : t->id.pid;
        struct memnode *e = memo_find(m, pid, start);

        if (!e) {
                e = memo_add(m, pid, start);
                if (!e)
                        return -ENOMEM;
        }
        e->used_usec = now_usec;
        if (e->read_usec && now_usec - e->read_usec < MEMNODE_TTL_USEC)
                return 0;
        if (*reads_left == 0 || now_usec < m->next_read_usec)
                return 0;            /* a later pass; the pair is placed as not known meanwhile */
        (*reads_left)--;
        return read_one(m, root, e, page_kib, now_usec);
}

int memnode_sample_tasks(struct memnode_memo *m, const char *root, const struct task *const *want_tasks,
                         size_t n_want, struct snapshot *snap, uint64_t now_usec) {
        long page = sysconf(_SC_PAGESIZE);
        uint64_t page_kib = page > 0 ? (uint64_t) page / 1024 : 4;
        unsigned reads_left = 1;
        size_t j = 0;
        int r;

        snap->memnodes = NULL;
        snap->n_memnodes = 0;
        if (!m || !snap->topo || snap->topo->n_nodes <= 1)
                return 0;

        for (size_t i = 0; i < n_want; i++) {
                r = want(m, root, want_tasks[i], page_kib, now_usec, &reads_left);
                if (r < 0)
                        return r;
        }

        /* forget what no pass asked for in two TTLs (exited, or no longer a pair) */
        for (size_t i = 0; i < m->n; i++)
                if (now_usec - m->items[i].used_usec <= 2 * MEMNODE_TTL_USEC)
                        m->items[j++] = m->items[i];
        m->n = j;

        snap->memnodes = m->items;
        snap->n_memnodes = m->n;
        return 0;
}

int memnode_memo_to_json(const struct memnode_memo *m, struct json_object **ret) {
        struct json_object *o = json_object_new_object();
        int r;

        if (!o)
                return -ENOMEM;
        r = json_add(o, "reads", json_object_new_int64((int64_t) (m ? m->reads : 0)));
        r = r ?: json_add(o, "read_usec_total", json_object_new_int64((int64_t) (m ? m->read_usec_total : 0)));
        r = r ?: json_add(o, "last_read_usec", json_object_new_int64((int64_t) (m ? m->last_cost_usec : 0)));
        r = r ?: json_add(o, "skipped_large", json_object_new_int64((int64_t) (m ? m->skipped_large : 0)));
        r = r ?: json_add(o, "failed", json_object_new_int64((int64_t) (m ? m->failed : 0)));
        r = r ?: json_add(o, "cached", json_object_new_int64((int64_t) (m ? m->n : 0)));
        if (r < 0) {
                json_object_put(o);
                return r;
        }
        *ret = o;
        return 0;
}
