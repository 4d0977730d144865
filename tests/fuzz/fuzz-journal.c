/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Fuzz target for the journal parser (daemon/apply/journal.c), the file a
 * crash leaves for the next start to restore from. Beyond "does not crash
 * or overrun": a parse that succeeds gives entries in seq order with no
 * seq above max_seq, at most JOURNAL_MAX_WARNINGS warnings, and each entry
 * formats back into a record that parses to the same key and original
 * (what restore relies on).
 *
 * Built like fuzz-config: with fuzz-replay.c under make check over
 * tests/fuzz/corpus/journal, and for libFuzzer with --enable-fuzzer CC=clang.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apply/journal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct journal_contents c = {};
        int r;

        if (size > 256 * 1024)
                return 0;
        r = journal_parse((const char *) data, size, &c);
        if (r < 0) {
                if (c.n_entries || c.entries)
                        abort();
                return 0;
        }
        if (c.n_warnings > JOURNAL_MAX_WARNINGS)
                abort();
        for (size_t i = 0; i < c.n_entries; i++) {
                const struct journal_record *b = &c.entries[i].begin;
                char *line = NULL;

                if (b->seq > c.max_seq || (i > 0 && b->seq <= c.entries[i - 1].begin.seq))
                        abort();
                /* format → parse: the record restore needs comes back the same */
                if (journal_format_record(b, &line) >= 0) {
                        char *text = NULL;
                        struct journal_contents again = {};

                        if (asprintf(&text, JOURNAL_MAGIC " %d boot_id=-\n%s\n", JOURNAL_VERSION, line) < 0)
                                abort();
                        if (journal_parse(text, strlen(text), &again) < 0 || again.n_entries != 1 ||
                            strcmp(again.entries[0].begin.key, b->key) != 0 ||
                            strcmp(again.entries[0].begin.original, b->original) != 0) {
                                fprintf(stderr, "entry seq %llu does not survive format → parse\n",
                                        (unsigned long long) b->seq);
                                abort();
                        }
                        journal_contents_clear(&again);
                        free(text);
                }
                free(line);
        }
        journal_contents_clear(&c);
        return 0;
}
