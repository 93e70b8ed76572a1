/* The set of live heap blocks kept by the interposers with the keep-alive
 * option (LAYERPROF_MEM_KEEPALIVE=1), so that a release of a block that is
 * not live (never allocated, already released, an interior pointer) is
 * recorded and kept from libc instead of crashing the program.  Without
 * the option no set exists and nothing here runs.
 *
 * Lock-free (open addressing with linear probing; a block's slot never
 * moves), so usable from any thread and from a signal handler that
 * interrupted another operation of the set.  Fixed size, mmap'd: when a
 * block finds no room the set gives up (memlive_overflowed), after which
 * every release is passed to libc as without the option. */
#ifndef LP_MEMLIVE_H
#define LP_MEMLIVE_H

#include <stdbool.h>
#include <stdint.h>

/* Slots in the set (a power of two); the live blocks it can hold is about
 * half of that before probes get long. */
#define MEMLIVE_SLOTS (1u << 21)
/* An insert that probes this far gives up: the set is too full. */
#define MEMLIVE_PROBE_MAX 4096u

/* Maps the set.  Returns 0 or -ENOMEM (then the option is off). */
int memlive_init(void);
/* True once memlive_init succeeded and the set has not overflowed. */
bool memlive_active(void);
/* True when a block found no room: the set no longer knows every block. */
bool memlive_overflowed(void);
/* A block was returned to the program (p not NULL).  Inserting a block
 * that is in the set already does nothing. */
void memlive_insert(uintptr_t p);
/* The program releases p: removes it and returns true when it was live;
 * false when it was not (the release is illegal). */
bool memlive_remove(uintptr_t p);

#endif
