/* Signals: the handler on_signal runs on the interrupted thread's stack, in
 * the middle of sender (raise delivers before it returns), and calls
 * in_handler.  Three signals: SIGUSR1, SIGALRM, SIGUSR1. */
#include "prog.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

static volatile sig_atomic_t handled;

COUNTED void in_handler(int sig)
{
	(void)sig;
	handled++;
}

COUNTED void on_signal(int sig)
{
	in_handler(sig);
}

COUNTED void sender(void)
{
	raise(SIGUSR1);
	raise(SIGALRM);
	raise(SIGUSR1);
}

int main(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	if (sigaction(SIGUSR1, &sa, NULL) || sigaction(SIGALRM, &sa, NULL)) {
		perror("signals: sigaction");
		return 1;
	}
	sender();
	printf("signals: handled %d\n", (int)handled);
	return handled == 3 ? 0 : 1;
}
