/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The journal file: round trip, torn last record at every byte, damaged
 * middle record, version mismatch, not-a-journal, unknown record types,
 * compaction. Crash replay through the applier is in test-apply.c.
 *
 * `test-journal --bench DIR [N]` measures the cost of one append
 * (write + fdatasync) in DIR instead of testing.
 */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <time.h>

#include "common/util.h"
#include "apply/journal.h"
#include "test-fixtures.h"
#include "test-util.h"

static char dir[256];

static struct journal_record begin_rec(uint64_t seq, int tid, const char *orig, const char *target) {
        struct journal_record r = {
                .rec = JREC_BEGIN,
                .seq = seq,
                .type = ACT_AFFINITY,
                .task = { .pid = tid, .tid = tid, .start_time = 1000 + (uint64_t) tid },
                .evidence = 0.97,
                .since_usec = 5 * USEC_PER_SEC,
                .time_usec = 1700000000 * USEC_PER_SEC,
        };
        snprintf(r.key, sizeof(r.key), "task:%d:%d", tid, 1000 + tid);
        snprintf(r.original, sizeof(r.original), "%s", orig);
        snprintf(r.target, sizeof(r.target), "%s", target);
        snprintf(r.policy, sizeof(r.policy), "hogs");
        snprintf(r.reason, sizeof(r.reason), "hog: util 98%% \"quoted\"\nnewline\ttab \\ é");
        return r;
}

static void append(struct journal *j, enum journal_rec_type t, uint64_t seq, const char *how) {
        struct journal_record r = { .rec = t, .seq = seq };
        if (how)
                snprintf(r.how, sizeof(r.how), "%s", how);
        ASSERT_OK(journal_append(j, &r));
}

static char *slurp(const char *path, size_t *ret_size) {
        char *text;
        ASSERT_OK(util_read_full_file_at(NULL, path, &text, ret_size));
        return text;
}

/* A journal with: 1 applied, 2 released, 3 begun only. */
static struct journal *write_sample(void) {
        struct journal *j;
        struct journal_record r;

        ASSERT_OK(journal_new(dir, "11111111-2222-3333-4444-555555555555", &j));
        ASSERT_OK(journal_rewrite(j, NULL, 0));
        r = begin_rec(1, 100, "0-1", "0");
        ASSERT_OK(journal_append(j, &r));
        append(j, JREC_APPLIED, 1, NULL);
        r = begin_rec(2, 200, "0-1", "1");
        ASSERT_OK(journal_append(j, &r));
        append(j, JREC_APPLIED, 2, NULL);
        append(j, JREC_RELEASED, 2, "restored");
        r = begin_rec(3, 300, "0-3", "2");
        ASSERT_OK(journal_append(j, &r));
        return j;
}

static void test_crc(void) {
        /* the standard check value of CRC-32/ISO-HDLC */
        ASSERT_EQ(journal_crc32("123456789", 9), 0xcbf43926u);
}

static void test_roundtrip(void) {
        struct journal_contents c = {};
        struct journal *j = write_sample();

        ASSERT_OK(journal_read(journal_path(j), &c));
        ASSERT_EQ(c.version, JOURNAL_VERSION);
        ASSERT_STREQ(c.boot_id, "11111111-2222-3333-4444-555555555555");
        ASSERT_EQ(c.n_records, 6);
        ASSERT_EQ(c.n_entries, 2);
        ASSERT_EQ(c.max_seq, 3);
        ASSERT_EQ(c.n_torn + c.n_corrupt + c.n_unknown + c.n_orphans, 0);
        ASSERT_EQ(c.entries[0].begin.seq, 1);
        ASSERT_TRUE(c.entries[0].applied);
        ASSERT_EQ(c.entries[0].begin.type, ACT_AFFINITY);
        ASSERT_EQ(c.entries[0].begin.task.tid, 100);
        ASSERT_EQ(c.entries[0].begin.task.start_time, 1100);
        ASSERT_STREQ(c.entries[0].begin.original, "0-1");
        ASSERT_STREQ(c.entries[0].begin.target, "0");
        ASSERT_STREQ(c.entries[0].begin.reason, "hog: util 98% \"quoted\"\nnewline\ttab \\ é");
        ASSERT_NEAR(c.entries[0].begin.evidence, 0.97, 1e-12);
        ASSERT_EQ(c.entries[0].begin.since_usec, 5 * USEC_PER_SEC);
        ASSERT_EQ(c.entries[1].begin.seq, 3);
        ASSERT_TRUE(!c.entries[1].applied);
        journal_contents_clear(&c);
        journal_free(j);
}

