/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <time.h>

#include "common/util.h"
#include "apply/journal.h"

struct journal {
        char *dir;
        char *path;
        char *tmp_path;
        int dir_fd;
        int fd;                 /* append fd, -1 until journal_rewrite */
        char boot_id[40];
        uint64_t size;
};

static const char *const rec_names[_JREC_MAX] = {
        [JREC_BEGIN] = "begin",
        [JREC_APPLIED] = "applied",
        [JREC_RELEASED] = "released",
};

const char *journal_rec_type_to_string(enum journal_rec_type t) {
        return t >= 0 && t < _JREC_MAX ? rec_names[t] : "unknown";
}

/* CRC-32 (IEEE 802.3, as zlib's crc32()); bitwise, records are < 1 kB and
 * every append pays an fdatasync that costs orders of magnitude more. */
uint32_t journal_crc32(const void *data, size_t size) {
        const uint8_t *p = data;
        uint32_t crc = 0xffffffffu;

        for (size_t i = 0; i < size; i++) {
                crc ^= p[i];
                for (int k = 0; k < 8; k++)
                        crc = (crc >> 1) ^ (0xedb88320u & -(crc & 1));
        }
        return ~crc;
}

void journal_contents_clear(struct journal_contents *c) {
        if (!c)
                return;
        free(c->entries);
        for (size_t i = 0; i < c->n_warnings; i++)
                free(c->warnings[i]);
        *c = (struct journal_contents) {};
}

