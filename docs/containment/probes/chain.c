/* chain TOKEN [WIDTH]: a fork-and-exit chain; each generation calls setsid, forks WIDTH
 * children (default 1) and exits. argv[1] carries a token for pgrep -f. */
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int width = argc > 2 ? atoi(argv[2]) : 1;
    for (;;) {
        int forked = 0;
        for (int i = 0; i < width; i++) { pid_t p = fork(); if (p == 0) { setsid(); forked = -1; break; } if (p > 0) forked++; }
        if (forked >= 0) _exit(0);
    }
}
