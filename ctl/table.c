/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * affctl's text rendering: documents as "key: value" lines, arrays of
 * objects as tables fitted to the terminal (table.h says how).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "common/util.h"
#include "ctl/table.h"

/* A row narrower than this is no table; 80 is the width of a pipe. */
#define TABLE_WIDTH_DEFAULT 80
/* The narrowest a column without a view is cut to. */
#define TABLE_GENERIC_MIN 8
/* Two spaces between columns, as ps and systemctl list them. */
#define TABLE_GAP 2
#define ELLIPSIS "…"

int table_terminal_width(void) {
        const char *e = getenv("COLUMNS");
        struct winsize ws = {};
        int v;

        if (e && util_parse_int(e, &v) >= 0 && v > 0)
                return v;
        if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) >= 0 && ws.ws_col > 0)
                return ws.ws_col;
        return TABLE_WIDTH_DEFAULT;
}

const char *table_scalar(struct json_object *v, char *buf, size_t size) {
        if (!v)
                return "-";
        switch (json_object_get_type(v)) {
        case json_type_double:
                snprintf(buf, size, "%.2f", json_object_get_double(v));
                return buf;
        case json_type_string:
                return json_object_get_string(v);
        case json_type_array: {
                /* short arrays of scalars inline */
                size_t off = 0, n = json_object_array_length(v);
                buf[0] = '\0';
                for (size_t i = 0; i < n && off < size; i++) {
                        char b2[64];
                        int w = snprintf(buf + off, size - off, "%s%s", i ? "," : "",
                                         table_scalar(json_object_array_get_idx(v, i), b2, sizeof(b2)));
                        if (w < 0)
                                break;
                        off += (size_t) w;
                }
                return buf;
        }
        default:
                return json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN);
        }
}

/* Characters, not bytes: "…" and a UTF-8 comm are one column each. */
static int text_width(const char *s) {
        int n = 0;

        for (; *s; s++)
                n += ((unsigned char) *s & 0xC0) != 0x80;
        return n;
}

/* The bytes of the first n characters of s. */
static size_t text_prefix(const char *s, int n) {
        size_t i = 0;

        for (; s[i]; i++)
                if (((unsigned char) s[i] & 0xC0) != 0x80 && n-- == 0)
                        break;
        return i;
}

/* A copy fit for one line: control characters (a newline in a command
 * line, an escape in a comm) become '?'. */
static char *cell_dup(const char *s) {
        char *d = strdup(s);

        for (char *p = d; p && *p; p++)
                if ((unsigned char) *p < 0x20 || *p == 0x7f)
                        *p = '?';
        return d;
}

/* A column as laid out: its title, width and the text of every row. */
struct laid {
        const char *title;
        int width, min_width;
        bool right;
        char **cells;
};

static bool covered(const struct table_column *cols, const char *key) {
        for (const struct table_column *c = cols; c && c->title; c++) {
                const char *w = c->covers;
                size_t n = strlen(key);

                if (c->key && streq(c->key, key))
                        return true;
                while (w && (w = strstr(w, key))) {
                        if ((w == c->covers || w[-1] == ' ') && (w[n] == ' ' || w[n] == '\0'))
                                return true;
                        w += n;
                }
        }
        return false;
}

static int laid_add(struct laid *l, size_t *n, size_t max, const char *title, int min_width, bool right,
                    size_t rows) {
        if (*n >= max)
                return -E2BIG;
        l[*n] = (struct laid) { .title = title, .min_width = min_width, .right = right,
                                .width = text_width(title) };
        l[*n].cells = calloc(rows + 1, sizeof(char *));
        if (!l[*n].cells)
                return -ENOMEM;
        (*n)++;
        return 0;
}

static void laid_cell(struct laid *l, size_t row, const char *text) {
        l->cells[row] = cell_dup(text ?: "");
        if (l->cells[row])
                l->width = MAX(l->width, text_width(l->cells[row]));
}

/* The fields rows have that the view does not show (all of them without a
 * view), in the order they first appear; objects are left to --json. */
static size_t rest_keys(struct json_object *rows, const struct table_column *view, const char **ret, size_t max) {
        size_t n = 0, nrows = json_object_array_length(rows);

        for (size_t i = 0; i < nrows; i++) {
                json_object_object_foreach(json_object_array_get_idx(rows, i), k, v) {
                        bool have = false;

                        if (json_object_is_type(v, json_type_object) || covered(view, k))
                                continue;
                        for (size_t c = 0; c < n && !have; c++)
                                have = streq(ret[c], k);
                        if (!have && n < max)
                                ret[n++] = k;
                }
        }
        return n;
}

/* Cut the widest column that may give way by one until the line fits in
 * avail or nothing can give way any more. */