static void warn_add(struct journal_contents *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn_add(struct journal_contents *c, const char *fmt, ...) {
        va_list ap;
        char *s;

        if (c->n_warnings >= JOURNAL_MAX_WARNINGS)
                return;
        va_start(ap, fmt);
        if (vasprintf(&s, fmt, ap) >= 0)
                c->warnings[c->n_warnings++] = s;
        va_end(ap);
}

static int action_type_from_string(const char *s, enum action_type *ret) {
        for (int t = 0; t < _ACT_TYPE_MAX; t++)
                if (streq(s, action_type_to_string(t))) {
                        *ret = t;
                        return 0;
                }
        return -EINVAL;
}

/* ---- formatting ---- */

int journal_format_record(const struct journal_record *r, char **ret_line) {
        struct json_object *o;
        const char *json;
        char *line;
        int n;

        o = json_object_new_object();
        if (!o)
                return -ENOMEM;
        json_object_object_add(o, "rec", json_object_new_string(journal_rec_type_to_string(r->rec)));
        json_object_object_add(o, "seq", json_object_new_uint64(r->seq));
        switch (r->rec) {
        case JREC_BEGIN:
                json_object_object_add(o, "type", json_object_new_string(action_type_to_string(r->type)));
                json_object_object_add(o, "key", json_object_new_string(r->key));
                json_object_object_add(o, "pid", json_object_new_int(r->task.pid));
                json_object_object_add(o, "tid", json_object_new_int(r->task.tid));
                json_object_object_add(o, "start", json_object_new_uint64(r->task.start_time));
                json_object_object_add(o, "name", json_object_new_string(r->name));
                json_object_object_add(o, "original", json_object_new_string(r->original));
                json_object_object_add(o, "target", json_object_new_string(r->target));
                json_object_object_add(o, "policy", json_object_new_string(r->policy));
                json_object_object_add(o, "reason", json_object_new_string(r->reason));
                /* json-c would write NaN/Infinity, which strict readers refuse. */
                json_object_object_add(o, "evidence", json_object_new_double(isfinite(r->evidence) ? r->evidence : 0.0));
                json_object_object_add(o, "detector", json_object_new_string(detector_to_string(r->kind)));
                json_object_object_add(o, "since_usec", json_object_new_uint64(r->since_usec));
                json_object_object_add(o, "time_usec", json_object_new_uint64(r->time_usec));
                /* Only where the backend has something to say (a weight set through
                 * systemd, a cgroup v1 cpu.shares value): older readers ignore it. */
                if (r->restore[0])
                        json_object_object_add(o, "restore", json_object_new_string(r->restore));
                break;
        case JREC_RELEASED:
                json_object_object_add(o, "how", json_object_new_string(r->how));
                break;
        default:
                break;
        }

        json = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        if (!json) {
                json_object_put(o);
                return -ENOMEM;
        }
        n = asprintf(&line, "%08" PRIx32 " %s", journal_crc32(json, strlen(json)), json);
        json_object_put(o);
        if (n < 0)
                return -ENOMEM;
        *ret_line = line;
        return 0;
}

/* ---- parsing ---- */

static int get_str(struct json_object *o, const char *k, char *buf, size_t size, bool required) {
        struct json_object *v;
        const char *s;

        if (!json_object_object_get_ex(o, k, &v)) {
                buf[0] = '\0';
                return required ? -EBADMSG : 0;
        }
        if (!json_object_is_type(v, json_type_string))
                return -EBADMSG;
        s = json_object_get_string(v);
        if (strlen(s) >= size)
                return -EBADMSG;   /* a truncated original would restore the wrong value */
        strcpy(buf, s);
        return 0;
}

static int get_u64(struct json_object *o, const char *k, uint64_t *ret, bool required) {
        struct json_object *v;

        if (!json_object_object_get_ex(o, k, &v)) {
                *ret = 0;
                return required ? -EBADMSG : 0;
        }
        if (!json_object_is_type(v, json_type_int))
                return -EBADMSG;
        errno = 0;
        *ret = json_object_get_uint64(v);
        return 0;
}

static int get_int(struct json_object *o, const char *k, int *ret) {
        struct json_object *v;
        int64_t x;

        if (!json_object_object_get_ex(o, k, &v)) {
                *ret = 0;
                return 0;
        }
        if (!json_object_is_type(v, json_type_int))
                return -EBADMSG;
        x = json_object_get_int64(v);
        if (x < 0 || x > INT_MAX)
                return -EBADMSG;
        *ret = (int) x;
        return 0;
}

/*
 * What can still be read of a damaged line, for the log: the values of
 * "seq", "key", "pid" and "original" as they stand in the text (the
 * checksum failed, so they may be wrong, which the log says). An operator
 * holding this and the kept copy of the journal can put a value back by
 * hand.
 */
static void damaged_hint(const char *line, size_t len, char *buf, size_t size) {
        static const char *const fields[] = { "seq", "key", "pid", "original" };
        size_t used = 0;

        buf[0] = '\0';
        for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
                char pat[16];
                const char *p, *v, *end = line + len;
                size_t n;

                snprintf(pat, sizeof(pat), "\"%s\":", fields[i]);
                p = memmem(line, len, pat, strlen(pat));
                if (!p)
                        continue;
                v = p + strlen(pat);
                if (v < end && *v == '"') {
                        const char *q = memchr(v + 1, '"', (size_t) (end - v - 1));
                        v++;
                        n = q ? (size_t) (q - v) : (size_t) (end - v);
                } else {
                        n = 0;
                        while (v + n < end && v[n] != ',' && v[n] != '}')
                                n++;
                }
                n = MIN(n, (size_t) 64);
                if (used + n + 16 >= size)
                        break;
                used += (size_t) snprintf(buf + used, size - used, "%s%s=", used ? " " : "", fields[i]);
                for (size_t k = 0; k < n; k++)   /* only printable bytes reach the log */
                        buf[used++] = v[k] >= 0x20 && v[k] < 0x7f ? v[k] : '?';
                buf[used] = '\0';
        }
}

/*
 * Parse one record line (without newline). Returns 0 with ret filled, 1 for
 * an unknown record type (ret->rec unset, ret_name gets the type), or
 * -EBADMSG for a damaged line.
 */
