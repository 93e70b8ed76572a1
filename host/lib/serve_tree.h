/* The web UI server's names for the call trees: the server builds the same
 * trees as tree and the reports (calltree.h).  These names remain for the
 * API code written against them; new code uses calltree's. */
#ifndef LP_SERVE_TREE_H
#define LP_SERVE_TREE_H

#include "host/lib/calltree.h"

#define servetree calltree
#define servetree_node calltree_node
#define servetree_stream calltree_stream
#define servetree_children calltree_children
#define SERVETREE_NODES_MAX CALLTREE_NODES_MAX
#define SERVETREE_SYSCALL_KEY CALLTREE_SYSCALL_KEY
#define SERVETREE_IS_SYSCALL CALLTREE_IS_SYSCALL

#endif
