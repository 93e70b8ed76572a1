/* layerprof coverage: placeholder until the command lands (same commit series). */
#include <stdio.h>

#include "host/builtin.h"

int cmd_coverage(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "layerprof coverage: not built yet\n");
	return LP_EXIT_FAILURE;
}