static int parse_line(const char *line, size_t len, struct journal_record *ret, char *ret_name, size_t name_size) {
        struct json_tokener *tok;
        struct json_object *o, *v;
        char hex[9];
        uint32_t crc;
        char *end;
        const char *json;
        size_t json_len;
        char recname[32];
        int r, pid = 0, tid = 0;

        if (len < 10 || line[8] != ' ')
                return -EBADMSG;
        memcpy(hex, line, 8);
        hex[8] = '\0';
        errno = 0;
        crc = (uint32_t) strtoul(hex, &end, 16);
        if (errno != 0 || *end != '\0')
                return -EBADMSG;
        json = line + 9;
        json_len = len - 9;
        if (memchr(json, '\0', json_len))
                return -EBADMSG;
        if (journal_crc32(json, json_len) != crc)
                return -EBADMSG;

        tok = json_tokener_new();
        if (!tok)
                return -ENOMEM;
        o = json_tokener_parse_ex(tok, json, (int) json_len);
        r = json_tokener_get_error(tok) == json_tokener_success &&
            json_tokener_get_parse_end(tok) == json_len ? 0 : -EBADMSG;
        json_tokener_free(tok);
        if (r < 0 || !o || !json_object_is_type(o, json_type_object)) {
                json_object_put(o);
                return -EBADMSG;
        }

        *ret = (struct journal_record) {};
        r = get_str(o, "rec", recname, sizeof(recname), true);
        if (r < 0)
                goto out;
        r = get_u64(o, "seq", &ret->seq, true);
        if (r < 0)
                goto out;

        if (streq(recname, "begin")) {
                char type[32];

                ret->rec = JREC_BEGIN;
                r = get_str(o, "type", type, sizeof(type), true);
                if (r < 0)
                        goto out;
                if (action_type_from_string(type, &ret->type) < 0) {
                        /* A change of a kind this build does not know how to undo. */
                        snprintf(ret_name, name_size, "begin/%s", type);
                        r = 1;
                        goto out;
                }
                if ((r = get_str(o, "key", ret->key, sizeof(ret->key), true)) < 0 ||
                    (r = get_int(o, "pid", &pid)) < 0 ||
                    (r = get_int(o, "tid", &tid)) < 0 ||
                    (r = get_u64(o, "start", &ret->task.start_time, false)) < 0 ||
                    (r = get_str(o, "name", ret->name, sizeof(ret->name), false)) < 0 ||
                    (r = get_str(o, "original", ret->original, sizeof(ret->original), true)) < 0 ||
                    (r = get_str(o, "target", ret->target, sizeof(ret->target), true)) < 0 ||
                    (r = get_str(o, "policy", ret->policy, sizeof(ret->policy), false)) < 0 ||
                    (r = get_str(o, "reason", ret->reason, sizeof(ret->reason), false)) < 0 ||
                    (r = get_u64(o, "since_usec", &ret->since_usec, false)) < 0 ||
                    (r = get_u64(o, "time_usec", &ret->time_usec, false)) < 0 ||
                    (r = get_str(o, "restore", ret->restore, sizeof(ret->restore), false)) < 0)
                        goto out;
                ret->task.pid = pid;
                ret->task.tid = tid;
                if (json_object_object_get_ex(o, "evidence", &v))
                        ret->evidence = json_object_get_double(v);
                /* Optional: journals written before it was recorded read as DETECT_ALWAYS. */
                ret->kind = DETECT_ALWAYS;
                if (json_object_object_get_ex(o, "detector", &v) && json_object_get_string(v)) {
                        enum detector d = detector_from_string(json_object_get_string(v));
                        if (d >= 0 && d < _DETECT_MAX)
                                ret->kind = d;
                }
        } else if (streq(recname, "applied"))
                ret->rec = JREC_APPLIED;
        else if (streq(recname, "released")) {
                ret->rec = JREC_RELEASED;
                r = get_str(o, "how", ret->how, sizeof(ret->how), false);
        } else {
                snprintf(ret_name, name_size, "%s", recname);
                r = 1;
        }
out:
        json_object_put(o);
        return r;
}

static int parse_header(const char *line, size_t len, struct journal_contents *c) {
        const size_t ml = strlen(JOURNAL_MAGIC);
        _cleanup_free_ char *copy = NULL;
        char *p, *tok, *save = NULL;
        uint64_t v;

        if (len <= ml || memcmp(line, JOURNAL_MAGIC, ml) != 0 || line[ml] != ' ')
                return -EBADMSG;
        copy = strndup(line + ml + 1, len - ml - 1);
        if (!copy)
                return -ENOMEM;
        p = copy;
        tok = strtok_r(p, " ", &save);
        if (!tok || util_parse_u64(tok, &v) < 0 || v > UINT_MAX)
                return -EBADMSG;
        c->version = (unsigned) v;
        if (c->version != JOURNAL_VERSION)
                return -EPROTONOSUPPORT;
        while ((tok = strtok_r(NULL, " ", &save))) {
                if (strncmp(tok, "boot_id=", 8) == 0)
                        snprintf(c->boot_id, sizeof(c->boot_id), "%s", tok + 8);
                /* other keys: informational (created_usec) or from a newer minor writer */
        }
        return 0;
}

