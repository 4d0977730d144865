/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Pair detector ([wake-affine]): two threads that wake
 * each other at a high rate in both directions, an RPC ping-pong. Such a
 * pair runs far better on one CPU: a pipe ping-pong here does ~260k round
 * trips/s on one CPU and ~90k split across two, and the kernel often
 * leaves it split ("will stay that way instead of recovering", [wake-affine]).
 *
 * One finding per pair whose wake rate reaches the policy's WakeRate= in
 * both directions (one, for a pair we hold on one CPU: pair_rate()),
 * whether it is split or not: split_fraction says how
 * much of the window the two spent on different CPUs, and the planner
 * co-locates only pairs split for most of the window. A pair we pinned
 * together is no longer split but must stay visible, or the planner would
 * release it and the kernel would split it again.
 *
 * A pair whose members are both busy (combined util above
 * MaxCombinedUtil=, default 120 %), that read and write several
 * messages a wake-up (pipelined()), or whose sides wake each other again
 * before the other answered (runs_on()), is a pipelined stream, not a
 * ping-pong: co-locating one costs ~25 % here. Its finding's shape is PAIR_STREAM and
 * the planner leaves it alone. So it does a hub (PAIR_HUB): a thread that
 * serves DETECT_PAIR_HUB_PARTNERS or more threads at pair rates (one
 * Redis thread, several clients). Pinned to one client's CPU it would be
 * co-located with one and moved away from the others. A fan (PAIR_FAN)
 * is a thread that is the client of two threads of one service at pair
 * rates (a pgbench thread with two backends, pgbench -c 4 -j 2 on two
 * CPUs), or the server of two threads of one client process. Its pairs
 * co-located one by one, each pgbench thread pinned with one backend and
 * the other backend left where the kernel put it, read 0.79x stock on a
 * host where a split pair costs 1.7x, and 0.81-0.95x on one where it
 * costs 7x, in every repeat where it happened (the kernel's own swing, in
 * the repeats it changed nothing: 0.81-1.25x). So a fan is placed whole,
 * all three threads on one CPU (the planner's chain()), and only where
 * together they stay within what MaxCombinedUtil= lets a pair use
 * (add_finding()); one that does not is a hub, and so is a wider one:
 * pgbench -c 8 -j 2, each thread pinned by hand with its four backends,
 * read a median 0.92x stock in 7 repeats and 1.00x in 5 (bench/servers.sh
 * --variants stock,grouped) on a host where a split pair costs 1.6x. A
 * thread between two (a proxy: the server of its client, the client of its
 * backend) is a chain's link, not a fan, and so is one whose two partners
 * are not one service, whatever their start times make of its roles
 * (one_service()).
 *
 * A feeder (PAIR_FEEDER) is one thread of a process that wakes another of
 * it one way at a pair rate: a client's rate limiter or event generator
 * handing each request to the thread that sends it. It is no pair of its
 * own, but every request then starts with a wake-up of the other CPU once
 * the ping-pong it feeds is co-located (see feeder_waker()).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "detect/detect.h"
#include "detect/match.h"

/*
 * Defaults when a policy leaves WakeRate= / MaxCombinedUtil= unset.
 * 100 wake-ups/s each way: the ping-pong pairs of [wake-affine] and the pipe
 * ping-pong here run at 45k-260k/s as fast as they loop, but production
 * clients send at a rate, and there the split costs latency, not
 * throughput: sysbench point selects at a fixed 1,000/s against MariaDB
 * had a p99 of 1.15 ms split by the kernel and 0.47 ms on one CPU
 * (bench/servers.sh mdb-ps-r1000), and at 200/s 0.72 ms against 0.55 ms
 * co-located by the daemon (mdb-ps-r200). A pair at N requests/s wakes N
 * times a second each way. With a floor of 500/s a client at 200-300/s
 * was never found; at 100/s it was co-located 0.57-0.84 s after its
 * start, in 22 runs of 22 at 200/s and 300/s, and one at 200/s still
 * shows twice the floor in a 100 ms burst. One-way wakers (a logger, a
 * timer) are no pair at any rate.
 * 1.2 CPUs: a ping-pong pair alternates, so together it uses at most about
 * one CPU (split pair here: 0.5-0.7 each, ~1.1 at most); a stream keeps
 * both busy (1.7-2.0 here).
 */
#ifndef DETECT_PAIR_WAKE_RATE_MIN_DEFAULT
#define DETECT_PAIR_WAKE_RATE_MIN_DEFAULT 100.0
#define DETECT_PAIR_GROUP_UTIL_MAX_DEFAULT 1.2
#endif


struct pair_item {
        pid_t lo, hi;
        double lo_to_hi, hi_to_lo;       /* wake-ups/s */
        double split_weighted;           /* Σ rate × split_fraction over edges with a known split */
        double split_rate;               /* Σ rate of those edges */
        /* lo→hi [0] and hi→lo [1]: wake_edge.split_next, split_unanswered */
        unsigned split_next[2], split_unanswered[2];
};

static int pair_item_cmp(const void *a, const void *b) {
        const struct pair_item *x = a, *y = b;

        if (x->lo != y->lo)
                return x->lo < y->lo ? -1 : 1;
        return x->hi < y->hi ? -1 : x->hi > y->hi;
}

static double edge_split(const struct wake_edge *e) {
#ifdef WAKE_EDGE_HAVE_SPLIT
        return e->have_split ? e->split_fraction : -1;
#else
        (void) e;
        return -1;
#endif
}

static double pair_wake_rate_min(const struct policy *p) {
        return p && p->wake_rate_min_per_s >= 0 ? p->wake_rate_min_per_s : DETECT_PAIR_WAKE_RATE_MIN_DEFAULT;
}

static double pair_group_util_max(const struct policy *p) {
        return p && p->group_util_max >= 0 ? p->group_util_max : DETECT_PAIR_GROUP_UTIL_MAX_DEFAULT;
}

/* The lowest WakeRate= of any enabled pair policy: pairs below it need no
 * policy lookup, and the wake sampler's quiet gate keys on it. -1: none. */
double detect_pair_rate_floor(const struct config *c) {
        double floor = -1;

        for (size_t i = 0; i < c->n_policies; i++) {
                const struct policy *p = &c->policies[i];
                double r;

                if (!p->enabled || p->detector != DETECT_PAIR)
                        continue;
                r = pair_wake_rate_min(p);
                if (floor < 0 || r < floor)
                        floor = r;
        }
        return floor;
}

/* Struct-literal proc_infos leave lineage_start_time 0: their own start then. */
static uint64_t proc_lineage_start(const struct proc_info *p) {
        return p->lineage_start_time ? MIN(p->lineage_start_time, p->start_time) : p->start_time;
}

void detect_pair_roles(const struct task *a, const struct task *b, enum pair_role ret[2]) {
        uint64_t sa = a->proc ? proc_lineage_start(a->proc) : a->id.start_time;
        uint64_t sb = b->proc ? proc_lineage_start(b->proc) : b->id.start_time;

        ret[0] = ret[1] = PAIR_ROLE_PEER;
        if (a->id.pid == b->id.pid || sa == sb)
                return;
        ret[0] = sa < sb ? PAIR_ROLE_SERVER : PAIR_ROLE_CLIENT;
        ret[1] = sa < sb ? PAIR_ROLE_CLIENT : PAIR_ROLE_SERVER;
}

/* Member k (0: a, the lower TID) stays where it is: our mask, or an anchor's (finding.anchored). */
static bool member_fixed(const struct task *t, unsigned anchored, int k) {
        return t->affinity_ours || (anchored & (1u << k));
}

/* Each thread once: a fan's hub is a member of both its pairs. */
static size_t add_task_once(const struct task **ret, size_t n, const struct task *t) {
        for (size_t i = 0; i < n; i++)
                if (ret[i] == t)
                        return n;
        ret[n] = t;
        return n + 1;
}

size_t detect_pair_tasks_to_place(const struct findings *f, const struct snapshot *snap,
                                  const struct task **ret, size_t max) {
        size_t n = 0;

        for (size_t i = 0; f && i < f->n && n + 2 <= max; i++) {
                const struct finding *x = &f->items[i];
                const struct task *a, *b;

                if (x->kind != DETECT_PAIR || (x->shape != PAIR_PINGPONG && x->shape != PAIR_FAN) || x->n_members < 2)
                        continue;
                a = snapshot_find_id(snap, &x->members[0]);
                b = snapshot_find_id(snap, &x->members[1]);
                if (!a || !b || (member_fixed(a, x->anchored, 0) && member_fixed(b, x->anchored, 1)))
                        continue;    /* gone, or co-located already: nothing to place */
                n = add_task_once(ret, n, a);
                n = add_task_once(ret, n, b);
        }
        return n;
}

const char *pair_role_to_string(enum pair_role r) {
        switch (r) {
        case PAIR_ROLE_SERVER: return "server";
        case PAIR_ROLE_CLIENT: return "client";
        default: return "peer";
        }
}

/*
 * A member someone else pinned to one usable CPU (taskset, or the program
 * itself: memcached's load generator memcaslap pins its threads) is left
 * where it is, but it can anchor its pair: the other member, ours to move,
 * goes to that CPU. What a careful human does: measured here, memcached
 * (-t 4) with memcaslap -c 1 ran 14.2k requests/s stock, 11.7k under
 * affinityd, which saw no pair, and 47.9k with the server thread moved to
 * the client's CPU by hand.
 */
static bool anchorable(const struct snapshot *s, const struct task *t) {
        cpumask_t usable;
        int cpu = cpumask_single(&t->allowed);

        if (t->affinity_ours || cpu < 0 || !s)
                return false;
        usable = snapshot_usable(s);
        return cpumask_test(&usable, cpu) && match_affinity_narrowed(s, t);
}

/* A member's pair policy; *ret_anchor: the member is an anchor (above). */
static const struct policy *member_policy(const struct config *c, const struct snapshot *s, const struct task *t,
                                          pid_t self_pid, unsigned flags, bool *ret_anchor) {
        const struct policy *p = match_policy_for(c, s, t, DETECT_PAIR, self_pid, flags, NULL);

        *ret_anchor = false;
        if (!p && !(flags & MATCH_AFFINITY_OURS) && anchorable(s, t)) {
                /* Refused for its narrowed affinity alone? The flag also
                 * skips the kubelet's exclusive CPUs, but those are not
                 * usable, so anchorable() has refused them already. */
                p = match_policy_for(c, s, t, DETECT_PAIR, self_pid, MATCH_AFFINITY_OURS, NULL);
                *ret_anchor = p != NULL;
        } else if (p && (flags & MATCH_AFFINITY_OURS) && !p->allow_narrowed && anchorable(s, t))
                /* on one CPU with its partner, which we moved there */
                *ret_anchor = true;
        return p && p->detector == DETECT_PAIR ? p : NULL;
}

/* Both allowed the same one CPU (ours, someone else's, or one of each). */
static bool one_cpu_for_both(const struct task *a, const struct task *b) {
        int cpu = cpumask_single(&a->allowed);

        return cpu >= 0 && cpu == cpumask_single(&b->allowed);
}

/*
 * Both members must be ours to touch, or one an anchor (member_policy());
 * if their policies differ, the one that wins overlaps does. Two members
 * pinned to the same one CPU are not "narrowed by someone else" for this
 * purpose: that is what a pair we co-located looks like, and it must stay
 * visible or the planner would release it (and the kernel split it again).
 * Should someone else have pinned them both, the finding only says
 * "together" and the planner, which holds no pin on them, leaves them be.
 */
static const struct policy *pair_policy(const struct config *c, const struct snapshot *s, const struct task *a,
                                        const struct task *b, pid_t self_pid, unsigned *ret_anchored) {
        const struct policy *pa, *pb;
        unsigned flags = one_cpu_for_both(a, b) ? MATCH_AFFINITY_OURS : 0;
        bool anchor_a, anchor_b;

        *ret_anchored = 0;
        pa = member_policy(c, s, a, self_pid, flags, &anchor_a);
        if (!pa)
                return NULL;
        pb = member_policy(c, s, b, self_pid, flags, &anchor_b);
        if (!pb)
                return NULL;
        if (anchor_a && anchor_b) {
                if (!(flags & MATCH_AFFINITY_OURS))
                        return NULL;    /* both someone else's, apart: nothing of ours to move */
        } else
                *ret_anchored = (anchor_a ? 1u : 0u) | (anchor_b ? 2u : 0u);
        return pb->priority < pa->priority ? pb : pa;
}

/*
 * Owners= (affinityd(8), THREAT MODEL): co-locating changes both members,
 * each for the other's sake. Any local user can make a pair with another
 * user's task (a FIFO and an echo loop are enough), so by default a task is
 * changed for a partner of another user only when both are root or system
 * accounts (a database and its root-run client); an unprivileged user's
 * tasks pair only with their own. System accounts include nobody and
 * systemd's DynamicUser= range (pair_owner_is_system()): measured here,
 * nginx's workers (as nobody when its config names no user) and wrk were
 * never co-located, at 0.29 of hand-pinned. Unknown owners (no /proc
 * status read) count as different users.
 */
static bool owners_allow(const struct policy *p, const struct task *a, const struct task *b) {
        int o = p->pair_owners >= 0 ? p->pair_owners : PAIR_OWNERS_TRUSTED;

        if (o == PAIR_OWNERS_ANY)
                return true;
        if (!a->proc || !b->proc)
                return false;
        /* one process is one owner, read or not */
        if (a->proc == b->proc || (a->proc->uid == b->proc->uid && a->proc->uid != (uid_t) -1))
                return true;
        return o == PAIR_OWNERS_TRUSTED && pair_owner_is_system(a->proc->uid) && pair_owner_is_system(b->proc->uid);
}

/*
 * The pair's wake rate, held against WakeRate=. Split, a ping-pong wakes
 * both ways once a round trip, and the weaker direction is the test that
 * it is a ping-pong, not one thread notifying another. On one CPU only
 * one direction is left: the waker is preempted by the wakee it woke, so
 * the reply finds it runnable and wakes nobody. Measured here on MariaDB +
 * sysbench co-located at 53k queries/s: 48,230/1,510, 44,090/2,372 and
 * 26,349/5,855 wake-ups/s. With the minimum a pair we co-located read
 * "quiet" and was released into the split it had been taken out of, so
 * a pair that we hold on one CPU is measured by its stronger direction
 * (and one held on a span, which the kernel may keep on one CPU of it).
 */
/* Both members fixed (by us, or a member anchored by someone else) on one
 * mask: one CPU, or one span of CPUs (a core's siblings, an LLC: Span=). */
static bool held_together(const struct task *a, const struct task *b, unsigned anchored) {
        return member_fixed(a, anchored, 0) && member_fixed(b, anchored, 1) && cpumask_equal(&a->allowed, &b->allowed);
}

static double pair_rate(const struct task *a, const struct task *b, const struct pair_item *it, unsigned anchored) {
        return held_together(a, b, anchored) ? MAX(it->lo_to_hi, it->hi_to_lo) : MIN(it->lo_to_hi, it->hi_to_lo);
}

const char *split_basis_to_string(enum split_basis b) {
        switch (b) {
        case SPLIT_BASIS_WAKEUPS: return "wakeups";
        case SPLIT_BASIS_MIGRATIONS: return "migrations";
        case SPLIT_BASIS_LOOK: return "look";
        default: return "unknown";
        }
}

/*
 * Without the tracepoint's split (fallback source): the verdict of
 * DETECT_PAIR_FALLBACK_* from the members' migration rates and last CPUs.
 * Returns 1 split, 0 together, -1 unknown; never 0 without evidence.
 */
static double fallback_split(const struct task *a, const struct task *b, enum split_basis *ret_basis) {
        bool apart = a->last_cpu >= 0 && b->last_cpu >= 0 && a->last_cpu != b->last_cpu;
        double mig = a->migrations_per_s + b->migrations_per_s;

        if (a->have_migrations && b->have_migrations) {
                if (mig >= DETECT_PAIR_FALLBACK_MIGRATING_PER_S) {
                        *ret_basis = SPLIT_BASIS_MIGRATIONS;
                        return 1.0;
                }
                if (mig <= DETECT_PAIR_FALLBACK_STILL_PER_S && a->last_cpu >= 0 && b->last_cpu >= 0) {
                        *ret_basis = SPLIT_BASIS_MIGRATIONS;
                        return apart ? 1.0 : 0.0;
                }
        }
        *ret_basis = apart ? SPLIT_BASIS_LOOK : SPLIT_BASIS_UNKNOWN;
        return apart ? 1.0 : -1.0;
}

/*
 * A pair anchored by someone else whose free member keeps moving: the
 * anchor cannot leave its CPU, so each migration of the other takes it
 * away from the anchor or back. The kernel splits such a pair in clumps
 * (under stress-ng --cpu 2 --cpu-load 40: 250 ms windows with 3-26 % of
 * the round trips split, seconds apart) that a settled sampler's one
 * 100 ms burst in 20 passes seldom falls in, and reads "together" between;
 * the free member's se.nr_migrations counts every clump. Measured on a
 * 1.6x host under that load, no daemon: 7/s on average, in 1 s windows
 * from 0 to the teens; over 20 s of a start the settled daemon let be,
 * 253 moves for 7 % of the round trips split, and 123 (6/s, never 10 in
 * a pass) for 4 %. So a burst's share under DETECT_PAIR_SPLIT_MIN gives
 * way to a split on the free member's moves (the anchor's own count has
 * the move its owner's pin made), and the effect check judges the pin by
 * the pair's round trips. A pair free on both sides is not judged so: the
 * kernel moves a pair whole without splitting it; nor a free member on a
 * mask of ours (a span: its moves are inside it). DETECT_PAIR_ANCHOR_MOVES
 * at least, at that rate per second over a window, not since birth: a new
 * thread's placement at fork and a wake-affine pull are two moves, 10/s
 * over a 200 ms recheck pass.
 */
#define DETECT_PAIR_ANCHOR_MOVES 5

static bool leaves_anchor(unsigned anchored, const struct task *a, const struct task *b) {
        const struct task *fr = anchored == 1u ? b : anchored == 2u ? a : NULL;
        uint64_t w;

        if (!fr || fr->affinity_ours || !fr->have_migrations || fr->rates_since_birth)
                return false;
        w = fr->migrations_window_usec ?: fr->window_usec;
        return fr->migrations_per_s >= DETECT_PAIR_ANCHOR_MOVES &&
               /* a whole count, back from a rate: half a move of rounding */
               fr->migrations_per_s * (double) w / (double) USEC_PER_SEC >= DETECT_PAIR_ANCHOR_MOVES - 0.5;
}

char *detect_pair_split_text(const struct finding *f, double split_min, char *buf, size_t size) {
        bool split = f->split_fraction >= split_min;

        switch (f->split_basis) {
        case SPLIT_BASIS_WAKEUPS:
                /* a host-priced threshold is in half percents: so is the share */
                snprintf(buf, size, "%s %.*f%%", split ? "split" : "together, split",
                         split_min < DETECT_PAIR_SPLIT_MIN ? 1 : 0, f->split_fraction * 100);
                break;
        case SPLIT_BASIS_MIGRATIONS:
                /* moving: the fallback's MIGRATING, or an anchored pair's free member
                 * (leaves_anchor()); still: under the fallback's STILL */
                if (f->migrations_per_s > DETECT_PAIR_FALLBACK_STILL_PER_S)
                        snprintf(buf, size, "split: migrating %.0f/s", f->migrations_per_s);
                else
                        snprintf(buf, size, "%s, not migrating", split ? "split: apart" : "together: on one CPU");
                break;
        case SPLIT_BASIS_LOOK:
                snprintf(buf, size, "split: apart at the last look, migrating %.1f/s", f->migrations_per_s);
                break;
        default:
                snprintf(buf, size, "split unknown: on one CPU at the last look, migrating %.1f/s",
                         f->migrations_per_s);
                break;
        }
        return buf;
}

/*
 * What the two members use of the CPUs together. Held by us on one CPU
 * they cannot use more than that CPU: a higher reading is the skew of
 * their run times and the window's clock (seen in a QEMU guest: 1.21 for a
 * MariaDB pair on one CPU that its effect check had kept at +21 %
 * round trips, released as a "stream"). The stream test is for a pair the
 * kernel placed; one on our CPU was judged by the effect check.
 */
static double combined_util(const struct task *a, const struct task *b, unsigned anchored) {
        double u = a->util + b->util;
        bool one_cpu = held_together(a, b, anchored) && cpumask_weight(&a->allowed) == 1;

        return one_cpu ? MIN(u, 1.0) : u;
}

/*
 * Reads and writes per switch, on each side: a request and its answer are
 * one read and one write on each side per wake-up (a pipe ping-pong reads
 * 2.0, split or on one CPU, quiet or with every CPU 40 % busy), where a
 * pipelined stream reads and writes several messages per wake-up (10-14
 * split here, quiet and under that load; 3.0-3.5 where the kernel kept it
 * together part of the time). Twice a ping-pong's on both sides is a
 * stream, however a load squeezes its utils under MaxCombinedUtil=: under
 * stress-ng one read 0.92 CPU split, was taken for a ping-pong and lost
 * 10-20 % on one CPU. A side that moves nothing through read()/write()
 * (recv()/send(): MariaDB, PostgreSQL) says nothing, nor does a pair held
 * together (on one CPU, or on one span of them: held_together()), which
 * its effect check judges.
 */
#define DETECT_PAIR_STREAM_CALLS_PER_SWITCH 4.0

static bool pipelined(const struct task *a, const struct task *b, unsigned anchored) {
        return !held_together(a, b, anchored) && task_calls_per_switch(a) > DETECT_PAIR_STREAM_CALLS_PER_SWITCH &&
               task_calls_per_switch(b) > DETECT_PAIR_STREAM_CALLS_PER_SWITCH;
}

/*
 * A request and its answer alternate: a ping-pong's member that wakes the
 * other waits for the answer, and is woken by it before it wakes the other
 * again. A pipeline's sides run on: each wakes the other again while the
 * other still works (wake_edge.split_unanswered). When most of a pair's
 * split wake-ups go unanswered it is a stream, whatever a load makes of
 * its utils and switches: under stress-ng --cpu 2 --cpu-load 40 the
 * stream workload read 1.1-1.2 CPUs and 2-3 reads and writes a switch,
 * passed for a ping-pong, and ran 10-22 % slower on one CPU until the
 * effect check undid it (once it kept it), while 65-72 % of its split
 * wake-ups were unanswered (66-80 % for a stream held split, under that
 * load and quiet, tests/test-wake.c); a pipe ping-pong beside it read 0 %.
 * The line is over half of both directions' together: a ping-pong that
 * sends each message in two parts (a header, then its body, to a reader
 * that slept between them) reads half each way, and one taken for a
 * stream in every pass is never placed, where a stream taken for a
 * ping-pong is undone by its effect check. Each direction on its own
 * swings with which side is the faster for a while (the slower one's
 * wake-ups are answered: the faster one had stopped on a full or empty
 * queue): under that load the stream read 30 % one way and 69 % the
 * other, 41 % and 86 %, 62 % and 48 %, both together 56-71 % (5 runs),
 * and a rule of 55 % each way let it be co-located as a pair together
 * but moving, in 5 runs of 5, until its effect check undid it (-5 to
 * -22 %). Each direction must still read a quarter or more: one that
 * wakes the other far more often than it is woken back (a feeder, a
 * producer that a consumer rarely waits for) has its wake-ups unanswered
 * by definition while the other direction reads answered, and so does a
 * server whose every answer comes in parts to a client that asks once.
 * The counts are the sampler's sums over its windows (the latest 64 or
 * so, held while the kernel keeps the pair together), so a pair at a few
 * hundred requests/s needs a few bursts to reach
 * DETECT_PAIR_UNANSWERED_MIN_N each way; a pair held together by us is
 * judged by its effect check (held_together()).
 * MaxCombinedUtil= does not set this rule. The constants are in detect.h,
 * for the sampler's live test.
 */

/* direction d's share of split wake-ups unanswered; -1: too few to tell */
static double unanswered_share(const struct pair_item *it, int d) {
        return it->split_next[d] >= DETECT_PAIR_UNANSWERED_MIN_N ? (double) it->split_unanswered[d] / it->split_next[d]
                                                                  : -1;
}

/* both directions' share together; -1: too few one way to tell */
static double unanswered_both(const struct pair_item *it) {
        return unanswered_share(it, 0) < 0 || unanswered_share(it, 1) < 0
                       ? -1
                       : (double) (it->split_unanswered[0] + it->split_unanswered[1]) /
                                 (it->split_next[0] + it->split_next[1]);
}

/* each way first: a direction too thin to tell (-1) or under a quarter settles it */
static bool runs_on(const struct task *a, const struct task *b, const struct pair_item *it, unsigned anchored) {
        return !held_together(a, b, anchored) && unanswered_share(it, 0) >= DETECT_PAIR_STREAM_UNANSWERED_EACH &&
               unanswered_share(it, 1) >= DETECT_PAIR_STREAM_UNANSWERED_EACH &&
               unanswered_both(it) >= DETECT_PAIR_STREAM_UNANSWERED;
}

/* What a pair's members have besides each other (partners_of(), fan_util()). */
struct pair_company {
        unsigned partners;      /* the most threads either member exchanges with at pair rates */
        unsigned fan;           /* the widest fan of either: partners of one role, one service */
        double fan_util;        /* that fan's threads together, its hub and each partner; 0: no fan */
        unsigned fan_hub;       /* that fan's hub: bit 0 the lower TID (a), bit 1 the other */
};

/*
 * The pair's split and what it rests on (*basis, SPLIT_BASIS_WAKEUPS
 * unless changed). The tracepoint's split is over the whole decayed
 * window; without it (fallback source), fallback_split()'s verdict.
 */
static double pair_split(const struct task *a, const struct task *b, const struct pair_item *it, unsigned anchored,
                         enum split_basis *basis) {
        double split = it->split_rate > 0 ? it->split_weighted / it->split_rate : fallback_split(a, b, basis);

        if (split >= 0 && split < DETECT_PAIR_SPLIT_MIN && leaves_anchor(anchored, a, b)) {
                *basis = SPLIT_BASIS_MIGRATIONS;
                return 1.0;
        }
        /* Two members allowed the same one CPU cannot run apart, whatever the
         * share decayed over the bursts before says: when someone moved one
         * beside the other, that read 69 % for a pair together since, and a
         * dry-run daemon planned to move both (tests/dry-run-settle.sh, ASan). */
        if (split > 0 && one_cpu_for_both(a, b))
                return 0;
        return split;
}

/*
 * A fan is placed whole or not at all (PAIR_FAN): its hub and every
 * partner on one CPU, where they take turns as a pair's two members do.
 * pgbench -c 4 -j 2 on two CPUs, each pgbench thread pinned by hand with
 * its two backends, read 1.00-1.18x stock (median 1.06x, 5 repeats),
 * where one of its pairs placed alone read 0.79x. So a fan whose threads
 * together fit what MaxCombinedUtil= lets a pair use is a fan to place;
 * one that does not would queue its threads behind each other on one CPU,
 * and is left to the kernel as a hub is.
 */
static int add_finding(const struct snapshot *s, const struct policy *p, const struct task *a,
                       const struct task *b, const struct pair_item *it, double rate,
                       const struct pair_company *co, unsigned anchored, unsigned waker, struct findings *out) {
        double split, combined = combined_util(a, b, anchored), umax = pair_group_util_max(p);
        enum split_basis basis = SPLIT_BASIS_WAKEUPS;
        struct finding f;
        bool stream, hub, fan;
        char cpus[64], split_text[96];

        split = pair_split(a, b, it, anchored, &basis);

        f = (struct finding) {
                .kind = DETECT_PAIR,
                .policy = p,
                .members = { a->id, b->id },
                .n_members = 2,
                .util = combined / 2,
                .combined_util = combined,
                .wake_rate_per_s = rate,
                .split_fraction = split < 0 ? -1.0 : MIN(split, 1.0),
                .split_basis = basis,
                .anchored = anchored,
                .waker = waker,
                .migrations_per_s = a->migrations_per_s + b->migrations_per_s,
                .cpus_seen = cpumask_or(&a->cpus_seen, &b->cpus_seen),
                .last_cpu = -1,
        };
        cpumask_set(&f.cpus_seen, a->last_cpu);
        cpumask_set(&f.cpus_seen, b->last_cpu);
        memcpy(f.comm, a->comm, sizeof(f.comm));
        f.comm[sizeof(f.comm) - 1] = 0;
        if (!cpumask_format_list(&f.cpus_seen, cpus, sizeof(cpus)))
                strcpy(cpus, "...");

        hub = co->partners >= DETECT_PAIR_HUB_PARTNERS;
        fan = !hub && co->fan >= DETECT_PAIR_FAN_PARTNERS;
        stream = combined > umax || pipelined(a, b, anchored) || runs_on(a, b, it, anchored);
        f.shape = hub || (fan && co->fan_util > umax) ? PAIR_HUB
                  : stream                            ? PAIR_STREAM
                  : fan                               ? PAIR_FAN
                  : waker                             ? PAIR_FEEDER
                                                      : PAIR_PINGPONG;
        if (f.shape == PAIR_FAN) {
                f.combined_util = co->fan_util;
                f.fan_hub = co->fan_hub;
        }
        if (f.shape == PAIR_HUB && hub)
                snprintf(f.note, sizeof(f.note),
                         "hub: a member exchanges with %u threads at pair rates (%.0f/%.0f wake-ups/s with this one)",
                         co->partners, it->lo_to_hi, it->hi_to_lo);
        else if (f.shape == PAIR_HUB)
                snprintf(f.note, sizeof(f.note),
                         "fan: a member is the client or the server of %u threads at pair rates, util %.2f "
                         "together > %.2f (%.0f/%.0f wake-ups/s with this one)",
                         co->fan, co->fan_util, umax, it->lo_to_hi, it->hi_to_lo);
        else if (f.shape == PAIR_STREAM && combined > umax)
                snprintf(f.note, sizeof(f.note),
                         "stream: combined util %.2f > %.2f (%.0f/%.0f wake-ups/s)",
                         combined, umax, it->lo_to_hi, it->hi_to_lo);
        else if (f.shape == PAIR_STREAM && pipelined(a, b, anchored))
                snprintf(f.note, sizeof(f.note),
                         "stream: %.1f and %.1f reads and writes a switch > %.0f (%.0f/%.0f wake-ups/s)",
                         task_calls_per_switch(a), task_calls_per_switch(b), DETECT_PAIR_STREAM_CALLS_PER_SWITCH,
                         it->lo_to_hi, it->hi_to_lo);
        else if (f.shape == PAIR_STREAM)
                snprintf(f.note, sizeof(f.note),
                         "stream: %.0f%% of split wake-ups unanswered before the next (%.0f%% and %.0f%% each way; "
                         "each side runs on; %.0f/%.0f wake-ups/s)",
                         unanswered_both(it) * 100, unanswered_share(it, 0) * 100, unanswered_share(it, 1) * 100,
                         it->lo_to_hi, it->hi_to_lo);
        else if (f.shape == PAIR_FEEDER)
                snprintf(f.note, sizeof(f.note), "one-way: %.0f/%.0f wake-ups/s, %s, CPUs %d/%d, util %.2f+%.2f",
                         it->lo_to_hi, it->hi_to_lo, detect_pair_split_text(&f, DETECT_PAIR_SPLIT_MIN, split_text, sizeof(split_text)),
                         a->last_cpu, b->last_cpu, a->util, b->util);
        else if (f.shape == PAIR_FAN)
                snprintf(f.note, sizeof(f.note),
                         "fan of %u, util %.2f together: %.0f/%.0f wake-ups/s, %s, CPUs %d/%d (seen %s)", co->fan,
                         co->fan_util, it->lo_to_hi, it->hi_to_lo,
                         detect_pair_split_text(&f, DETECT_PAIR_SPLIT_MIN, split_text, sizeof(split_text)),
                         a->last_cpu, b->last_cpu, cpus[0] ? cpus : "?");
        else
                snprintf(f.note, sizeof(f.note),
                         "%s: %.0f/%.0f wake-ups/s, %s, CPUs %d/%d (seen %s), util %.2f+%.2f",
                         f.split_fraction < 0 ? "pair" : f.split_fraction >= DETECT_PAIR_SPLIT_MIN ? "split pair"
                                                                                                   : "pair together",
                         it->lo_to_hi, it->hi_to_lo, detect_pair_split_text(&f, DETECT_PAIR_SPLIT_MIN, split_text, sizeof(split_text)),
                         a->last_cpu, b->last_cpu, cpus[0] ? cpus : "?", a->util, b->util);
        return findings_add(out, &f);
}

/* Threads on a pair-rate edge, one entry per edge end with the thread's
 * role in that pair, sorted by thread: a run of k entries is a thread with
 * k partners. */
struct partner_end {
        pid_t tid;
        enum pair_role role;
        pid_t partner;
        double out; /* wake-ups/s from tid to partner */
};

struct tid_list {
        struct partner_end *ends;
        size_t n;
};

static void tid_list_free(struct tid_list *l) {
        free(l->ends);
}

static int end_cmp(const void *a, const void *b) {
        const struct partner_end *x = a, *y = b;

        if (x->tid != y->tid)
                return x->tid < y->tid ? -1 : 1;
        return x->role < y->role ? -1 : x->role > y->role;
}

static int end_tid_cmp(const void *a, const void *b) {
        const struct partner_end *x = a, *y = b;
        return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/*
 * Partners count only while both ends live: the decayed edges of a client
 * that exited stay above WakeRate= for a few passes, and a thread-cached
 * server thread serving its next client then read as a hub of three and
 * its new pair was released (seen in CI: MariaDB, client 2). Nor do
 * kernel threads: a server that wakes rcu_preempt and a kworker (RCU
 * callbacks, deferred work; 15-35/s each, over WakeRate=100/s in some
 * 100 ms bursts) serves no clients there. Redis under stress-ng, its pair
 * with one redis-benchmark co-located and kept at +44 %, was released 10 s
 * later as "a hub of 3" (CI rehearsal, and 1 run of 1 here).
 */
static int count_partners(const struct snapshot *s, const struct pair_item *items, size_t n, double floor,
                          struct tid_list *ret) {
        ret->ends = calloc(2 * n + 1, sizeof(*ret->ends));
        if (!ret->ends)
                return -ENOMEM;
        ret->n = 0;
        for (size_t i = 0; i < n; i++) {
                const struct task *a, *b;
                enum pair_role role[2];

                if (MAX(items[i].lo_to_hi, items[i].hi_to_lo) < floor)
                        continue;
                a = snapshot_find_task(s, items[i].lo);
                b = snapshot_find_task(s, items[i].hi);
                if (!a || !b || task_is_kthread(a) || task_is_kthread(b))
                        continue;
                detect_pair_roles(a, b, role);
                ret->ends[ret->n++] = (struct partner_end) {
                        .tid = items[i].lo, .role = role[0], .partner = items[i].hi, .out = items[i].lo_to_hi };
                ret->ends[ret->n++] = (struct partner_end) {
                        .tid = items[i].hi, .role = role[1], .partner = items[i].lo, .out = items[i].hi_to_lo };
        }
        qsort_safe(ret->ends, ret->n, sizeof(*ret->ends), end_cmp);
        return 0;
}

/*
 * How many of run[0..n) (one thread's partners in one role) are one
 * service with the one that has the most such: peers of each other by
 * detect_pair_roles() (the backends of one postmaster, the threads of one
 * process). Roles are a guess from start times, and a proxy started before
 * its backend reads as the server of both its client and its backend: two
 * partners of one role that are not one service are no fan, and such a
 * proxy stays a chain's link.
 */
static unsigned one_service(const struct snapshot *s, const struct partner_end *run, size_t n) {
        unsigned best = 0;

        for (size_t i = 0; i < n; i++) {
                const struct task *a = snapshot_find_task(s, run[i].partner);
                unsigned k = 1;

                for (size_t j = 0; a && j < n; j++) {
                        const struct task *b = j == i ? NULL : snapshot_find_task(s, run[j].partner);
                        enum pair_role role[2];

                        if (!b)
                                continue;
                        detect_pair_roles(a, b, role);
                        k += role[0] == PAIR_ROLE_PEER;
                }
                best = MAX(best, k);
        }
        return best;
}

/* The run of tid's ends in l: its first, and *ret_end past its last; NULL if none. */
static const struct partner_end *ends_of(const struct tid_list *l, pid_t tid, const struct partner_end **ret_end) {
        struct partner_end key = { .tid = tid };
        const struct partner_end *hit = bsearch_safe(&key, l->ends, l->n, sizeof(*l->ends), end_tid_cmp);
        const struct partner_end *lo, *hi;

        *ret_end = NULL;
        if (!hit)
                return NULL;
        for (lo = hit; lo > l->ends && lo[-1].tid == tid; lo--)
                ;
        for (hi = hit; hi < l->ends + l->n && hi->tid == tid; hi++)
                ;
        *ret_end = hi;
        return lo;
}

/* The util of tid and all its partners at pair rates: a fan's, when tid is its hub. */
static double fan_util(const struct snapshot *s, const struct tid_list *l, pid_t tid) {
        const struct partner_end *hi, *e = ends_of(l, tid, &hi);
        const struct task *t = snapshot_find_task(s, tid);
        double u = t ? t->util : 0;

        for (; e && e < hi; e++)
                if ((t = snapshot_find_task(s, e->partner)))
                        u += t->util;
        return u;
}

/* A thread's partners at pair rates, and the most of them it has in one
 * role (client or server; peers are not counted there) that are one
 * service (one_service()): a fan's width. */
static unsigned partners_of(const struct snapshot *s, const struct tid_list *l, pid_t tid, unsigned *ret_same_role) {
        const struct partner_end *hi, *lo = ends_of(l, tid, &hi), *run;

        *ret_same_role = 0;
        if (!lo)
                return 0;
        /* a hub already (add_finding()): the fan's width, quadratic in the
         * partners, is not needed (a server thread can have thousands) */
        if (hi - lo >= DETECT_PAIR_HUB_PARTNERS)
                return (unsigned) (hi - lo);
        for (run = lo; run < hi;) {
                const struct partner_end *e = run;

                while (e < hi && e->role == run->role)
                        e++;
                if (run->role != PAIR_ROLE_PEER)
                        *ret_same_role = MAX(*ret_same_role, one_service(s, run, (size_t) (e - run)));
                run = e;
        }
        return (unsigned) (hi - lo);
}

/*
 * A feeder: two threads of one process, one waking the other at a pair
 * rate (floor) and woken back at most 1/DETECT_PAIR_FEEDER_ONE_WAY as
 * often. sysbench --rate drives its worker so, from an event-generator
 * thread (a queue and a condition variable): MariaDB at a fixed 1,000
 * point selects/s, its worker co-located with the server thread and the
 * generator left where the kernel put it, read a per-second p99 of
 * 445-1,515 µs; with the generator on the pair's CPU too, 180-270 µs, a
 * human's taskset of the whole client (bench/rate-feeder.sh). Only two
 * threads of one process: a one-way waker from elsewhere (a logger, a
 * timer service, another client) is none of the pair's business. And only
 * the waker is the feeder: the thread it wakes must itself wake another at
 * a pair rate (the worker its server), or the edge is a pair member
 * notifying a helper of its own (a log writer), which on the pair's CPU
 * would only take turns with it. rate is pair_rate()'s: a feeder held with
 * its pair reads as a pair.
 */
#define DETECT_PAIR_FEEDER_ONE_WAY 4.0

/* Returns the waker's bit (1u << 0: the lower tid, a; 1u << 1: b) if the
 * pair is a feeder, else 0. The planner's chain() moves only the waker. */
static unsigned feeder_waker(const struct task *a, const struct task *b, const struct pair_item *it, double rate,
                             double floor, const struct tid_list *busy) {
        double fwd = MAX(it->lo_to_hi, it->hi_to_lo), back = MIN(it->lo_to_hi, it->hi_to_lo);
        pid_t waker = it->lo_to_hi >= it->hi_to_lo ? it->lo : it->hi, wakee = waker == it->lo ? it->hi : it->lo;
        const struct partner_end *e, *end;

        if (rate >= floor || fwd < floor || back * DETECT_PAIR_FEEDER_ONE_WAY > fwd || a->id.pid != b->id.pid)
                return 0;
        for (e = ends_of(busy, wakee, &end); e && e < end; e++)
                if (e->partner != waker && e->out >= floor)
                        return waker == it->lo ? 1u << 0 : 1u << 1;
        return 0;
}

/* The directed edges of s folded into unordered pairs, one item each
 * (both directions, and repeats, summed), sorted by (lo, hi). */
static int fold_edges(const struct snapshot *s, struct pair_item **ret, size_t *ret_n) {
        struct pair_item *items = calloc(s->n_edges, sizeof(*items));
        size_t n = 0, m = 0;

        if (!items)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_edges; i++) {
                const struct wake_edge *e = &s->edges[i];
                double sp = edge_split(e);
                int d = e->waker_tid > e->wakee_tid;   /* 0: lo→hi */

                if (e->waker_tid == e->wakee_tid || e->waker_tid <= 0 || e->wakee_tid <= 0)
                        continue;
                items[n] = (struct pair_item) {
                        .lo = MIN(e->waker_tid, e->wakee_tid),
                        .hi = MAX(e->waker_tid, e->wakee_tid),
                };
                *(d ? &items[n].hi_to_lo : &items[n].lo_to_hi) = e->wakeups_per_s;
                if (sp >= 0) {
                        items[n].split_weighted = e->wakeups_per_s * sp;
                        items[n].split_rate = e->wakeups_per_s;
                }
                items[n].split_next[d] = e->split_next;
                items[n].split_unanswered[d] = e->split_unanswered;
                n++;
        }
        qsort_safe(items, n, sizeof(*items), pair_item_cmp);
        for (size_t i = 0; i < n;) {
                struct pair_item it = items[i];
                size_t j = i + 1;

                for (; j < n && items[j].lo == it.lo && items[j].hi == it.hi; j++) {
                        it.lo_to_hi += items[j].lo_to_hi;
                        it.hi_to_lo += items[j].hi_to_lo;
                        it.split_weighted += items[j].split_weighted;
                        it.split_rate += items[j].split_rate;
                        for (int k = 0; k < 2; k++) {
                                it.split_next[k] += items[j].split_next[k];
                                it.split_unanswered[k] += items[j].split_unanswered[k];
                        }
                }
                items[m++] = it;
                i = j;
        }
        *ret = items;
        *ret_n = m;
        return 0;
}

int detect_pairs(const struct snapshot *s, const struct config *c, pid_t self_pid, struct findings *out) {
        _cleanup_free_ struct pair_item *items = NULL;
        _cleanup_(tid_list_free) struct tid_list busy = {};
        size_t m = 0;
        double floor;
        int r;

        if (!s || !c || !out)
                return -EINVAL;
        if (!s->edges || s->n_edges == 0 || s->n_tasks == 0)
                return 0;
        floor = detect_pair_rate_floor(c);
        if (floor < 0)
                return 0;        /* no pair policy */

        r = fold_edges(s, &items, &m);
        if (r < 0)
                return r;
        r = count_partners(s, items, m, floor, &busy);
        if (r < 0)
                return r;

        for (size_t i = 0; i < m; i++) {
                const struct pair_item it = items[i];
                const struct task *a, *b;
                const struct policy *p;
                double rate;
                struct pair_company co = {};
                unsigned fan_lo, fan_hi, anchored, waker;

                if (MAX(it.lo_to_hi, it.hi_to_lo) < floor)
                        continue;
                /* the sampler's hash: sorting every task each pass cost ~ms at 10k threads */
                a = snapshot_find_task(s, it.lo);
                b = snapshot_find_task(s, it.hi);
                /* exited (or not sampled): nothing to place; no rates yet: no evidence */
                if (!a || !b || !a->have_rates || !b->have_rates)
                        continue;
                p = pair_policy(c, s, a, b, self_pid, &anchored);
                if (!p)
                        continue;
                rate = pair_rate(a, b, &it, anchored);
                waker = feeder_waker(a, b, &it, rate, floor, &busy);
                if (waker)
                        rate = MAX(it.lo_to_hi, it.hi_to_lo);
                if (rate < floor || rate < pair_wake_rate_min(p) || !owners_allow(p, a, b))
                        continue;
                co.partners = MAX(partners_of(s, &busy, it.lo, &fan_lo), partners_of(s, &busy, it.hi, &fan_hi));
                co.fan = MAX(fan_lo, fan_hi);
                if (co.fan >= DETECT_PAIR_FAN_PARTNERS && co.partners < DETECT_PAIR_HUB_PARTNERS) {
                        co.fan_hub = fan_lo >= fan_hi ? 1u << 0 : 1u << 1;
                        co.fan_util = fan_util(s, &busy, fan_lo >= fan_hi ? it.lo : it.hi);
                }
                r = add_finding(s, p, a, b, &it, rate, &co, anchored, waker, out);
                if (r < 0)
                        return r;
        }
        return 0;
}
