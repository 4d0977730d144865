/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-journal.h>

#include "common/util.h"
#include "config/config.h"
#include "core/log.h"

/* The names are config.h's (LOGL_*), the levels syslog's. */
_Static_assert(LOGL_ERR == LOG_ERR && LOGL_WARNING == LOG_WARNING && LOGL_NOTICE == LOG_NOTICE &&
               LOGL_INFO == LOG_INFO && LOGL_DEBUG == LOG_DEBUG, "LOGL_* are the syslog levels");

/* True if our stderr is the journal stream systemd set up for us. */
static bool stderr_is_journal(void) {
        const char *e = getenv("JOURNAL_STREAM");
        unsigned long dev, ino;
        struct stat st;

        if (!e || sscanf(e, "%lu:%lu", &dev, &ino) != 2)
                return false;
        if (fstat(STDERR_FILENO, &st) < 0)
                return false;
        return st.st_dev == dev && st.st_ino == ino;
}

void log_target_init(struct log_target *t, int max_level) {
        t->max_level = max_level;
        t->journal = stderr_is_journal();
}

static void log_v(const struct log_target *t, int level, const char *const *fields,
                  const char *fmt, va_list ap) {
        char msg[2048];

        if (level > t->max_level)
                return;
        vsnprintf(msg, sizeof(msg), fmt, ap);

        if (t->journal) {
                /* sd_journal_sendv takes MESSAGE=, PRIORITY= and our fields as iovecs. */
                struct iovec iov[32];
                char mbuf[sizeof(msg) + 16], pbuf[32];
                size_t n = 0;

                snprintf(mbuf, sizeof(mbuf), "MESSAGE=%s", msg);
                snprintf(pbuf, sizeof(pbuf), "PRIORITY=%d", level);
                iov[n++] = (struct iovec) { mbuf, strlen(mbuf) };
                iov[n++] = (struct iovec) { pbuf, strlen(pbuf) };
                iov[n++] = (struct iovec) { (char *) "SYSLOG_IDENTIFIER=affinityd", 27 };
                for (size_t i = 0; fields && fields[i] && n < ELEMENTSOF(iov); i++)
                        iov[n++] = (struct iovec) { (char *) fields[i], strlen(fields[i]) };
                if (sd_journal_sendv(iov, (int) n) >= 0)
                        return;
                /* fall through to stderr if the journal refused */
        }
        fprintf(stderr, "affinityd[%s]: %s\n", log_level_to_string(level), msg);
}

void log_fields(const struct log_target *t, int level, const char *const *fields,
                const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        log_v(t, level, fields, fmt, ap);
        va_end(ap);
}

int log_errno(const struct log_target *t, int level, int err, const char *fmt, ...) {
        char buf[1536];
        va_list ap;

        if (err < 0)
                err = -err;
        va_start(ap, fmt);
        vsnprintf(buf, sizeof(buf), fmt, ap);
        va_end(ap);
        log_fields(t, level, NULL, "%s: %s", buf, strerror(err));
        return -err;
}