static struct journal_entry *find_entry(struct journal_contents *c, uint64_t seq) {
        for (size_t i = 0; i < c->n_entries; i++)
                if (c->entries[i].begin.seq == seq)
                        return &c->entries[i];
        return NULL;
}

static void drop_entry(struct journal_contents *c, struct journal_entry *e) {
        size_t i = (size_t) (e - c->entries);

        memmove(c->entries + i, c->entries + i + 1, (c->n_entries - i - 1) * sizeof(*e));
        c->n_entries--;
}

static int entry_seq_cmp(const void *a, const void *b) {
        uint64_t x = ((const struct journal_entry *) a)->begin.seq, y = ((const struct journal_entry *) b)->begin.seq;
        return x < y ? -1 : x > y;
}

/* A line that does not parse: the last one is a torn append, any other is damage. */
static void line_damaged(struct journal_contents *c, const char *line, size_t len, unsigned lineno, bool last) {
        char hint[224];

        if (last) {
                /* Complete but damaged last line: a torn append whose
                 * block was padded (ext4 can show zeros after a crash). */
                c->n_torn++;
                warn_add(c, "journal line %u: damaged last record ignored", lineno);
                return;
        }
        damaged_hint(line, len, hint, sizeof(hint));
        c->n_corrupt++;
        warn_add(c, "journal line %u: damaged record skipped (bad checksum or JSON)%s%s%s", lineno,
                 hint[0] ? "; it reads, unverified: " : "", hint, hint[0] ? "" : "; nothing of it is readable");
}

/* A good record: BEGIN adds an entry, APPLIED marks it, RELEASED drops it. -ENOMEM or 0. */
static int record_take(struct journal_contents *c, const struct journal_record *rec, unsigned lineno,
                       size_t *allocated) {
        struct journal_entry *e;

        c->n_records++;
        if (rec->seq > c->max_seq)
                c->max_seq = rec->seq;

        e = find_entry(c, rec->seq);
        switch (rec->rec) {
        case JREC_BEGIN:
                if (e) {
                        c->n_corrupt++;
                        warn_add(c, "journal line %u: duplicate begin seq %" PRIu64 " skipped", lineno, rec->seq);
                        break;
                }
                if (c->n_entries >= *allocated) {
                        size_t na = *allocated ? *allocated * 2 : 8;
                        struct journal_entry *ne = realloc(c->entries, na * sizeof(*ne));
                        if (!ne)
                                return -ENOMEM;
                        c->entries = ne;
                        *allocated = na;
                }
                c->entries[c->n_entries++] = (struct journal_entry) { .begin = *rec };
                break;
        case JREC_APPLIED:
                if (!e) {
                        c->n_orphans++;
                        warn_add(c, "journal line %u: applied for unknown seq %" PRIu64, lineno, rec->seq);
                } else
                        e->applied = true;
                break;
        case JREC_RELEASED:
                if (!e) {
                        c->n_orphans++;
                        warn_add(c, "journal line %u: released for unknown seq %" PRIu64, lineno, rec->seq);
                } else
                        drop_entry(c, e);
                break;
        default:
                break;
        }
        return 0;
}

