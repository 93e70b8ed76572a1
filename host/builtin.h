/* The subcommands of the layerprof command, one file each. */
#ifndef LP_BUILTIN_H
#define LP_BUILTIN_H

/* Exit codes shared by the subcommands. */
enum lp_exit {
	LP_EXIT_OK = 0,
	LP_EXIT_FAILURE = 1, /* could not do the work (I/O, resources) */
	LP_EXIT_USAGE = 2,   /* bad command line */
	LP_EXIT_TRACE = 3,   /* trace missing, empty, not a trace, wrong version, damaged */
};

int cmd_record(int argc, char **argv);
int cmd_recover(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_tree(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_live(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_config(int argc, char **argv);
int cmd_snapshot(int argc, char **argv);
int cmd_memdiff(int argc, char **argv);
int cmd_serve(int argc, char **argv);

/* The directory of the running layerprof executable (for finding the
 * runtime library).  Returns "" when unknown. */
const char *layerprof_exe_dir(void);

#endif
