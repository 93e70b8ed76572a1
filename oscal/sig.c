/* stub */
#include <unistd.h>
#include "oscal/suite.h"
static int one_x(struct suite_ctx *c, uint64_t *ns)
{
	uint64_t t0 = suite_now();
	getppid();
	*ns = suite_now() - t0;
	return 0;
}
const struct suite_def suite_sig[] = {
	{ "sig-stub", "getppid", "", "sig", "", "", SUITE_NOX, NULL, one_x, NULL, "stub" },
};
const size_t suite_sig_n = 1;
