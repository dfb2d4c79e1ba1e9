/* Logging for the long-running processes (scheduler, runner, launcher).
 *
 * Lines go to stderr as "<time> <program>[<pid>] <level>: <message>", the time being UTC
 * HH:MM:SS.mmm and the message cut at 1023 bytes. The level comes from the KB_LOG environment
 * variable (debug, info, warn, error, off; default info; another value keeps the default).
 * This is for operational messages; functions still report failures through their return code
 * and struct kb_error.
 */
#ifndef KB_LOG_H
#define KB_LOG_H

enum kb_log_level { KB_LOG_DEBUG, KB_LOG_INFO, KB_LOG_WARN, KB_LOG_ERROR, KB_LOG_OFF };

/* Sets the program name shown in each line (borrowed; must outlive logging) and reads KB_LOG. */
void kb_log_init(const char *program);
/* Sets the least level written (enum kb_log_level; KB_LOG_OFF writes nothing). */
void kb_log_set_level(int level);
/* 1 when a line at `level` would be written, else 0. */
int kb_log_enabled(int level);
/* Writes one line at `level` (KB_LOG_DEBUG..KB_LOG_ERROR) when enabled; printf-style. */
void kb_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define kb_debug(...) kb_log(KB_LOG_DEBUG, __VA_ARGS__)
#define kb_info(...) kb_log(KB_LOG_INFO, __VA_ARGS__)
#define kb_warn(...) kb_log(KB_LOG_WARN, __VA_ARGS__)
#define kb_errlog(...) kb_log(KB_LOG_ERROR, __VA_ARGS__)

#endif
