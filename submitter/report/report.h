/* Writers of a loaded campaign (report_data.h): `kb-submit report` in four formats and
 * `kb-submit export`. Each writes to `out` (borrowed) and returns KB_OK, KB_EIO (a write
 * failed) or KB_ENOMEM. The formats are described in docs/report.md. */
#ifndef KB_SUBMITTER_REPORT_H
#define KB_SUBMITTER_REPORT_H

#include <jansson.h>
#include <stdio.h>

#include "fastp.h"
#include "report_data.h"

#define KB_FASTP_ROWS 16 /* rows a report's fast_p table holds at most: levels, none, all */

struct kb_error;

/* One JSON document: campaign, ledger, tier funnel, and per task its ranked candidates with
 * their sources and evaluations (report_text.c). */
int kb__report_write_json(const struct kb_report *r, FILE *out, struct kb_error *err);
/* One CSV row per candidate, RFC 4180 quoting, header first (report_text.c). */
int kb__report_write_csv(const struct kb_report *r, FILE *out, struct kb_error *err);
/* Markdown: the funnel and a leaderboard table per task (report_text.c). */
int kb__report_write_md(const struct kb_report *r, FILE *out, struct kb_error *err);
/* One self-contained HTML file with Chart.js inlined (report_html.c). */
int kb__report_write_html(const struct kb_report *r, FILE *out, struct kb_error *err);
/* JSON Lines with the AI CUDA Engineer archive's columns, one line per evaluated candidate at
 * its best tier (export.c). */
int kb__export_write_jsonl(const struct kb_report *r, FILE *out, struct kb_error *err);

/* Helpers shared by the writers (report_text.c). */
/* A number, or JSON null when it is NaN or infinite (new reference). */
json_t *kb__json_num(double v);
/* The report as a JSON object (new reference; NULL on ENOMEM). With `sources`, candidate
 * sources, compile logs and task texts are included. */
json_t *kb__report_json(const struct kb_report *r, int sources);
/* The HTML entity standing for `c` ("&lt;" for '<'; & < > always, and with `quotes` also
 * '"' and '\'', for attribute values), or NULL when `c` stands for itself (a static string). */
const char *kb__html_entity(char c, int quotes);
/* The campaign's fast_p table against torch eager (`compile` 0) or torch.compile: per task
 * kb__rep_torch_speedup() and its level, through kb__fastp_table() into `rows` (caller-owned,
 * `max`). Returns the rows written, or -1 when out of memory. */
int kb__report_fastp(const struct kb_report *r, int compile, struct kb_fastp_row *rows, int max);
/* Candidates per tier: how many were evaluated at that tier, and how many passed there. */
void kb__report_funnel(const struct kb_report *r, long evaluated[], long passed[]);

#endif
