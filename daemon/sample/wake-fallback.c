/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The fallback wake signal, for when perf tracepoints are not permitted
 * (perf_event_paranoid without CAP_PERFMON) or tracefs is missing.
 *
 * A ping-pong pair leaves two traces without perf: each side switches
 * voluntarily once per round trip (it blocks in read), so both have high
 * and similar voluntary-switch rates; and the two processes share the
 * channel: the same pipe inode is in both fd tables (both ends of a pipe
 * have one inode), or each holds one end of a connected unix socket, whose
 * peer inode only sock_diag tells (NETLINK_SOCK_DIAG through libnl).
 *
 * So: candidates are the threads switching voluntarily ≥1000/s (the
 * snapshot's nvcsw_per_s); their processes' /proc/PID/fd links are read;
 * processes sharing a pipe or a unix-socket pair are linked; in each linked
 * pair of processes the two candidate threads whose rates match best
 * (within 2x) get an edge both ways at the smaller rate. No direction and
 * no split evidence: the detector falls back on last_cpu.
 *
 * Limits: threads of one process talking to each other share one fd table
 * and are not found; TCP over loopback is not looked at.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/util.h"
#include "sample/wake-internal.h"

/* Bounds, so a machine with thousands of busy threads costs a bounded scan per interval. */
#define MAX_CANDIDATES 256
#define MAX_FDS_PER_PROC 4096
/* A pipe held by more processes than this was inherited down a tree (a
 * shell pipeline's stderr, a supervisor's log pipe): it says nothing about
 * who talks to whom. */
#define MAX_PROCS_PER_PIPE 4

enum fd_kind {
        FD_PIPE,
        FD_SOCKET,
};

struct fd_ref {
        uint32_t ino;
        enum fd_kind kind;
        size_t proc;                 /* index into procs */
};

struct proc_ref {
        pid_t pid;
        size_t first, n;             /* its candidates: cands[first .. first+n) */
};

struct peer {
        uint32_t ino, peer;
};

struct wake_fallback {
        char *root;
        bool diag;                   /* sock_diag answered at start */
        char what[96];

        struct peer *peers;          /* sorted by ino */
        size_t n_peers, peers_allocated;
        bool fixed_peers;            /* tests */

        /* scratch, kept across scans */
        const struct task **cands;
        struct proc_ref *procs;
        struct fd_ref *fds;
        size_t fds_allocated;
};

static int peer_cmp(const void *a, const void *b) {
        const struct peer *x = a, *y = b;
        return x->ino < y->ino ? -1 : x->ino > y->ino;
}

static int peers_push(struct wake_fallback *f, uint32_t ino, uint32_t peer) {
        if (f->n_peers == f->peers_allocated) {
                size_t na = f->peers_allocated ? f->peers_allocated * 2 : 256;
                struct peer *np = realloc(f->peers, na * sizeof(*np));
                if (!np)
                        return -ENOMEM;
                f->peers = np;
                f->peers_allocated = na;
        }
        f->peers[f->n_peers++] = (struct peer) { ino, peer };
        return 0;
}

static int on_diag_msg(struct nl_msg *msg, void *arg) {
        struct wake_fallback *f = arg;
        struct nlmsghdr *nlh = nlmsg_hdr(msg);
        struct nlattr *tb[UNIX_DIAG_MAX + 1];
        const struct unix_diag_msg *m;

        if (nlh->nlmsg_len < NLMSG_LENGTH(sizeof(*m)))
                return NL_SKIP;
        m = nlmsg_data(nlh);
        if (nlmsg_parse(nlh, sizeof(*m), tb, UNIX_DIAG_MAX, NULL) < 0 || !tb[UNIX_DIAG_PEER])
                return NL_OK;
        if (peers_push(f, m->udiag_ino, nla_get_u32(tb[UNIX_DIAG_PEER])) < 0)
                return NL_STOP;
        return NL_OK;
}

/*
 * Dump unix sockets with their peers. states = 0 asks for none: used as a
 * cheap probe that the unix_diag module answers.
 */
static int diag_dump(struct wake_fallback *f, uint32_t states) {
        struct unix_diag_req req = {
                .sdiag_family = AF_UNIX,
                .udiag_states = states,
                .udiag_show = UDIAG_SHOW_PEER,
        };
        struct nl_sock *sk;
        int r;

        sk = nl_socket_alloc();
        if (!sk)
                return -ENOMEM;
        f->n_peers = 0;
        r = nl_connect(sk, NETLINK_SOCK_DIAG);
        if (r >= 0)
                r = nl_socket_modify_cb(sk, NL_CB_VALID, NL_CB_CUSTOM, on_diag_msg, f);
        if (r >= 0)
                r = nl_send_simple(sk, SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST | NLM_F_DUMP, &req, sizeof(req));
        if (r >= 0)
                r = nl_recvmsgs_default(sk);
        nl_socket_free(sk);
        if (r < 0)
                return r == -NLE_NOMEM ? -ENOMEM : r == -NLE_OBJ_NOTFOUND ? -ENOENT : -EIO;
        qsort_safe(f->peers, f->n_peers, sizeof(*f->peers), peer_cmp);
        return 0;
}

int wake_fallback_new(const char *root, struct wake_fallback **ret) {
        struct wake_fallback *f;
        int r;

        f = calloc(1, sizeof(*f));
        if (!f)
                return -ENOMEM;
        f->root = strdup(root ? root : "/");
        f->cands = calloc(MAX_CANDIDATES, sizeof(*f->cands));
        f->procs = calloc(MAX_CANDIDATES, sizeof(*f->procs));
        if (!f->root || !f->cands || !f->procs) {
                wake_fallback_free(f);
                return -ENOMEM;
        }
        r = diag_dump(f, 0);
        f->diag = r >= 0;
        if (f->diag)
                snprintf(f->what, sizeof(f->what), "pipes+unix-sockets");
        else
                snprintf(f->what, sizeof(f->what), "pipes (sock_diag: %s)", strerror(-r));
        *ret = f;
        return 0;
}

struct wake_fallback *wake_fallback_free(struct wake_fallback *f) {
        if (!f)
                return NULL;
        free(f->peers);
        free(f->cands);
        free(f->procs);
        free(f->fds);
        free(f->root);
        free(f);
        return NULL;
}

const char *wake_fallback_what(const struct wake_fallback *f) {
        return f ? f->what : "none";
}

void wake_fallback_set_peers(struct wake_fallback *f, const uint32_t (*pairs)[2], size_t n) {
        f->n_peers = 0;
        for (size_t i = 0; i < n; i++)
                if (peers_push(f, pairs[i][0], pairs[i][1]) < 0)
                        break;
        qsort_safe(f->peers, f->n_peers, sizeof(*f->peers), peer_cmp);
        f->fixed_peers = true;
        f->diag = true;
}

static int cand_cmp(const void *a, const void *b) {
        const struct task *x = *(const struct task *const *) a, *y = *(const struct task *const *) b;

        /* by process, busiest switcher first within it */
        if (x->id.pid != y->id.pid)
                return x->id.pid < y->id.pid ? -1 : 1;
        return x->nvcsw_per_s > y->nvcsw_per_s ? -1 : x->nvcsw_per_s < y->nvcsw_per_s;
}

static int fd_cmp(const void *a, const void *b) {
        const struct fd_ref *x = a, *y = b;

        if (x->kind != y->kind)
                return x->kind < y->kind ? -1 : 1;
        if (x->ino != y->ino)
                return x->ino < y->ino ? -1 : 1;
        return x->proc < y->proc ? -1 : x->proc > y->proc;
}

static int fds_push(struct wake_fallback *f, size_t *n, uint32_t ino, enum fd_kind kind, size_t proc) {
        if (*n == f->fds_allocated) {
                size_t na = f->fds_allocated ? f->fds_allocated * 2 : 1024;
                struct fd_ref *nf = realloc(f->fds, na * sizeof(*nf));
                if (!nf)
                        return -ENOMEM;
                f->fds = nf;
                f->fds_allocated = na;
        }
        f->fds[(*n)++] = (struct fd_ref) { ino, kind, proc };
        return 0;
}

/* Append the pipes and sockets in /proc/PID/fd. Unreadable (exited, not ours): nothing. */
static int read_fds(struct wake_fallback *f, size_t proc, size_t *n) {
        char path[PATH_MAX], rel[64];
        struct dirent *de;
        DIR *d;
        int dfd, r = 0;
        unsigned seen = 0;

        snprintf(rel, sizeof(rel), "/proc/%d/fd", (int) f->procs[proc].pid);
        if (!util_path_at(path, sizeof(path), f->root, rel))
                return 0;
        d = opendir(path);
        if (!d)
                return 0;
        dfd = dirfd(d);
        while ((de = readdir(d)) && seen < MAX_FDS_PER_PROC) {
                char target[64];
                unsigned long ino;
                ssize_t len;
                enum fd_kind kind;

                if (de->d_name[0] == '.')
                        continue;
                seen++;
                len = readlinkat(dfd, de->d_name, target, sizeof(target) - 1);
                if (len <= 0)
                        continue;
                target[len] = '\0';
                if (sscanf(target, "pipe:[%lu]", &ino) == 1)
                        kind = FD_PIPE;
                else if (sscanf(target, "socket:[%lu]", &ino) == 1)
                        kind = FD_SOCKET;
                else
                        continue;
                if (ino == 0 || ino > UINT32_MAX)
                        continue;
                r = fds_push(f, n, (uint32_t) ino, kind, proc);
                if (r < 0)
                        break;
        }
        closedir(d);
        return r;
}

/* Index of the first fd entry of (kind, ino), or SIZE_MAX. */
static size_t fds_find(const struct wake_fallback *f, size_t n, enum fd_kind kind, uint32_t ino) {
        size_t lo = 0, hi = n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                const struct fd_ref *e = &f->fds[mid];
                if (e->kind < kind || (e->kind == kind && e->ino < ino))
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo < n && f->fds[lo].kind == kind && f->fds[lo].ino == ino ? lo : SIZE_MAX;
}

static const struct peer *peer_find(const struct wake_fallback *f, uint32_t ino) {
        struct peer key = { .ino = ino };
        return bsearch_safe(&key, f->peers, f->n_peers, sizeof(*f->peers), peer_cmp);
}

/* Link two processes: the best-matched candidate threads get an edge both ways. */
static int link_procs(struct wake_fallback *f, size_t a, size_t b, uint64_t window_usec,
                      struct wake_edge_table *t) {
        const struct proc_ref *pa = &f->procs[a], *pb = &f->procs[b];
        const struct task *best_a = NULL, *best_b = NULL;
        double best_ratio = 0, best_min = 0, w;
        int r;

        for (size_t i = pa->first; i < pa->first + pa->n; i++)
                for (size_t j = pb->first; j < pb->first + pb->n; j++) {
                        double ra = f->cands[i]->nvcsw_per_s, rb = f->cands[j]->nvcsw_per_s;
                        double lo = MIN(ra, rb), ratio = lo / MAX(ra, rb);

                        if (ratio < WAKE_FALLBACK_MATCH_RATIO)
                                continue;
                        if (lo > best_min || (lo == best_min && ratio > best_ratio)) {
                                best_min = lo;
                                best_ratio = ratio;
                                best_a = f->cands[i];
                                best_b = f->cands[j];
                        }
                }
        if (!best_a)
                return 0;
        /* Each voluntary switch of one side is (about) one wake-up by the other. */
        w = best_min * (double) window_usec / 1e6;
        r = wake_edge_table_add(t, best_a->id.tid, best_b->id.tid, w, WAKE_EDGE_RISE_SAMPLES, 0, false);
        if (r >= 0)
                r = wake_edge_table_add(t, best_b->id.tid, best_a->id.tid, w, WAKE_EDGE_RISE_SAMPLES, 0, false);
        if (r == -ENOMEM)
                return r;
        return 1;
}

struct link {
        size_t a, b;
};

static int link_cmp(const void *x, const void *y) {
        const struct link *p = x, *q = y;
        if (p->a != q->a)
                return p->a < q->a ? -1 : 1;
        return p->b < q->b ? -1 : p->b > q->b;
}

/* Process pairs that share a pipe or a socket, by index into f->procs. */
struct links {
        struct link *v;
        size_t n, allocated;
};

static int links_add(struct links *l, size_t x, size_t y) {
        if (l->n == l->allocated) {
                size_t na = l->allocated ? l->allocated * 2 : 64;
                struct link *nl = realloc(l->v, na * sizeof(*nl));
                if (!nl)
                        return -ENOMEM;
                l->v = nl;
                l->allocated = na;
        }
        l->v[l->n++] = (struct link) { MIN(x, y), MAX(x, y) };
        return 0;
}

static void links_done(struct links *l) {
        free(l->v);
}

/* Candidates: the busiest voluntary switchers, at most MAX_CANDIDATES, by process. */
static size_t cands_pick(struct wake_fallback *f, const struct task *tasks, size_t n_tasks) {
        size_t n_cands = 0;

        for (size_t i = 0; i < n_tasks; i++) {
                const struct task *k = &tasks[i];

                if (!k->have_rates || k->kthread || k->nvcsw_per_s < WAKE_FALLBACK_MIN_SWITCH_PER_S)
                        continue;
                if (n_cands < MAX_CANDIDATES)
                        f->cands[n_cands++] = k;
                else {
                        /* keep the busiest: replace the slowest */
                        size_t lo = 0;
                        for (size_t j = 1; j < n_cands; j++)
                                if (f->cands[j]->nvcsw_per_s < f->cands[lo]->nvcsw_per_s)
                                        lo = j;
                        if (k->nvcsw_per_s > f->cands[lo]->nvcsw_per_s)
                                f->cands[lo] = k;
                }
        }
        if (n_cands >= 2)
                qsort_safe(f->cands, n_cands, sizeof(*f->cands), cand_cmp);
        return n_cands;
}

/* The candidates' processes (candidates are sorted by process). */
static size_t procs_group(struct wake_fallback *f, size_t n_cands) {
        size_t n_procs = 0;

        for (size_t i = 0; i < n_cands; i++) {
                if (n_procs == 0 || f->procs[n_procs - 1].pid != f->cands[i]->id.pid)
                        f->procs[n_procs++] = (struct proc_ref) { .pid = f->cands[i]->id.pid, .first = i };
                f->procs[n_procs - 1].n++;
        }
        return n_procs;
}

/* Pipes: runs of one inode held by 2..MAX_PROCS_PER_PIPE processes. Says
 * whether any socket was seen (the sockets' pass needs the peer table). */
static int pipe_links(struct wake_fallback *f, size_t n_fds, struct links *l, bool *ret_any_socket) {
        int r;

        *ret_any_socket = false;
        for (size_t i = 0; i < n_fds;) {
                size_t j = i, distinct = 0;

                if (f->fds[i].kind != FD_PIPE) {
                        *ret_any_socket = true;
                        i++;
                        continue;
                }
                while (j < n_fds && f->fds[j].kind == FD_PIPE && f->fds[j].ino == f->fds[i].ino) {
                        if (j == i || f->fds[j].proc != f->fds[j - 1].proc)
                                distinct++;
                        j++;
                }
                if (distinct >= 2 && distinct <= MAX_PROCS_PER_PIPE)
                        for (size_t x = i; x < j; x++)
                                for (size_t y = x + 1; y < j; y++)
                                        if (f->fds[x].proc != f->fds[y].proc) {
                                                r = links_add(l, f->fds[x].proc, f->fds[y].proc);
                                                if (r < 0)
                                                        return r;
                                        }
                i = j;
        }
        return 0;
}

/* Unix sockets: one end here, the peer's inode in another candidate process. */
static int socket_links(struct wake_fallback *f, size_t n_fds, struct links *l) {
        int r;

        if (!f->fixed_peers) {
                r = diag_dump(f, UINT32_MAX);
                if (r == -ENOMEM)
                        return r;
        }
        for (size_t i = 0; i < n_fds; i++) {
                const struct peer *p;
                size_t k;

                if (f->fds[i].kind != FD_SOCKET)
                        continue;
                p = peer_find(f, f->fds[i].ino);
                if (!p || p->peer == 0)
                        continue;
                k = fds_find(f, n_fds, FD_SOCKET, p->peer);
                for (; k != SIZE_MAX && k < n_fds && f->fds[k].kind == FD_SOCKET && f->fds[k].ino == p->peer; k++)
                        if (f->fds[k].proc != f->fds[i].proc) {
                                r = links_add(l, f->fds[i].proc, f->fds[k].proc);
                                if (r < 0)
                                        return r;
                        }
        }
        return 0;
}

int wake_fallback_scan(struct wake_fallback *f, const struct task *tasks, size_t n_tasks,
                       uint64_t window_usec, struct wake_edge_table *t) {
        _cleanup_(links_done) struct links links = {};
        size_t n_cands, n_procs, n_fds = 0;
        bool any_socket;
        int r, found = 0;

        if (!f || !tasks || window_usec == 0)
                return 0;

        n_cands = cands_pick(f, tasks, n_tasks);
        if (n_cands < 2)
                return 0;

        /* Processes, and their pipes and sockets. */
        n_procs = procs_group(f, n_cands);
        if (n_procs < 2)
                return 0;
        for (size_t p = 0; p < n_procs; p++) {
                r = read_fds(f, p, &n_fds);
                if (r < 0)
                        return r;
        }
        qsort_safe(f->fds, n_fds, sizeof(*f->fds), fd_cmp);

        r = pipe_links(f, n_fds, &links, &any_socket);
        if (r < 0)
                return r;
        if (any_socket && f->diag) {
                r = socket_links(f, n_fds, &links);
                if (r < 0)
                        return r;
        }

        qsort_safe(links.v, links.n, sizeof(*links.v), link_cmp);
        for (size_t i = 0; i < links.n; i++) {
                if (i > 0 && links.v[i].a == links.v[i - 1].a && links.v[i].b == links.v[i - 1].b)
                        continue;
                r = link_procs(f, links.v[i].a, links.v[i].b, window_usec, t);
                if (r < 0)
                        return r;
                found += r;
        }
        return found;
}
