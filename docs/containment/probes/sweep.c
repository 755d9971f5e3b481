/* sweep CMD...: hx's exit cleanup (src/process/cleanup.rs end_all) ported to C for a fair
 * race: child subreaper; run CMD and wait; then loop { scan /proc; descendants by ppid;
 * killpg every group but ours; kill every pid; sleep 5 ms } until none or 2 s; reap. */
#define _GNU_SOURCE
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
typedef struct { int pid, ppid, pgrp; char st; } P;
static P ps[65536]; static int n;
static void scan(void) {
    n = 0; DIR *d = opendir("/proc"); struct dirent *e; char path[64], buf[512];
    while ((e = readdir(d)) && n < 65536) {
        int pid = atoi(e->d_name); if (pid <= 0) continue;
        snprintf(path, sizeof path, "/proc/%d/stat", pid);
        FILE *f = fopen(path, "re"); if (!f) continue;
        size_t len = fread(buf, 1, sizeof buf - 1, f); fclose(f); buf[len] = 0;
        char *r = strrchr(buf, ')'); if (!r) continue;
        P p = { pid, 0, 0, 0 }; if (sscanf(r + 1, " %c %d %d", &p.st, &p.ppid, &p.pgrp) == 3) ps[n++] = p;
    }
    closedir(d);
}
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
int main(int argc, char **argv) {
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    pid_t c = fork(); if (c == 0) { execvp(argv[1], argv + 1); _exit(127); }
    for (;;) { pid_t w = waitpid(-1, NULL, 0); if (w == c || w < 0) break; }   /* hx reaps orphans on SIGCHLD meanwhile */
    int me = getpid(), own = getpgrp(), live = 0, rounds = 0; double deadline = now() + 2.0;
    static int mark[65536], q[65536];
    for (;;) {
        scan(); rounds++;
        /* descendants of me */
        int qn = 0, qh = 0; live = 0; q[qn++] = me;
        memset(mark, 0, sizeof(int) * n);
        while (qh < qn) { int parent = q[qh++]; for (int i = 0; i < n; i++) if (!mark[i] && ps[i].ppid == parent) { mark[i] = 1; q[qn++] = ps[i].pid; } }
        for (int i = 0; i < n; i++) if (mark[i] && ps[i].st != 'Z' && ps[i].st != 'X') live++;
        if (!live || now() >= deadline) break;
        for (int i = 0; i < n; i++) if (mark[i] && ps[i].st != 'Z' && ps[i].pgrp > 1 && ps[i].pgrp != own) killpg(ps[i].pgrp, SIGKILL);
        for (int i = 0; i < n; i++) if (mark[i] && ps[i].st != 'Z') kill(ps[i].pid, SIGKILL);
        usleep(5000);
    }
    while (waitpid(-1, NULL, WNOHANG) > 0) {}
    fprintf(stderr, "sweep: %d rounds, %d descendants alive when it stopped\n", rounds, live);
    return 0;
}