/* The optional "restore" words of a weight, and the cgroup-subtree type, survive a round trip. */
static void test_restore_field_and_subtree(void) {
        struct journal_record r = begin_rec(1, 1, "100", "500"), s = begin_rec(2, 1, "-cpu", "+cpu");
        struct journal_contents c = {};
        char *l1, *l2, *text;

        r.type = ACT_CGROUP_WEIGHT;
        r.task = (struct task_id) {};
        snprintf(r.key, sizeof(r.key), "cgroup:/e2e.slice/x.service");
        snprintf(r.name, sizeof(r.name), "/e2e.slice/x.service");
        snprintf(r.restore, sizeof(r.restore), "unit=x.service property=CPUWeight unit_original=unset "
                 "dropin=/run/systemd/transient/x.service.d/50-CPUWeight.conf dropin_existed=0 dir_existed=0");
        s.type = ACT_CGROUP_SUBTREE;
        s.task = (struct task_id) {};
        snprintf(s.key, sizeof(s.key), "subtree:/plain");
        snprintf(s.name, sizeof(s.name), "/plain");
        ASSERT_OK(journal_format_record(&s, &l1));
        ASSERT_OK(journal_format_record(&r, &l2));
        ASSERT_TRUE(!strstr(l1, "\"restore\""));   /* only written when there is something to say */
        ASSERT_TRUE(asprintf(&text, JOURNAL_MAGIC " 1 boot_id=- created_usec=1\n%s\n%s\n", l1, l2) > 0);
        ASSERT_OK(journal_parse(text, strlen(text), &c));
        ASSERT_EQ(c.n_entries, 2);
        /* written seq 2 first: the entries come back in seq order all the same */
        ASSERT_EQ(c.entries[1].begin.type, ACT_CGROUP_SUBTREE);
        ASSERT_STREQ(c.entries[1].begin.restore, "");
        ASSERT_STREQ(c.entries[1].begin.original, "-cpu");
        ASSERT_EQ(c.entries[0].begin.type, ACT_CGROUP_WEIGHT);
        ASSERT_STREQ(c.entries[0].begin.restore, r.restore);
        journal_contents_clear(&c);
        free(text);
        free(l1);
        free(l2);
}

/* Cut the file at every byte of the last record: everything before survives. */
static void test_torn_last_record(void) {
        struct journal *j = write_sample();
        char path[512];
        size_t size, last_start;
        char *text;

        snprintf(path, sizeof(path), "%s", journal_path(j));
        journal_free(j);
        text = slurp(path, &size);
        ASSERT_TRUE(size > 2 && text[size - 1] == '\n');
        last_start = size - 1;
        while (last_start > 0 && text[last_start - 1] != '\n')
                last_start--;

        for (size_t cut = last_start + 1; cut < size; cut++) {
                struct journal_contents c = {};

                ASSERT_OK(journal_parse(text, cut, &c));
                ASSERT_EQ(c.n_torn, 1);
                ASSERT_EQ(c.n_corrupt, 0);
                ASSERT_EQ(c.n_entries, 1);          /* seq 3 lost, seq 1 kept */
                ASSERT_EQ(c.entries[0].begin.seq, 1);
                ASSERT_TRUE(c.entries[0].applied);
                ASSERT_EQ(c.n_warnings, 1);
                journal_contents_clear(&c);
        }

        /* A torn tail padded to a complete line (ext4 after a crash): still the last, still ignored. */
        {
                struct journal_contents c = {};
                char *padded = malloc(size + 16);
                memcpy(padded, text, last_start + 20);
                memset(padded + last_start + 20, 0, 10);
                padded[last_start + 30] = '\n';
                ASSERT_OK(journal_parse(padded, last_start + 31, &c));
                ASSERT_EQ(c.n_torn, 1);
                ASSERT_EQ(c.n_entries, 1);
                journal_contents_clear(&c);
                free(padded);
        }

        /* Empty file and a torn header: nothing recorded yet. */
        {
                struct journal_contents c = {};
                ASSERT_OK(journal_parse("", 0, &c));
                ASSERT_EQ(c.n_entries, 0);
                ASSERT_OK(journal_parse(JOURNAL_MAGIC " 1 boo", 20, &c));
                ASSERT_EQ(c.n_entries, 0);
                ASSERT_EQ(c.n_torn, 1);
                journal_contents_clear(&c);
        }
        free(text);
}