int journal_parse(const char *text, size_t size, struct journal_contents *ret) {
        struct journal_contents c = {};
        _cleanup_free_ struct journal_record *rec = NULL;
        size_t allocated = 0, pos;
        const char *nl;
        int r;

        nl = memchr(text, '\n', size);
        if (!nl) {
                /* Empty file or a torn header: no record can have been written after it. */
                if (size > 0) {
                        c.n_torn = 1;
                        warn_add(&c, "journal header incomplete (%zu bytes), treated as empty", size);
                }
                c.version = JOURNAL_VERSION;
                *ret = c;
                return 0;
        }
        r = parse_header(text, (size_t) (nl - text), &c);
        if (r < 0) {
                unsigned version = c.version;
                journal_contents_clear(&c);
                ret->version = version;
                return r;
        }

        rec = malloc(sizeof(*rec));
        if (!rec) {
                journal_contents_clear(&c);
                return -ENOMEM;
        }

        pos = (size_t) (nl - text) + 1;
        unsigned lineno = 1;
        while (pos < size) {
                const char *line = text + pos;
                size_t len;
                bool complete;
                char unknown[48] = "";

                lineno++;
                nl = memchr(line, '\n', size - pos);
                complete = nl != NULL;
                len = complete ? (size_t) (nl - line) : size - pos;
                pos += len + (complete ? 1 : 0);
                bool last = pos >= size;

                if (!complete) {
                        /* Crash in the middle of an append: ignore it, keep the rest. */
                        c.n_torn++;
                        warn_add(&c, "journal line %u: incomplete last record (%zu bytes) ignored", lineno, len);
                        break;
                }
                if (len == 0)
                        continue;

                r = parse_line(line, len, rec, unknown, sizeof(unknown));
                if (r == -ENOMEM) {
                        journal_contents_clear(&c);
                        return r;
                }
                if (r < 0) {
                        line_damaged(&c, line, len, lineno, last);
                        continue;
                }
                if (r > 0) {
                        c.n_unknown++;
                        warn_add(&c, "journal line %u: unknown record type \"%s\" skipped", lineno, unknown);
                        continue;
                }

                r = record_take(&c, rec, lineno, &allocated);
                if (r < 0) {
                        journal_contents_clear(&c);
                        return r;
                }
        }

        /* Restore goes newest first by this order, so it must be seq order
         * even when a damaged or hand-made file lists records out of it. */
        qsort_safe(c.entries, c.n_entries, sizeof(*c.entries), entry_seq_cmp);
        *ret = c;
        return 0;
}

int journal_read(const char *path, struct journal_contents *ret) {
        _cleanup_free_ char *text = NULL;
        _cleanup_close_ int fd = -1;
        size_t size;
        struct stat st;
        ssize_t n;
        int r;

        /* Not through a symlink: the runtime dir is ours, a link in it is not. */
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EBADMSG;
        /* A journal larger than the limit is read up to it: what it holds
         * there is restored; the record cut at the limit reads as torn. */
        text = malloc(JOURNAL_READ_MAX + 1);
        if (!text)
                return -ENOMEM;
        n = util_read_fd_into(fd, text, JOURNAL_READ_MAX + 1);
        if (n < 0)
                return (int) n;
        size = (size_t) n;
        r = journal_parse(text, size, ret);
        if (r >= 0 && (uint64_t) st.st_size > JOURNAL_READ_MAX)
                ret->too_large = (uint64_t) st.st_size;   /* the applier says so, and keeps the file */
        return r;
}

/* ---- writing ---- */

int journal_new(const char *dir, const char *boot_id, struct journal **ret) {
        struct journal *j;

        j = calloc(1, sizeof(*j));
        if (!j)
                return -ENOMEM;
        j->fd = -1;
        j->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (j->dir_fd < 0) {
                int r = -errno;
                free(j);
                return r;
        }
        snprintf(j->boot_id, sizeof(j->boot_id), "%s", boot_id ? boot_id : "");
        if (asprintf(&j->dir, "%s", dir) < 0 ||
            asprintf(&j->path, "%s/" JOURNAL_FILE, dir) < 0 ||
            asprintf(&j->tmp_path, "%s/" JOURNAL_FILE ".tmp", dir) < 0) {
                journal_free(j);
                return -ENOMEM;
        }
        *ret = j;
        return 0;
}

struct journal *journal_free(struct journal *j) {
        if (!j)
                return NULL;
        if (j->fd >= 0)
                close(j->fd);
        if (j->dir_fd >= 0)
                close(j->dir_fd);
        free(j->dir);
        free(j->path);
        free(j->tmp_path);
        free(j);
        return NULL;
}

const char *journal_path(const struct journal *j) {
        return j->path;
}

uint64_t journal_size(const struct journal *j) {
        return j->size;
}

