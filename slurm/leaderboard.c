/* Leaderboard table from summary.json (see leaderboard.h). */
#include "leaderboard.h"

#include <jansson.h>
#include <math.h>
#include <string.h>

#include "kb/cli.h"
#include "kb/error.h"

static const char *str(json_t *o, const char *key) {
  const char *s = json_string_value(json_object_get(o, key));
  return s ? s : "";
}

/* The candidate column's width: the longest name among the rows shown, 9 to NAME_MAX_W. */
enum { NAME_MAX_W = 40 };
static int name_width(json_t *tasks, int top) {
  int w = 9;
  size_t i, j;
  json_t *t, *row;
  json_array_foreach(tasks, i, t) {
    json_array_foreach(json_object_get(t, "leaderboard"), j, row) {
      if (top > 0 && (int)j >= top)
        break;
      int n = (int)strlen(str(row, "name"));
      if (n > w)
        w = n;
    }
  }
  return w > NAME_MAX_W ? NAME_MAX_W : w;
}

static void print_time(FILE *out, double us) {
  if (us >= 1e6)
    fprintf(out, "%9.3f s ", us / 1e6);
  else if (us >= 1e3)
    fprintf(out, "%9.3f ms", us / 1e3);
  else
    fprintf(out, "%9.3f us", us);
}

int kb__leaderboard_print(const char *summary_path, FILE *out, int top, struct kb_error *err) {
  json_error_t jerr;
  json_t *root = json_load_file(summary_path, JSON_REJECT_DUPLICATES, &jerr);
  if (root == NULL)
    return kb_error_set(err, jerr.line > 0 ? KB_EPARSE : KB_EIO, "%s:%d:%d: %s", summary_path,
                        jerr.line, jerr.column, jerr.text);
  json_t *tasks = json_object_get(root, "tasks");
  json_t *gpu = json_object_get(root, "gpu_ms");
  fprintf(out, "campaign %s: %s (%s)\n", str(root, "campaign"), str(root, "state"),
          str(root, "reason"));
  /* in the campaign file's unit, budget.gpu_seconds (CPU seconds on the host backend) */
  fprintf(out, "budget: %.3f of %.3f gpu_seconds spent\n",
          (double)json_integer_value(json_object_get(gpu, "spent")) / 1000.0,
          (double)json_integer_value(json_object_get(gpu, "total")) / 1000.0);
  int nw = name_width(tasks, top);
  char name[NAME_MAX_W + 1];
  size_t i;
  json_t *t;
  json_array_foreach(tasks, i, t) {
    fprintf(out, "\n%s (baseline: %s, %lld evaluations)\n", str(t, "task"),
            json_is_string(json_object_get(t, "baseline")) ? str(t, "baseline") : "none",
            (long long)json_integer_value(json_object_get(t, "evaluations")));
    fprintf(out, "  %-4s %-*s %-9s %-14s %12s %8s  %s\n", "rank", nw, "candidate", "generator",
            "status", "median", "speedup", "tier");
    size_t j;
    json_t *row;
    json_array_foreach(json_object_get(t, "leaderboard"), j, row) {
      if (top > 0 && (int)j >= top)
        break;
      kb_cli_fit_name(str(row, "name"), nw, name, sizeof name);
      fprintf(out, "  %-4lld %-*s %-9s %-14s ",
              (long long)json_integer_value(json_object_get(row, "rank")), nw, name,
              str(row, "generator"), str(row, "status"));
      json_t *median = json_object_get(row, "median_us");
      if (json_is_number(median))
        print_time(out, json_number_value(median));
      else
        fprintf(out, "%12s", "-");
      json_t *speedup = json_object_get(row, "speedup");
      if (json_is_number(speedup))
        fprintf(out, " %7.2fx", json_number_value(speedup));
      else
        fprintf(out, " %8s", "-");
      fprintf(out, "  %s\n", str(row, "tier_name"));
    }
  }
  fprintf(out, "\nresults:\n");
  json_array_foreach(tasks, i, t) fprintf(out, "  %s\n", str(t, "file"));
  json_decref(root);
  return KB_OK;
}
