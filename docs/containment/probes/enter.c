/* enter PID [-l] -- CMD...: the per-call half of the recommended design. Joins the
 * namespaces of the run's sandbox (the process PID lives in: user, mount, net, ipc, pid)
 * with one setns(pidfd, ...), forks so the child lands in the PID namespace, and there drops
 * every capability, sets no_new_privs, optionally enters Landlock (-l: scopes only) and
 * execs CMD in the caller's working directory. The parent relays the exit status.
 * -U DIR: before joining, read /proc/net/unix (this network namespace's list) and, once in the
 * run's mount namespace, bind /dev/null over each pathname socket not under DIR, so sockets
 * made since the sandbox started are covered too.
 * cc -O2 -o enter enter.c */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int pid = atoi(argv[1]), ll = 0, i = 2; const char *keep = NULL;
    for (; i < argc && strcmp(argv[i], "--"); i++) { if (!strcmp(argv[i], "-l")) ll = 1; else if (!strcmp(argv[i], "-U")) keep = argv[++i]; }
    static char *socks[512]; int nsocks = 0;
    if (keep) {
        FILE *f = fopen("/proc/net/unix", "re"); char line[4500];
        if (f && fgets(line, sizeof line, f))
            while (nsocks < 512 && fgets(line, sizeof line, f)) {
                char *p = line; for (int k = 0; k < 7 && p; k++) { p = strchr(p, ' '); while (p && *p == ' ') p++; }
                if (!p || *p != '/') continue;
                p[strcspn(p, "\n")] = 0;
                size_t n = strlen(keep);
                if (!strncmp(p, keep, n) && (p[n] == '/' || !p[n])) continue;
                socks[nsocks++] = strdup(p);
            }
        if (f) fclose(f);
    }
    char cwd[4096]; if (!getcwd(cwd, sizeof cwd)) return 125;
    int pfd = syscall(SYS_pidfd_open, pid, 0);
    if (pfd < 0) { perror("pidfd_open"); return 125; }
    if (setns(pfd, CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWPID)) { perror("setns"); return 125; }
    for (int k = 0; k < nsocks; k++) {   /* in the run's mount namespace now, with its capabilities */
        struct stat st;
        if (lstat(socks[k], &st) == 0 && S_ISSOCK(st.st_mode) && mount("/dev/null", socks[k], NULL, MS_BIND, NULL) == 0)
            mount(NULL, socks[k], NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL);
    }
    if (chdir(cwd)) { perror("chdir"); return 125; }
    pid_t c = fork();
    if (c == 0) {
        setsid();
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        for (int k = 0; k <= 63; k++) prctl(PR_CAPBSET_DROP, k, 0, 0, 0);
        struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
        struct __user_cap_data_struct d[2] = { { 0 } };
        syscall(SYS_capset, &h, d);
        prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
        if (ll) {
            uint64_t a[3] = { 0, 0, 3 };
            int rs = syscall(SYS_landlock_create_ruleset, a, sizeof a, 0);
            if (rs < 0 || syscall(SYS_landlock_restrict_self, rs, 0)) { perror("landlock"); _exit(125); }
        }
        execvp(argv[i + 1], argv + i + 1);
        perror("exec"); _exit(127);
    }
    int st; waitpid(c, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
