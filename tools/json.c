// SPDX-License-Identifier: BSD-2-Clause
/*
 * The JSON writer behind --json (json.h): commas and nesting kept per
 * depth, strings escaped so any byte string comes out as valid JSON (bytes
 * past ASCII are written as \u00XX, so a process name that is not UTF-8
 * still parses).
 */
#include <math.h>
#include <string.h>

#include "json.h"

void jw_init(struct jw *w, FILE *f)
{
	memset(w, 0, sizeof(*w));
	w->f = f;
}

static void put_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p == '\n')
			fputs("\\n", f);
		else if (*p == '\t')
			fputs("\\t", f);
		else if (*p < 0x20 || *p >= 0x7f)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

/* The comma before a member or element, and its key. */
static void member(struct jw *w, const char *key)
{
	if (w->more[w->depth])
		fputc(',', w->f);
	w->more[w->depth] = true;
	if (key) {
		put_string(w->f, key);
		fputc(':', w->f);
	}
}

static void open_(struct jw *w, const char *key, char c)
{
	member(w, key);
	fputc(c, w->f);
	if (w->depth + 1 < JW_DEPTH)
		w->depth++;
	w->more[w->depth] = false;
}

static void close_(struct jw *w, char c)
{
	fputc(c, w->f);
	if (w->depth)
		w->depth--;
}

void jw_obj(struct jw *w, const char *key) { open_(w, key, '{'); }
void jw_obj_end(struct jw *w) { close_(w, '}'); }
void jw_arr(struct jw *w, const char *key) { open_(w, key, '['); }
void jw_arr_end(struct jw *w) { close_(w, ']'); }

void jw_str(struct jw *w, const char *key, const char *v)
{
	member(w, key);
	if (v)
		put_string(w->f, v);
	else
		fputs("null", w->f);
}

void jw_u64(struct jw *w, const char *key, uint64_t v)
{
	member(w, key);
	fprintf(w->f, "%llu", (unsigned long long)v);
}

void jw_i64(struct jw *w, const char *key, int64_t v)
{
	member(w, key);
	fprintf(w->f, "%lld", (long long)v);
}

void jw_dbl(struct jw *w, const char *key, double v)
{
	member(w, key);
	/* JSON has no NaN or infinity. */
	if (isfinite(v))
		fprintf(w->f, "%.6g", v);
	else
		fputs("null", w->f);
}

void jw_bool(struct jw *w, const char *key, bool v)
{
	member(w, key);
	fputs(v ? "true" : "false", w->f);
}

void jw_null(struct jw *w, const char *key)
{
	member(w, key);
	fputs("null", w->f);
}

void jw_done(struct jw *w)
{
	fputc('\n', w->f);
	fflush(w->f);
}