static void test_damaged_middle_record(void) {
        struct journal *j = write_sample();
        struct journal_contents c = {};
        char path[512];
        size_t size;
        char *text, *p;

        snprintf(path, sizeof(path), "%s", journal_path(j));
        journal_free(j);
        text = slurp(path, &size);
        /* flip one character inside the first record's original value */
        p = strstr(text, "\"original\":\"0-1\"");
        ASSERT_TRUE(p);
        p[13] = '7';
        ASSERT_OK(journal_parse(text, size, &c));
        ASSERT_EQ(c.n_corrupt, 1);
        ASSERT_EQ(c.n_torn, 0);
        /* seq 1's begin is gone: its applied is an orphan; seq 3 still there */
        ASSERT_EQ(c.n_orphans, 1);
        ASSERT_EQ(c.n_entries, 1);
        ASSERT_EQ(c.entries[0].begin.seq, 3);
        /* the log line says what can be read of it: seq, key, PID, original */
        {
                bool named = false;
                for (size_t i = 0; i < c.n_warnings; i++)
                        named |= strstr(c.warnings[i], "damaged record") && strstr(c.warnings[i], "key=task:100:1100") &&
                                 strstr(c.warnings[i], "pid=100") && strstr(c.warnings[i], "seq=1");
                ASSERT_TRUE(named);
        }
        journal_contents_clear(&c);
        free(text);
}

/* Leftovers in the runtime dir: a journal.tmp symlink (or file) is replaced,
 * never followed; a journal that is a symlink is not read through. */
static void test_runtime_dir_leftovers(void) {
        char tmp[512], target[512], jpath[512];
        struct journal_contents c = {};
        struct journal *j;
        struct stat st;

        snprintf(tmp, sizeof(tmp), "%s/journal.tmp", dir);
        snprintf(target, sizeof(target), "%s/victim", dir);
        snprintf(jpath, sizeof(jpath), "%s/journal", dir);
        ASSERT_OK(symlink(target, tmp));
        j = write_sample();                       /* journal_rewrite() over the symlink */
        ASSERT_EQ(lstat(target, &st), -1);       /* nothing written through it */
        ASSERT_EQ(lstat(tmp, &st), -1);          /* renamed into place: gone */
        ASSERT_OK(journal_read(jpath, &c));
        ASSERT_EQ(c.n_entries, 2);
        journal_contents_clear(&c);
        journal_free(j);

        ASSERT_OK(rename(jpath, target));
        ASSERT_OK(symlink(target, jpath));
        ASSERT_EQ(journal_read(jpath, &c), -ELOOP);
        test_clean_dir(dir);
}

/* A good journal followed by junk past the read limit: read up to the
 * limit, its entries still there, and too_large says how big it was. */
static void test_too_large(void) {
        struct journal *j = write_sample();
        struct journal_contents c = {};
        char path[512], junk[65536];
        uint64_t total;
        int fd;

        snprintf(path, sizeof(path), "%s", journal_path(j));
        journal_free(j);
        fd = open(path, O_WRONLY | O_APPEND);
        ASSERT_TRUE(fd >= 0);
        memset(junk, 'x', sizeof(junk));
        junk[sizeof(junk) - 1] = '\n';
        for (size_t done = 0; done < JOURNAL_READ_MAX + sizeof(junk); done += sizeof(junk))
                ASSERT_EQ(write(fd, junk, sizeof(junk)), (ssize_t) sizeof(junk));
        close(fd);
        ASSERT_OK(journal_read(path, &c));
        total = c.too_large;
        ASSERT_TRUE(total > JOURNAL_READ_MAX);
        ASSERT_EQ(c.n_entries, 2);                /* seq 1 and 3, as written */
        journal_contents_clear(&c);
        test_clean_dir(dir);
}

static void test_version_mismatch(void) {
        struct journal_contents c = {};
        const char *v2 = JOURNAL_MAGIC " 2 boot_id=x\n12345678 {\"rec\":\"begin\",\"seq\":1}\n";
        const char *junk = "#!/bin/sh\necho hello\n";

        ASSERT_EQ(journal_parse(v2, strlen(v2), &c), -EPROTONOSUPPORT);
        ASSERT_EQ(c.version, 2);
        ASSERT_EQ(c.n_entries, 0);
        ASSERT_EQ(journal_parse(junk, strlen(junk), &c), -EBADMSG);
        ASSERT_EQ(journal_parse(JOURNAL_MAGIC " x\n", strlen(JOURNAL_MAGIC) + 3, &c), -EBADMSG);
}