static void fit(struct laid *l, size_t n, int avail) {
        int total = 0;

        for (size_t c = 0; c < n; c++)
                total += l[c].width + (c ? TABLE_GAP : 0);
        while (total > avail) {
                struct laid *widest = NULL;

                for (size_t c = 0; c < n; c++)
                        if (l[c].min_width > 0 && l[c].width > l[c].min_width &&
                            (!widest || l[c].width >= widest->width))
                                widest = &l[c];
                if (!widest)
                        return;
                widest->width--;
                total--;
        }
}

/* One cell: padded to width, or cut to it with an ellipsis; the last
 * column of a line is not padded on the right. */
static void put_cell(FILE *f, const char *s, int width, bool right, bool last) {
        int w = text_width(s);

        if (w > width) {
                if (width > 0)
                        fprintf(f, "%.*s%s", (int) text_prefix(s, width - 1), s, ELLIPSIS);
        } else if (right)
                fprintf(f, "%*s%s", width - w, "", s);
        else
                fprintf(f, "%s%*s", s, last ? 0 : width - w, "");
}

static void render_table(struct json_object *rows, const struct table_column *view, int indent,
                         const struct table_opts *opts, FILE *f) {
        size_t nrows = json_object_array_length(rows), ncol = 0, nrest;
        const char *rest[64];
        struct laid l[96];
        char buf[1024];

        for (const struct table_column *c = view; c && c->title; c++) {
                if (laid_add(l, &ncol, ELEMENTSOF(l), c->title, opts->wide ? 0 : c->min_width, c->right, nrows) < 0)
                        goto out;
                for (size_t i = 0; i < nrows; i++) {
                        struct json_object *row = json_object_array_get_idx(rows, i), *v = NULL;

                        if (c->cell)
                                laid_cell(&l[ncol - 1], i, c->cell(row, buf, sizeof(buf)));
                        else {
                                json_object_object_get_ex(row, c->key, &v);
                                laid_cell(&l[ncol - 1], i, table_scalar(v, buf, sizeof(buf)));
                        }
                }
        }
        nrest = !view || opts->wide ? rest_keys(rows, view, rest, ELEMENTSOF(rest)) : 0;
        for (size_t k = 0; k < nrest; k++) {
                if (laid_add(l, &ncol, ELEMENTSOF(l), rest[k], opts->wide ? 0 : TABLE_GENERIC_MIN, false, nrows) < 0)
                        goto out;
                for (size_t i = 0; i < nrows; i++) {
                        struct json_object *v = NULL;

                        json_object_object_get_ex(json_object_array_get_idx(rows, i), rest[k], &v);
                        laid_cell(&l[ncol - 1], i, table_scalar(v, buf, sizeof(buf)));
                }
        }
        if (!opts->wide)
                fit(l, ncol, opts->width - indent);

        fprintf(f, "%*s", indent, "");
        for (size_t c = 0; c < ncol; c++) {
                put_cell(f, l[c].title, l[c].width, l[c].right, c + 1 == ncol);
                fputs(c + 1 < ncol ? "  " : "\n", f);
        }
        for (size_t i = 0; i < nrows; i++) {
                fprintf(f, "%*s", indent, "");
                for (size_t c = 0; c < ncol; c++) {
                        put_cell(f, l[c].cells[i] ?: "", l[c].width, l[c].right, c + 1 == ncol);
                        fputs(c + 1 < ncol ? "  " : "\n", f);
                }
        }
out:
        for (size_t c = 0; c < ncol; c++) {
                for (size_t i = 0; i < nrows; i++)
                        free(l[c].cells[i]);
                free(l[c].cells);
        }
}

static bool is_table(struct json_object *a) {
        size_t n = json_object_array_length(a);

        if (n == 0)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!json_object_is_type(json_object_array_get_idx(a, i), json_type_object))
                        return false;
        return true;
}

static const struct table_column *view_for(const struct table_opts *opts, const char *key) {
        for (const struct table_view *v = opts->views; key && v && v->array; v++)
                if (streq(v->array, key))
                        return v->columns;
        return NULL;
}

static void render_value(struct json_object *o, int indent, const char *key, const struct table_opts *opts,
                         FILE *f) {
        char b[1024];

        if (json_object_is_type(o, json_type_object)) {
                if (key)
                        fprintf(f, "%*s%s:\n", indent, "", key);
                json_object_object_foreach(o, k, v)
                        render_value(v, key ? indent + 2 : indent, k, opts, f);
        } else if (json_object_is_type(o, json_type_array) && is_table(o)) {
                if (key)
                        fprintf(f, "%*s%s:\n", indent, "", key);
                render_table(o, view_for(opts, key), key ? indent + 2 : indent, opts, f);
        } else if (json_object_is_type(o, json_type_array) && json_object_array_length(o) == 0)
                fprintf(f, "%*s%s: (none)\n", indent, "", key ?: "");
        else
                fprintf(f, "%*s%s%s%s\n", indent, "", key ?: "", key ? ": " : "", table_scalar(o, b, sizeof(b)));
}

void table_render(struct json_object *doc, const struct table_opts *opts, FILE *f) {
        render_value(doc, 0, NULL, opts, f);
}
