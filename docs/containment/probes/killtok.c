/* killtok [-n] TOKEN SECONDS: for SECONDS, scan /proc over and over; every process whose
 * command line contains TOKEN is stopped and killed (-n: only counted). Prints the count of
 * distinct pids seen. A fork chain renews its pid faster than one pgrep pass, so one pass can
 * miss it; a continuous scan does not. cc -O2 -o killtok killtok.c */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
static int seen[1 << 22];
int main(int argc, char **argv) {
    int count_only = argc > 1 && !strcmp(argv[1], "-n");
    const char *tok = argv[1 + count_only];
    struct timespec t0, t; clock_gettime(CLOCK_MONOTONIC, &t0);
    double secs = atof(argv[2 + count_only]); long distinct = 0;
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 >= secs) break;
        DIR *d = opendir("/proc"); struct dirent *e;
        while ((e = readdir(d))) {
            int pid = atoi(e->d_name); if (pid <= 1 || pid == getpid() || pid >= (1 << 22)) continue;
            char p[64], b[4096]; snprintf(p, sizeof p, "/proc/%d/cmdline", pid);
            FILE *f = fopen(p, "re"); if (!f) continue;
            size_t n = fread(b, 1, sizeof b - 1, f); fclose(f);
            for (size_t i = 0; i < n; i++) if (!b[i]) b[i] = ' ';
            b[n] = 0;
            if (strstr(b, tok) && !strstr(b, "killtok")) {
                if (!seen[pid]) { seen[pid] = 1; distinct++; }
                if (!count_only) { kill(pid, SIGSTOP); kill(pid, SIGKILL); }
            }
        }
        closedir(d);
    }
    printf("%ld\n", distinct);
    return 0;
}