static void test_move_aside(void) {
        struct journal *j = write_sample();
        char aside[512], path[512];
        struct stat st;

        snprintf(path, sizeof(path), "%s", journal_path(j));
        ASSERT_OK(journal_move_aside(j, aside, sizeof(aside)));
        ASSERT_TRUE(strstr(aside, "/journal.bad-"));
        ASSERT_EQ(stat(path, &st), -1);
        ASSERT_OK(stat(aside, &st));
        ASSERT_EQ(journal_append(j, &(struct journal_record) { .rec = JREC_APPLIED, .seq = 9 }), -EBADF);
        /* a second one in the same second does not replace the first */
        ASSERT_OK(journal_rewrite(j, NULL, 0));
        char aside2[512];
        ASSERT_OK(journal_move_aside(j, aside2, sizeof(aside2)));
        ASSERT_TRUE(!streq(aside, aside2));
        ASSERT_OK(stat(aside, &st));
        journal_free(j);
        unlink(aside);
        unlink(aside2);
}

static void add_line(char **text, const char *json) {
        char *n;
        ASSERT_TRUE(asprintf(&n, "%s%08x %s\n", *text, journal_crc32(json, strlen(json)), json) > 0);
        free(*text);
        *text = n;
}

static void test_unknown_records(void) {
        struct journal_contents c = {};
        struct journal_record r = begin_rec(1, 100, "0-1", "0");
        char *text = strdup(JOURNAL_MAGIC " 1 boot_id=b future_key=1\n"), *line;

        ASSERT_OK(journal_format_record(&r, &line));
        char *n;
        ASSERT_TRUE(asprintf(&n, "%s%s\n", text, line) > 0);
        free(text);
        free(line);
        text = n;
        add_line(&text, "{\"rec\":\"checkpoint\",\"seq\":2,\"whatever\":[1,2]}");
        add_line(&text, "{\"rec\":\"begin\",\"seq\":3,\"type\":\"numa-balance\",\"key\":\"numa:1\","
                        "\"original\":\"1\",\"target\":\"0\"}");
        add_line(&text, "{\"rec\":\"applied\",\"seq\":1,\"new_field\":\"ignored\"}");
        add_line(&text, "{\"rec\":\"applied\",\"seq\":3}");   /* for the skipped unknown begin */

        ASSERT_OK(journal_parse(text, strlen(text), &c));
        ASSERT_EQ(c.n_unknown, 2);
        ASSERT_EQ(c.n_orphans, 1);
        ASSERT_EQ(c.n_corrupt, 0);
        ASSERT_EQ(c.n_entries, 1);
        ASSERT_TRUE(c.entries[0].applied);
        ASSERT_STREQ(c.boot_id, "b");
        ASSERT_TRUE(c.n_warnings == 3);
        ASSERT_TRUE(strstr(c.warnings[0], "checkpoint"));
        ASSERT_TRUE(strstr(c.warnings[1], "numa-balance"));
        journal_contents_clear(&c);

        /* missing a required field → damaged, not unknown */
        free(text);
        text = strdup(JOURNAL_MAGIC " 1\n");
        add_line(&text, "{\"rec\":\"begin\",\"seq\":1,\"type\":\"affinity\",\"key\":\"task:1:1\"}");
        add_line(&text, "{\"rec\":\"applied\",\"seq\":1}");
        ASSERT_OK(journal_parse(text, strlen(text), &c));
        ASSERT_EQ(c.n_corrupt, 1);
        ASSERT_EQ(c.n_entries, 0);
        journal_contents_clear(&c);
        free(text);
}

/* The example in man/affinityd-journal.5, byte for byte. */
static void test_documented_example(void) {
        const char *text =
                "affinityd-journal 1 boot_id=22d99b82-db28-4976-ac23-aae54718c0a7 created_usec=1718000000000000\n"
                "3733c73c {\"rec\":\"begin\",\"seq\":1,\"type\":\"affinity\",\"key\":\"task:4242:123456\","
                "\"pid\":4242,\"tid\":4242,\"start\":123456,\"name\":\"\",\"original\":\"0-1\",\"target\":\"0\","
                "\"policy\":\"hogs\",\"reason\":\"hog: util 98% migrations 0.6/s on 0,1\",\"evidence\":0.98,"
                "\"since_usec\":51000000,\"time_usec\":1718000001000000}\n"
                "f2d73671 {\"rec\":\"applied\",\"seq\":1}\n";
        const char *released = "3a875e6e {\"rec\":\"released\",\"seq\":1,\"how\":\"restored\"}\n";
        struct journal_contents c = {};
        char *both;

        ASSERT_OK(journal_parse(text, strlen(text), &c));
        ASSERT_EQ(c.n_records, 2);
        ASSERT_EQ(c.n_entries, 1);
        ASSERT_TRUE(c.entries[0].applied);
        ASSERT_EQ(c.entries[0].begin.task.start_time, 123456);
        ASSERT_STREQ(c.entries[0].begin.target, "0");
        journal_contents_clear(&c);
        ASSERT_TRUE(asprintf(&both, "%s%s", text, released) > 0);
        ASSERT_OK(journal_parse(both, strlen(both), &c));
        ASSERT_EQ(c.n_records, 3);
        ASSERT_EQ(c.n_entries, 0);
        journal_contents_clear(&c);
        free(both);
}

