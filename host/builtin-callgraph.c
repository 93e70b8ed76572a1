/* layerprof callgraph: placeholder until the command lands (same commit series). */
#include <stdio.h>

#include "host/builtin.h"

int cmd_callgraph(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "layerprof callgraph: not built yet\n");
	return LP_EXIT_FAILURE;
}
