/* layerprof energy sources: the power sources this machine has.  Called
 * by the energy command's dispatcher (host/builtin-energy.c). */
#ifndef LP_HOST_ENERGY_SOURCES_H
#define LP_HOST_ENERGY_SOURCES_H

/* argv[0] is "sources".  Returns the exit code. */
int energy_sources_cmd(int argc, char **argv);

#endif