static void test_compaction(void) {
        struct journal *j;
        struct journal_contents c = {};
        struct journal_entry keep[2];
        uint64_t before;

        ASSERT_OK(journal_new(dir, "b", &j));
        ASSERT_OK(journal_rewrite(j, NULL, 0));
        for (uint64_t s = 1; s <= 200; s++) {
                struct journal_record r = begin_rec(s, (int) s, "0-1", "0");
                ASSERT_OK(journal_append(j, &r));
                append(j, JREC_APPLIED, s, NULL);
                if (s != 7 && s != 150)
                        append(j, JREC_RELEASED, s, "restored");
        }
        before = journal_size(j);
        ASSERT_TRUE(before > JOURNAL_COMPACT_BYTES);
        ASSERT_OK(journal_read(journal_path(j), &c));
        ASSERT_EQ(c.n_entries, 2);
        memcpy(keep, c.entries, sizeof(keep));
        journal_contents_clear(&c);

        ASSERT_OK(journal_rewrite(j, keep, 2));
        ASSERT_TRUE(journal_size(j) < 2048);
        ASSERT_OK(journal_read(journal_path(j), &c));
        ASSERT_EQ(c.n_entries, 2);
        ASSERT_EQ(c.entries[0].begin.seq, 7);
        ASSERT_EQ(c.entries[1].begin.seq, 150);
        ASSERT_TRUE(c.entries[1].applied);
        ASSERT_STREQ(c.entries[1].begin.reason, keep[1].begin.reason);
        journal_contents_clear(&c);

        /* appends continue after a rewrite */
        append(j, JREC_RELEASED, 7, "restored");
        ASSERT_OK(journal_read(journal_path(j), &c));
        ASSERT_EQ(c.n_entries, 1);
        journal_contents_clear(&c);

        /* no temp file left behind */
        char tmp[512];
        struct stat st;
        snprintf(tmp, sizeof(tmp), "%s/journal.tmp", dir);
        ASSERT_EQ(stat(tmp, &st), -1);
        journal_free(j);
}

static int cmp_u64(const void *x, const void *y) {
        uint64_t a = *(const uint64_t *) x, b = *(const uint64_t *) y;
        return a < b ? -1 : a > b;
}

static uint64_t now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
}

/* test-journal --bench DIR [N]: the cost of one append (write + fdatasync). */
static int bench(const char *bdir, unsigned n) {
        struct journal *j;
        uint64_t *t = calloc(n, sizeof(*t)), sum = 0;
        char path[512];

        ASSERT_TRUE(t);
        ASSERT_OK(journal_new(bdir, "bench", &j));
        ASSERT_OK(journal_rewrite(j, NULL, 0));
        for (unsigned i = 0; i < n; i++) {
                struct journal_record r = begin_rec(i + 1, 100, "0-1", "0");
                uint64_t t0 = now_ns();
                ASSERT_OK(journal_append(j, &r));
                t[i] = now_ns() - t0;
                sum += t[i];
        }
        qsort(t, n, sizeof(*t), cmp_u64);
        printf("%s: %u appends of ~%" PRIu64 " bytes: mean %.1f us, p50 %.1f us, p99 %.1f us, max %.1f us\n",
               bdir, n, journal_size(j) / n, sum / 1000.0 / n, t[n / 2] / 1000.0, t[n * 99 / 100] / 1000.0,
               t[n - 1] / 1000.0);
        snprintf(path, sizeof(path), "%s", journal_path(j));
        journal_free(j);
        unlink(path);
        free(t);
        return 0;
}

int main(int argc, char **argv) {
        if (argc >= 3 && streq(argv[1], "--bench"))
                return bench(argv[2], argc >= 4 ? (unsigned) atoi(argv[3]) : 200);

        test_mkdtemp(dir, sizeof(dir), "test-journal-");
        test_crc();
        test_roundtrip();
        test_restore_field_and_subtree();
        test_torn_last_record();
        test_damaged_middle_record();
        test_version_mismatch();
        test_move_aside();
        test_runtime_dir_leftovers();
        test_too_large();
        test_unknown_records();
        test_documented_example();
        test_compaction();
        test_clean_dir(dir);
        rmdir(dir);
        return 0;
}
