/* layerprof estimate's recorder calibration (docs/estimate.md, "The
 * recorder's cost"): the recorder's cost per traced call outside the
 * call's measured interval, measured once per machine and recording mode
 * by recording the call suite itself. */
#ifndef LP_HOST_ESTIMATE_RECORDER_H
#define LP_HOST_ESTIMATE_RECORDER_H

#include <stdbool.h>
#include <stddef.h>

/* A recorder calibration file, as read. */
struct recorder_cal {
	char mode[16]; /* "syscalls" (record --syscalls) or "libcalls" (--dynamic --libcalls --syscalls) */
	char host[128], arch[32];
	double overhead_sys_ns, overhead_lib_ns;
};

/* Runs the recordings (layerprof record ... -- layerprof-oscal) and
 * writes the calibration to outpath (stdout when NULL).  keep: a directory
 * for the trace and the suite's output, kept (NULL: a temporary one,
 * removed).  Prints its errors; returns an LP_EXIT_* code. */
int recorder_calibrate(bool libcalls, unsigned reps, const char *keep, const char *outpath);

/* Reads a recorder calibration file.  Returns 0, or a negative errno with
 * err saying what is wrong (one line, naming the file). */
int recorder_cal_read(const char *path, struct recorder_cal *rc, char *err, size_t errlen);

#endif
