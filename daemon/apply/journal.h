/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The write-ahead journal of the apply stage: what affinityd changed and
 * what the value was before, so that a stop, `affctl revert`, or the next
 * start after a crash can put things back. The full format is in
 * affinityd-journal(5); in short:
 *
 *   affinityd-journal 1 boot_id=<uuid> created_usec=<realtime>\n      header
 *   <crc32 hex8> <JSON object>\n                                     records
 *
 * one record per line, appended with one write() and fdatasync()ed before
 * the change it announces is made. Records:
 *
 *   {"rec":"begin","seq":N,"type":"affinity","key":"task:TID:START",
 *    "pid":P,"tid":T,"start":S,"name":"","original":"0-1","target":"0",
 *    "policy":"...","reason":"...","evidence":0.97,
 *    "since_usec":MONO,"time_usec":REALTIME[,"restore":"..."]}
 *   {"rec":"applied","seq":N}
 *   {"rec":"released","seq":N,"how":"restored|foreign|gone|failed|superseded"}
 *
 * Reading is tolerant: the CRC covers the JSON text, so a half-written
 * last line (crash during append) is ignored and every earlier record is
 * kept; a bad line in the middle is skipped with a warning; unknown record
 * types and unknown keys are skipped/ignored (forward compatible within a
 * version). A different header version is refused (-EPROTONOSUPPORT): the
 * caller moves the file aside (journal_move_aside) and never guesses.
 *
 * The file is only ever replaced whole through a temp file + rename
 * (journal_rewrite): creation and compaction.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "apply/action.h"
#include "sample/snapshot.h"

#define JOURNAL_VERSION 1
#define JOURNAL_FILE "journal"
#define JOURNAL_MAGIC "affinityd-journal"

/* Values are stored formatted: affinity as a CPU list, weight as decimal,
 * a feature as NAME / NO_NAME, a sysctl as its text. A list of 1024 CPUs
 * every other one ("0,2,...,1022") is ~2.4 kB. */
#define JOURNAL_VALUE_MAX 2560

/* Compaction threshold: beyond this the live entries are rewritten. About
 * 90 set/release cycles of ~700 bytes each. */
#define JOURNAL_COMPACT_BYTES (64u * 1024)

/* Refuse to read more than this (a journal that large is not ours). */
#define JOURNAL_READ_MAX (16u * 1024 * 1024)

enum journal_rec_type {
        JREC_BEGIN,
        JREC_APPLIED,
        JREC_RELEASED,
        _JREC_MAX,
};

struct journal_record {
        enum journal_rec_type rec;
        uint64_t seq;

        /* JREC_BEGIN */
        enum action_type type;
        char key[128];
        struct task_id task;               /* ACT_AFFINITY; zero otherwise */
        char name[256];                    /* cgroup path, feature or sysctl name */
        char original[JOURNAL_VALUE_MAX];
        char target[JOURNAL_VALUE_MAX];
        char policy[64];
        char reason[160];
        char restore[512];                 /* optional: what the backend needs to undo this exactly
                                            * (apply_ops.weight_prepare); "" if nothing */
        double evidence;                   /* action.evidence_before */
        enum detector kind;                /* action.kind; DETECT_ALWAYS if the record has none */
        uint64_t since_usec;               /* CLOCK_MONOTONIC at the change */
        uint64_t time_usec;                /* CLOCK_REALTIME at the change */

        /* JREC_RELEASED */
        char how[16];
};

/* A BEGIN that was not RELEASED, as read back. */
struct journal_entry {
        struct journal_record begin;
        bool applied;
};

#define JOURNAL_MAX_WARNINGS 16

struct journal_contents {
        unsigned version;                  /* of the file's header */
        char boot_id[40];                  /* "" if the header has none */
        struct journal_entry *entries;     /* live entries, in seq order */
        size_t n_entries;
        uint64_t max_seq;

        unsigned n_records;                /* good records read */
        unsigned n_torn;                   /* incomplete last line ignored (0 or 1) */
        unsigned n_corrupt;                /* bad CRC/JSON lines skipped before the end */
        unsigned n_unknown;                /* unknown record types skipped */
        unsigned n_orphans;                /* applied/released for an unknown seq */
        uint64_t too_large;                /* the file's size if over JOURNAL_READ_MAX (read up to it), else 0 */
        char *warnings[JOURNAL_MAX_WARNINGS]; /* one line each, for the log */
        size_t n_warnings;
};

void journal_contents_clear(struct journal_contents *c);

/*
 * Parse a journal file. Returns 0 and fills ret; -ENOENT if there is no
 * file; -EPROTONOSUPPORT if the header names another version (ret->version
 * says which); -EBADMSG if it is not a journal at all; other -errno on I/O
 * errors. An empty file or a torn header line reads as an empty journal
 * (the header is written before any record, with rename, so no record can
 * follow a torn header).
 */
int journal_read(const char *path, struct journal_contents *ret);

/* Parse journal text in memory (the unit tests and the fuzzer use it). */
int journal_parse(const char *text, size_t size, struct journal_contents *ret);

struct journal;

/* Open (not create) the journal directory; the file is made by journal_rewrite. */
int journal_new(const char *dir, const char *boot_id, struct journal **ret);
struct journal *journal_free(struct journal *j);

const char *journal_path(const struct journal *j);
uint64_t journal_size(const struct journal *j);

/*
 * Replace the file with a header plus the given live entries (BEGIN, and
 * APPLIED where set) through "<file>.tmp" + fsync + rename + fsync of the
 * directory, then reopen it for appending. Used to create and to compact.
 */
int journal_rewrite(struct journal *j, const struct journal_entry *entries, size_t n);

/* Append one record as one line and fdatasync() it. */
int journal_append(struct journal *j, const struct journal_record *r);

/*
 * Move the file aside as "<file>.bad-<realtime seconds>" (a journal of an
 * unknown version or not a journal): kept for the administrator, never
 * replayed. ret_path (may be NULL) gets the new name.
 */
int journal_move_aside(struct journal *j, char *ret_path, size_t size);

/* Format one record as its line (without the newline); for tests and the fuzzer. */
int journal_format_record(const struct journal_record *r, char **ret_line);

const char *journal_rec_type_to_string(enum journal_rec_type t);
uint32_t journal_crc32(const void *data, size_t size);
