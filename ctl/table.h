/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * affctl's text form of the daemon's JSON documents: members as
 * "key: value" lines, arrays of objects as tables that fit the terminal.
 * One renderer for every verb; what differs per verb is a view (the
 * columns an operator reads first, ctl/views.c). An array without a view
 * gets a column per key.
 *
 * Fitting: each column starts as wide as its widest cell; while the line
 * is too long, the widest column that may be shortened (min_width > 0) is
 * cut by one, so a long command line or reason gives way before a short
 * state does. A cut cell ends in "…". Widths count UTF-8 characters.
 * --wide (wide) cuts nothing and adds every field the view leaves out.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <json-c/json.h>

struct table_column {
        const char *title;
        /* the field shown as is (a scalar), when cell is NULL */
        const char *key;
        /* the text of one row's cell, built in buf or pointing into row */
        const char *(*cell)(struct json_object *row, char *buf, size_t size);
        /* the fields cell shows, space-separated: --wide does not repeat them */
        const char *covers;
        /* 0: never shortened (states, numbers); else the narrowest it may be cut to */
        int min_width;
        bool right;                /* right-aligned: numbers */
};

/* The columns of the rows under one member of a document. */
struct table_view {
        const char *array;         /* the member holding the rows ("pairs"); NULL ends a list */
        const struct table_column *columns;   /* ends with a NULL title */
};

struct table_opts {
        int width;                 /* the terminal's columns */
        bool wide;                 /* every field, nothing cut */
        const struct table_view *views;       /* may be NULL */
};

/* The width to fit: $COLUMNS if a positive number, else the terminal of
 * stdout (TIOCGWINSZ), else 80 (a pipe, a file). */
int table_terminal_width(void);

/* Print doc (an object, or any JSON value) to f. */
void table_render(struct json_object *doc, const struct table_opts *opts, FILE *f);

/* A scalar as text: doubles with two decimals, strings as they are, short
 * arrays of scalars joined by commas, NULL as "-". buf holds the result
 * unless it is the string itself. */
const char *table_scalar(struct json_object *v, char *buf, size_t size);
