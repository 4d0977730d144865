/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * Where a process's memory is, by NUMA node, for placing ping-pong pairs
 * on the node that holds their memory (plan-pair.c). Read from
 * /proc/PID/numa_maps below the root prefix: each mapping's line has
 * N<node>=<pages> fields, in pages of that line's kernelpagesize_kB.
 *
 * numa_maps is expensive: the kernel walks the page tables of every
 * mapping to count them. Measured here (kernel 6.18, 4 KiB pages, a python
 * holding a touched bytearray): 16 MiB resident ~0.3 ms, 400 MiB ~3.8 ms,
 * 1.5 GiB ~13 ms; about 9 µs per MiB, all of it CPU in the reader. So it
 * is read only
 *
 *  - on a machine with more than one node (on one node nothing is read,
 *    allocated or looked at: memnode_sample_tasks() returns at once);
 *  - for the processes of pair members about to be placed: a ping-pong
 *    finding whose members are not both pinned by us;
 *  - at most once per MEMNODE_TTL_USEC per process (cached), at most one
 *    process per pass, and after a read of d µs not again for
 *    MEMNODE_DUTY_FACTOR * d (at most ~1 % of one CPU on average);
 *  - never for a process whose resident set (/proc/PID/statm, ~3 µs) is
 *    above MEMNODE_RSS_MAX_KIB: ~75 ms at 8 GiB would stall the one
 *    thread of the daemon; such a pair is placed as if its node were not
 *    known.
 *
 * The result is evidence in the snapshot (snapshot->memnodes), which the
 * pure planner reads; it never reads a file itself.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define MEMNODE_NODES_MAX 32          /* pages on higher node numbers count in total_kib only */
#define MEMNODE_TTL_USEC (60ULL * 1000000ULL)
#define MEMNODE_DUTY_FACTOR 100
#define MEMNODE_RSS_MAX_KIB (8ULL * 1024 * 1024)

/* One process's resident memory by node, as last read. */
struct memnode {
        pid_t pid;
        uint64_t start_time;          /* the process's (field 22 of /proc/PID/stat); 0: not checked */
        uint64_t kib[MEMNODE_NODES_MAX];
        uint64_t total_kib;           /* on every node */
        uint64_t read_usec;           /* CLOCK_MONOTONIC of the read */
        uint64_t cost_usec;           /* what the read took (wall) */
        uint64_t used_usec;           /* last pass that asked for it (the cache forgets unused ones) */
};

/*
 * Parse numa_maps text: add each line's N<node>=<pages> times its
 * kernelpagesize_kB (page_kib when a line has none) into kib[] and
 * *ret_total_kib (both zeroed first). Lines without node fields (a
 * mapping with nothing resident) add nothing. Returns 0, or -EINVAL when
 * a node field does not parse.
 */
int memnode_parse_numa_maps(const char *text, uint64_t page_kib, uint64_t kib[MEMNODE_NODES_MAX],
                            uint64_t *ret_total_kib);

/*
 * The node holding more than half of the pages of a and b together (b may
 * be NULL or the same entry as a), or -1 when none does or they hold
 * less than min_kib; *ret_share (may be NULL) is that node's fraction.
 */
int memnode_majority(const struct memnode *a, const struct memnode *b, uint64_t min_kib, double *ret_share);

struct memnode_memo;
struct snapshot;
struct task;

int memnode_memo_new(struct memnode_memo **ret);
struct memnode_memo *memnode_memo_free(struct memnode_memo *m);

/*
 * The sampling step for pairs, run after detection and before planning:
 * for the tasks of the ping-pong pairs being placed (the caller picks them
 * from the findings, so sampling needs no detector types), make sure their
 * processes' memnodes are in the memo (within the bounds above), and
 * point snap->memnodes at the memo's entries (valid until the next call or
 * memnode_memo_free()). Returns 0 or -ENOMEM; a file that cannot be read
 * leaves that process unknown.
 */
int memnode_sample_tasks(struct memnode_memo *m, const char *root, const struct task *const *want_tasks,
                         size_t n_want, struct snapshot *snap, uint64_t now_usec);

/* For `affctl status --verbose`: reads so far, their cost, what was skipped. */
struct json_object;
int memnode_memo_to_json(const struct memnode_memo *m, struct json_object **ret);
