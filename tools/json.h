/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A JSON writer for the tool's --json output (json.c): one document on one
 * line, members written in order.  A member inside an object names its key;
 * an element of an array, or the document itself, passes key NULL.
 */
#ifndef SLUICE_TOOLS_JSON_H
#define SLUICE_TOOLS_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define JW_DEPTH	16

struct jw {
	FILE *f;
	unsigned int depth;
	bool more[JW_DEPTH];	/* something already written at this depth */
};

void jw_init(struct jw *w, FILE *f);
void jw_obj(struct jw *w, const char *key);
void jw_obj_end(struct jw *w);
void jw_arr(struct jw *w, const char *key);
void jw_arr_end(struct jw *w);
/* v NULL writes null. */
void jw_str(struct jw *w, const char *key, const char *v);
void jw_u64(struct jw *w, const char *key, uint64_t v);
void jw_i64(struct jw *w, const char *key, int64_t v);
void jw_dbl(struct jw *w, const char *key, double v);
void jw_bool(struct jw *w, const char *key, bool v);
void jw_null(struct jw *w, const char *key);
/* End the document: a newline, flushed. */
void jw_done(struct jw *w);

#endif /* SLUICE_TOOLS_JSON_H */
