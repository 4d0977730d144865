/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The detect stage: pure functions from (snapshot, config) to findings.
 * No I/O, no logging above debug. Each detector lives in detect-<kind>.c.
 *
 * A finding names the tasks involved, the policy that asked for it and the
 * evidence numbers, so every later decision can be explained ([multi-queue]:
 * judge by before/after numbers).
 *
 * Detectors judge one window (one snapshot). Anything that needs memory
 * across intervals (hysteresis, "migrated over the last 10 s", "this hog is
 * pinned by us so it no longer migrates") is the planner's job: it keeps
 * that state in struct plan_state.
 */

#include "config/config.h"
#include "sample/snapshot.h"

#define FINDING_MAX_MEMBERS 64

/*
 * Detector defaults, used when a policy leaves a threshold unset (< 0, or 0
 * for a window).
 *
 * Hog: "uses most of a CPU" (Util=80 %). Measured on 6.18 here: a
 * lone hog on an idle box migrates 0 times per 10 s, a hog among other
 * hogs and bursty tasks 5-6 times per 10 s (0.5/s). 0.1/s over a 10 s
 * window separates the two with margin: one hop in 10 s is not "keeps on
 * hopping" ([conservative-smp]), two are.
 *
 * Spread: the seed's group is 4 processes at ~40 % each; 20 % keeps
 * members that are merely alive (idle worker threads) out of the group.
 * Four ~40 % tasks migrate 5-21 times per 10 s each here.
 *
 * Run delay: 50 ms of runnable-but-waiting per second of wall time is 5 %
 * of the thread's time lost in run queues; [select-idle] shows the p99 tail is
 * what suffers first, so this is reported, never acted upon.
 */
#define DETECT_HOG_UTIL_MIN_DEFAULT              0.80
#define DETECT_HOG_MIGRATIONS_MIN_PER_S_DEFAULT  0.10
#define DETECT_HOG_WINDOW_USEC_DEFAULT           (UINT64_C(10) * 1000000)
#define DETECT_SPREAD_UTIL_MIN_DEFAULT           0.20
#define DETECT_SPREAD_MIGRATIONS_MIN_PER_S_DEFAULT 0.10
#define DETECT_SPREAD_WINDOW_USEC_DEFAULT        (UINT64_C(10) * 1000000)
#define DETECT_RUNDELAY_MIN_MS_PER_S_DEFAULT     50.0

/* What kind of exchange a pair finding is; only a ping-pong is co-located. */
enum pair_shape {
        PAIR_PINGPONG,
        PAIR_STREAM,   /* both busy (combined util > MaxCombinedUtil=), pipelined, or its sides run on
                        * (wake each other again unanswered): co-locating costs ~25 % */
        PAIR_HUB,      /* a member serves DETECT_PAIR_HUB_PARTNERS or more threads (not kernel threads) at pair rates,
                        * or is the hub of a fan whose threads together exceed MaxCombinedUtil= */
        PAIR_FAN,      /* a member is the client (the server) of DETECT_PAIR_FAN_PARTNERS threads of one
                        * service (one client process) at pair rates, and its hub and partners together
                        * fit MaxCombinedUtil= (combined_util is theirs): placed whole, on one CPU */
        PAIR_FEEDER,   /* one thread of a process wakes another one way at a pair rate, and that one
                        * wakes a third at a pair rate (its server): joins only a pair we hold (the
                        * planner's chain()), never placed alone */
};
/* A stream by its wake-ups: this share or more of its split ones
 * unanswered, both ways together, and _EACH or more each way, over
 * _MIN_N or more each way (detect-pair.c, runs_on()) */
#define DETECT_PAIR_STREAM_UNANSWERED 0.55
#define DETECT_PAIR_STREAM_UNANSWERED_EACH 0.25
#define DETECT_PAIR_UNANSWERED_MIN_N 16u
#define DETECT_PAIR_HUB_PARTNERS 3
#define DETECT_PAIR_FAN_PARTNERS 2

/*
 * What a pair's split rests on. Only SPLIT_BASIS_WAKEUPS is a fraction;
 * the others are the fallback's verdicts, from each member's migration
 * count over the window (se.nr_migrations) and one look at its last CPU,
 * and with perf an anchored pair's free member on the move (MIGRATIONS).
 * WAKEUPS and MIGRATIONS cover the whole window; LOOK is one look, which
 * the planner confirms over Hysteresis= intervals.
 */
enum split_basis {
        SPLIT_BASIS_WAKEUPS,     /* perf: share of the window's wake-ups that crossed CPUs */
        SPLIT_BASIS_MIGRATIONS,  /* fallback: kept changing CPUs, or stayed put all window; perf: an
                                  * anchored pair's free member kept moving (detect-pair.c) */
        SPLIT_BASIS_LOOK,        /* fallback: apart at the sample, migration count not conclusive */
        SPLIT_BASIS_UNKNOWN,     /* fallback: no evidence either way (split_fraction -1) */
};
const char *split_basis_to_string(enum split_basis b);

struct finding {
        enum detector kind;
        const struct policy *policy;  /* valid for this interval only (config may be reloaded) */
        struct task_id members[FINDING_MAX_MEMBERS];
        size_t n_members;

        /* evidence; fields not relevant to the kind are 0 */
        double util;                 /* hog: util of the thread; group: mean */
        double combined_util;        /* pair/group: sum of members' util (PAIR_FAN: of the whole fan) */
        double demand;               /* hog: util + run-delay fraction (what it would use); group: sum */
        double migrations_per_s;     /* hog: its rate; group, pair: sum of the members' */
        double wake_rate_per_s;      /* pair: min of the two directions (max when we hold it on one CPU) */
        double split_fraction;       /* pair: fraction of the window the members ran on different CPUs
                                      * (perf); the fallback's verdict 1 split / 0 together (also perf's
                                      * for an anchored pair on the move); -1 unknown.
                                      * split_basis says which; never 0 for "unknown". */
        double run_delay_ms_per_s;   /* hog/rundelay: the thread's; group: max of the members */
        double steal;                /* steal: machine-wide fraction */
        cpumask_t cpus_seen;
        int last_cpu;                /* hog/rundelay: the thread's last CPU; else -1 */
        char comm[16];               /* hog/rundelay: thread name; group: first member's */
        enum split_basis split_basis; /* pair: what split_fraction rests on */
        enum pair_shape shape;       /* pair: ping-pong, stream or hub */
        unsigned anchored;           /* pair: bit k set: members[k] is pinned to one CPU by someone
                                      * else; only the other member is moved, onto that CPU */
        unsigned waker;              /* PAIR_FEEDER: bit k set: members[k] wakes the other one way;
                                      * only it joins the other's pair */
        unsigned fan_hub;            /* PAIR_FAN: bit k set: members[k] is the fan's hub (the client,
                                      * or the server, of both its partners) */
        char note[160];              /* short human text, e.g. "stream: combined util 1.7 > 1.2" */
};

struct findings {
        struct finding *items;
        size_t n, allocated;
};

/* Frees the items; the struct itself may be reused. */
void findings_clear(struct findings *f);
int findings_add(struct findings *f, const struct finding *item);

/*
 * Stable key of a finding's target across intervals, used by the planner's
 * state: "hog:TID:START", "spread:POLICY", "pair:TIDLOW:TIDHIGH",
 * "rundelay:TID:START", "steal". Returns buf, or NULL if it does not fit.
 */
char *finding_key(const struct finding *f, char *buf, size_t size);
/* The keys finding_key() gives a hog's and a pair's findings, for a
 * target that is known by its threads rather than by a finding. */
char *hog_key(const struct task_id *id, char *buf, size_t size);
char *pair_key(const struct task_id *a, const struct task_id *b, char *buf, size_t size);

/*
 * Thresholds of a policy for a detector, with the detector defaults above
 * filled in where the policy leaves them unset. p may be NULL (defaults).
 */
double detect_util_min(const struct policy *p, enum detector kind);
double detect_pair_rate_floor(const struct config *c);

/*
 * Which member of a pair serves the other, for people (affctl pairs and
 * explain, the logs): of two processes the one whose service started
 * first is the server (a client connects to a server that was already
 * running; a per-connection backend forked for it counts from its
 * parent's start, proc_info.lineage_start_time); two
 * threads of one process, or processes started in the same tick, are
 * peers. A guess from start times only: the planner's chain() and the
 * detector's fans (one_service() in detect-pair.c) act on it, each only
 * together with another sign (a fan's partners must be one service).
 */
enum pair_role { PAIR_ROLE_PEER, PAIR_ROLE_SERVER, PAIR_ROLE_CLIENT };
void detect_pair_roles(const struct task *a, const struct task *b, enum pair_role ret[2]);
const char *pair_role_to_string(enum pair_role r);

/*
 * The members of the ping-pong pairs and fans in f that are still to be
 * placed (present in snap, not both pinned by us), into ret[] (at most
 * max; each thread once, a fan's hub too). Streams and hubs are never
 * co-located, so their memory need not be read. Returns how many.
 */
size_t detect_pair_tasks_to_place(const struct findings *f, const struct snapshot *snap,
                                  const struct task **ret, size_t max);
double detect_migrations_min_per_s(const struct policy *p, enum detector kind);
uint64_t detect_window_usec(const struct policy *p, enum detector kind);
double detect_run_delay_min_ms_per_s(const struct policy *p);
/* prefilter, or the lowest threshold an enabled policy of detector kind
 * sets below it (Util= for hog and spread, RunDelay= for rundelay): the
 * cheap test before the policy lookup must not refuse a thread that a
 * policy's own threshold takes. */
double detect_prefilter(const struct config *c, enum detector kind, double prefilter);

/*
 * How much of a CPU the thread wants: util plus the fraction of the window
 * it spent runnable but waiting (schedstat run delay). A hog sharing its
 * CPU with another hog shows util 0.5 but demand 1.0, which is what makes
 * the n+1 case of [conservative-smp] visible. util alone without schedstat.
 */
double task_demand(const struct task *t);

/* A finding of one thread (hog, run delay): kind, policy, the thread and
 * what the sampler saw of it (util, CPUs seen, last CPU, comm); the rest
 * zero, for the detector to fill. */
void detect_task_finding(struct finding *f, enum detector kind, const struct policy *p, const struct task *t);

/*
 * A pair whose wake-ups cross CPUs this often is split enough to co-locate.
 * Not "most of the time": a wake-up that crosses CPUs costs several that
 * do not (an IPI, the cache lines moving), so a pair split for a small
 * share of its wake-ups spends much of its time in them. Measured here:
 * a pair bouncing between CPUs, 47 % split, ~30k wake-ups/s each way, the
 * same pair co-located ~455k round trips/s (tests/pairs-integration.sh);
 * `perf bench sched pipe` next to a loop starting ~150 short processes a
 * second, 15 % split, 274k ops/s against 430k co-located (0.64x: a split
 * round trip cost ~5 together ones). At 5 % the same arithmetic loses
 * ~16 %. Pinning a ping-pong pair together costs it nothing (streams,
 * which it would cost, are told apart: detect-pair.c, PAIR_STREAM).
 * The planner co-locates from a lower share where the host's calibration
 * prices a split higher (plan-pair.c, split_share_min()).
 */
#define DETECT_PAIR_SPLIT_MIN 0.05

/*
 * The fallback's split verdict (no perf: no per-wake-up CPUs), from the
 * two members' se.nr_migrations rates over the window, summed. Measured
 * here (2 CPUs, `perf bench sched pipe`): split by the kernel, 33k round
 * trips/s, the members migrate 15-25/s each (30-45/s together) while one
 * look at their last CPUs shows them on one CPU at most samples; kept
 * together by the kernel next to a hog, 190k/s, 0-3/s together; pinned
 * on one CPU, 0. So: at or above MIGRATING, split (the window's evidence);
 * at or below STILL, each stayed where it was all window, so their last
 * CPUs tell split from together; between, one look that shows them apart
 * is a split to be confirmed over Hysteresis= intervals, and one that
 * shows them on one CPU says nothing: unknown.
 */
#define DETECT_PAIR_FALLBACK_MIGRATING_PER_S 10.0
#define DETECT_PAIR_FALLBACK_STILL_PER_S 0.5

/* "split 47%", "split: migrating 38/s", "together: both on CPU 0, not migrating",
 * "split unknown: ..." for the logs, affctl pairs and the planner's states.
 * split_min: the share of wake-ups split from which the pair reads "split"
 * rather than "together": the detector's DETECT_PAIR_SPLIT_MIN, or the
 * planner's, priced by the host (lower where a split costs more). */
char *detect_pair_split_text(const struct finding *f, double split_min, char *buf, size_t size);

/* Does the policy's [Match] cover this task? Pure: uses task->proc. */
bool policy_matches(const struct policy *p, const struct task *t);

/*
 * The policy that governs a task for a detector, honouring exclusions and
 * the safety defaults (kernel threads, RT tasks, narrowed affinity, the
 * daemon itself: self_pid). Returns NULL if the task must not be touched;
 * ret_why (may be NULL) gets a static string saying why not.
 */
/* ret_why may point into the config ("excluded by policy X"): valid while it lives. */
const struct policy *detect_policy_for(const struct config *c, const struct snapshot *s,
                                       const struct task *t, enum detector kind,
                                       pid_t self_pid, const char **ret_why);

/*
 * Each returns 0 or -errno (-ENOMEM only); findings are appended.
 *
 * detect_hogs: one finding per thread whose demand reaches the policy's
 * Util= and whose migration rate in this window is above Migrations=.
 * detect_spread: one finding per spread policy whose matched threads at or
 * above Util= number at least 2, whether they migrate or not (pinned
 * members cannot); the group's migration rate is evidence, the planner
 * judges it over the window.
 * detect_rundelay: one finding per thread above RunDelay= (report only).
 */
int detect_hogs(const struct snapshot *s, const struct config *c, pid_t self_pid, struct findings *out);
int detect_pairs(const struct snapshot *s, const struct config *c, pid_t self_pid, struct findings *out);
int detect_spread(const struct snapshot *s, const struct config *c, pid_t self_pid, struct findings *out);
int detect_steal(const struct snapshot *s, const struct config *c, struct findings *out);
int detect_rundelay(const struct snapshot *s, const struct config *c, pid_t self_pid, struct findings *out);

/* Clear out, then run every detector. */
int detect_all(const struct snapshot *s, const struct config *c, pid_t self_pid, struct findings *out);
