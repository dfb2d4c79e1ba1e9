/* Clocks and sleeping, shared by every process. */
#ifndef KB_CLOCK_H
#define KB_CLOCK_H

/* Seconds on the monotonic clock, for durations and timeouts. */
double kb_now_mono(void);
/* Unix time in seconds (wall clock), for timestamps in results and logs. */
double kb_now_wall(void);
/* Sleeps `ms` milliseconds, resuming after signals that interrupt it (callers that must react to
 * a signal sleep in short slices and check their flag between them). */
void kb_sleep_ms(long ms);

#endif
