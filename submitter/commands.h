/* The kb-submit subcommands. Each prints its own output and returns a process exit code
 * (enum kb_exit); errors go to stderr as "kb-submit: <message>". */
#ifndef KB_SUBMITTER_COMMANDS_H
#define KB_SUBMITTER_COMMANDS_H

struct kb_submit_opts {
  const char *redis; /* --redis address or NULL for $KB_REDIS (borrowed) */
  int json;          /* --json: machine-readable output on stdout */
  int quiet;         /* --quiet: no progress lines */
  double interval;   /* watch: --interval, seconds between refreshes */
  const char *out;   /* report, export: --out FILE, NULL = stdout (borrowed) */
  const char *format; /* report: --format html|md|csv|json, NULL = from --out, else html */
  const char *results; /* report, export: --results DIR, the campaign's results folder */
  int top;           /* report (html, md): --top N candidates per task; 0 = all */
  const char *tier;  /* export: --tier NAME, only that tier's evaluations; NULL = each
                        candidate's best tier (borrowed) */
};

/* Validates `campaign_path` and every task bundle; writes nothing anywhere. */
int kb__cmd_validate(const struct kb_submit_opts *o, const char *campaign_path);
/* Validates, then registers the campaign in Redis and enqueues its seeds. */
int kb__cmd_submit(const struct kb_submit_opts *o, const char *campaign_path);
/* Prints one progress snapshot of campaign `id_or_path`: state, items, the per-tier funnel,
 * budget per currency, runners alive, best speedup per task, ETA (see watch.h). */
int kb__cmd_status(const struct kb_submit_opts *o, const char *id_or_path);
/* Shows the progress of campaign `id_or_path` every `o->interval` seconds until it ends (exit
 * 0) or Ctrl-C (130): a screen redrawn in place on a terminal, timestamped lines otherwise,
 * JSON Lines with --json. */
int kb__cmd_watch(const struct kb_submit_opts *o, const char *id_or_path);
/* Writes the report of campaign `id_or_path` from its result files (report.h). */
int kb__cmd_report(const struct kb_submit_opts *o, const char *id_or_path);
/* Writes the campaign's evaluated candidates as JSON Lines (report.h). */
int kb__cmd_export(const struct kb_submit_opts *o, const char *id_or_path);
/* Drains campaign `id_or_path`: no new claims; evaluations under way finish and are recorded,
 * then the scheduler ends the campaign. */
int kb__cmd_drain(const struct kb_submit_opts *o, const char *id_or_path);
/* Cancels campaign `id_or_path`: no further claims; running leases end or expire. */
int kb__cmd_cancel(const struct kb_submit_opts *o, const char *id_or_path);

#endif