static int write_all(int fd, const char *buf, size_t len) {
        while (len > 0) {
                ssize_t n = write(fd, buf, len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        return -EIO;
                buf += n;
                len -= (size_t) n;
        }
        return 0;
}

static int write_record_line(int fd, const struct journal_record *r, size_t *ret_len) {
        _cleanup_free_ char *line = NULL;
        size_t len;
        int k;

        k = journal_format_record(r, &line);
        if (k < 0)
                return k;
        len = strlen(line);
        line[len] = '\n';     /* replaces the NUL: written as one buffer below */
        k = write_all(fd, line, len + 1);
        line[len] = '\0';
        if (k < 0)
                return k;
        if (ret_len)
                *ret_len = len + 1;
        return 0;
}

int journal_rewrite(struct journal *j, const struct journal_entry *entries, size_t n) {
        _cleanup_close_ int fd = -1;
        struct timespec ts;
        char header[160];
        struct stat st;
        int r;

        /* A leftover temp file (a crash between open and rename, or anything
         * else someone put there, a symlink included) is replaced, never
         * followed: unlink it, then create ours exclusively. */
        if (unlinkat(j->dir_fd, JOURNAL_FILE ".tmp", 0) < 0 && errno != ENOENT)
                return -errno;
        fd = openat(j->dir_fd, JOURNAL_FILE ".tmp", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        clock_gettime(CLOCK_REALTIME, &ts);
        snprintf(header, sizeof(header), JOURNAL_MAGIC " %d boot_id=%s created_usec=%" PRIu64 "\n",
                 JOURNAL_VERSION, j->boot_id[0] ? j->boot_id : "-",
                 (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000);
        r = write_all(fd, header, strlen(header));
        for (size_t i = 0; r >= 0 && i < n; i++) {
                struct journal_record rec = entries[i].begin;

                rec.rec = JREC_BEGIN;
                r = write_record_line(fd, &rec, NULL);
                if (r >= 0 && entries[i].applied) {
                        struct journal_record ap = { .rec = JREC_APPLIED, .seq = rec.seq };
                        r = write_record_line(fd, &ap, NULL);
                }
        }
        if (r >= 0 && fsync(fd) < 0)
                r = -errno;
        if (r >= 0 && renameat(j->dir_fd, JOURNAL_FILE ".tmp", j->dir_fd, JOURNAL_FILE) < 0)
                r = -errno;
        if (r < 0) {
                (void) unlinkat(j->dir_fd, JOURNAL_FILE ".tmp", 0);
                return r;
        }
        /* The file was renamed: appends go to the new one whatever the
         * directory's fsync says, or they would land in the unlinked old
         * file. */
        if (j->fd >= 0)
                close(j->fd);
        j->fd = openat(j->dir_fd, JOURNAL_FILE, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
        if (j->fd < 0)
                return -errno;
        if (fstat(j->fd, &st) < 0)
                return -errno;
        j->size = (uint64_t) st.st_size;
        /* The rename is durable only once the directory is. */
        if (fsync(j->dir_fd) < 0)
                return -errno;
        return 0;
}

int journal_append(struct journal *j, const struct journal_record *rec) {
        size_t len = 0;
        int r;

        if (j->fd < 0)
                return -EBADF;
        r = write_record_line(j->fd, rec, &len);
        if (r < 0) {
                /* Do not leave a partial line for the next append to glue onto. */
                (void) ftruncate(j->fd, (off_t) j->size);
                return r;
        }
        /* fdatasync: the data and the file size, which is all an append
         * needs. A record not known durable is taken back, like a partial
         * one: the change it announces is not made, and a record left in
         * the file would share its seq with the next BEGIN (the caller
         * spends a seq only on success). */
        if (fdatasync(j->fd) < 0) {
                r = -errno;
                (void) ftruncate(j->fd, (off_t) j->size);
                return r;
        }
        j->size += len;
        return 0;
}

int journal_move_aside(struct journal *j, char *ret_path, size_t size) {
        char name[64];
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        for (unsigned i = 0;; i++) {
                if (i == 0)
                        snprintf(name, sizeof(name), JOURNAL_FILE ".bad-%" PRIu64, (uint64_t) ts.tv_sec);
                else
                        snprintf(name, sizeof(name), JOURNAL_FILE ".bad-%" PRIu64 ".%u", (uint64_t) ts.tv_sec, i);
                /* Never replace an older bad journal: each is kept for the administrator. */
                if (renameat2(j->dir_fd, JOURNAL_FILE, j->dir_fd, name, RENAME_NOREPLACE) >= 0)
                        break;
                if (errno != EEXIST || i >= 100)
                        return -errno;
        }
        (void) fsync(j->dir_fd);
        if (j->fd >= 0) {
                close(j->fd);
                j->fd = -1;
        }
        j->size = 0;
        if (ret_path)
                snprintf(ret_path, size, "%s/%s", j->dir, name);
        return 0;
}
