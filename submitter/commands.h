/* The kb-submit subcommands. Each prints its own output and returns a process exit code
 * (enum kb_exit); errors go to stderr as "kb-submit: <message>". */
#ifndef KB_SUBMITTER_COMMANDS_H
#define KB_SUBMITTER_COMMANDS_H

struct kb_submit_opts {
  const char *redis; /* --redis address or NULL for $KB_REDIS (borrowed) */
  int json;          /* --json: machine-readable output on stdout */
  int quiet;         /* --quiet: no progress lines */
};

/* Validates `campaign_path` and every task bundle; writes nothing anywhere. */
int kb_cmd_validate(const struct kb_submit_opts *o, const char *campaign_path);
/* Validates, then registers the campaign in Redis and enqueues its seeds. */
int kb_cmd_submit(const struct kb_submit_opts *o, const char *campaign_path);
/* Prints the state, queue, ledger and runners of campaign `id_or_path`. */
int kb_cmd_status(const struct kb_submit_opts *o, const char *id_or_path);
/* Drains campaign `id_or_path`: no new claims; evaluations under way finish and are recorded,
 * then the scheduler ends the campaign. */
int kb_cmd_drain(const struct kb_submit_opts *o, const char *id_or_path);
/* Cancels campaign `id_or_path`: no further claims; running leases end or expire. */
int kb_cmd_cancel(const struct kb_submit_opts *o, const char *id_or_path);

#endif
