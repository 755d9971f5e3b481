/* pod: a prototype of the sandbox launcher this note recommends (NOT production code).
 * One process tree: launcher -> init (pid 1 of a new PID namespace) -> the command (pid 2).
 * Namespaces: user (own uid/gid mapped to itself), mount, pid, ipc, optionally net.
 * Mounts: everything read-only + nosuid + nodev, writable roots bound back read-write,
 * protected paths inside them bound read-only, a private /dev, a private /tmp, masked dirs,
 * a new /proc; then the command drops every capability, sets no_new_privs, and optionally
 * enters Landlock (scopes) and a seccomp filter.
 *
 * cc -O2 -o pod pod.c
 * pod [-w DIR]... [-m DIR]... [-p PATH]... [-R DIR]... [-s SOCK]... [-t] [-n] [-l] [-c] [-k] -- CMD...
 *   -w DIR  writable root          -m DIR  make DIR a mount point (cannot be renamed/removed)
 *   -p PATH read-only inside a writable root (missing: /dev/null is bound on the first
 *           missing component, so it cannot be created)
 *   -R DIR  hide DIR under an empty read-only tmpfs        -s SOCK  bind one socket back
 *   -t      private tmpfs on /tmp   -n  new network namespace with lo up
 *   -l      Landlock: fs writes outside -w refused + signal and abstract-unix scopes
 *   -c      seccomp: no IPv4/IPv6 sockets, no io_uring, native arch only
 *   -k      keep init alive after the command exits until all processes in the ns are gone
 *           (default: when the command exits, init exits and the kernel kills the rest)
 *   -U      bind /dev/null over every pathname socket /proc/net/unix lists (read before the
 *           network namespace is made) outside the writable roots and not given with -s
 *   -T      print setup timings (µs) to stderr
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAXN 32
static const char *W[MAXN], *M[MAXN], *P[MAXN], *R[MAXN], *S[MAXN];
static int nw, nm, np, nr, ns;
static int opt_tmp, opt_net, opt_ll, opt_sc, opt_keep, opt_T, opt_U;
static char *U[256]; static int nu;

struct mount_attr_ { uint64_t attr_set, attr_clr, propagation, userns_fd; };
#define MOUNT_ATTR_RDONLY_ 0x1
#define MOUNT_ATTR_NOSUID_ 0x2
#define MOUNT_ATTR_NODEV_ 0x4
#define AT_RECURSIVE_ 0x8000
#define OPEN_TREE_CLONE_ 1
#define MOVE_MOUNT_F_EMPTY_PATH_ 0x4

static void die(const char *what, const char *arg) {
    fprintf(stderr, "pod: %s %s: %s\n", what, arg ? arg : "", strerror(errno));
    _exit(125);
}
static long us(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1000000L + t.tv_nsec / 1000; }
static long t0;
#define MARK(s) do { if (opt_T) fprintf(stderr, "pod: %-22s %6ld us\n", s, us() - t0); } while (0)

static int clone_tree(const char *path, int rec) {
    int fd = syscall(SYS_open_tree, AT_FDCWD, path, OPEN_TREE_CLONE_ | O_CLOEXEC | (rec ? AT_RECURSIVE_ : 0));
    if (fd < 0) die("open_tree", path);
    return fd;
}
static void attach(int fd, const char *path) {
    if (syscall(SYS_move_mount, fd, "", AT_FDCWD, path, MOVE_MOUNT_F_EMPTY_PATH_)) die("move_mount", path);
    close(fd);
}
static void setattr(int dfd, const char *path, unsigned flags, uint64_t set) {
    struct mount_attr_ a = { .attr_set = set };
    if (syscall(SYS_mount_setattr, dfd, path, flags, &a, sizeof a)) die("mount_setattr", path);
}
static void write_file(const char *path, const char *s) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, s, strlen(s)) != (ssize_t)strlen(s)) die("write", path);
    close(fd);
}
static void mkdirs(const char *path, int last_is_file) {
    char b[4096]; snprintf(b, sizeof b, "%s", path);
    for (char *p = b + 1; *p; p++) if (*p == '/') { *p = 0; mkdir(b, 0755); *p = '/'; }
    if (last_is_file) { int fd = open(b, O_CREAT | O_WRONLY | O_CLOEXEC, 0644); if (fd >= 0) close(fd); }
    else mkdir(b, 0755);
}
static int under(const char *p, const char *dir) { size_t n = strlen(dir); return !strncmp(p, dir, n) && (p[n] == '/' || !p[n]); }

static void lo_up(void) {
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct ifreq ifr = { 0 }; strcpy(ifr.ifr_name, "lo");
    if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr)) die("lo", "get");
    ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
    if (ioctl(s, SIOCSIFFLAGS, &ifr)) die("lo", "up");
    close(s);
}

static void setup_mounts(void) {
    int wfd[MAXN], dfd[8], sfd[MAXN];
    static const char *devs[] = { "null", "zero", "full", "random", "urandom", "tty" };
    char b[4096];
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL)) die("make-rprivate", "/");
    for (int i = 0; i < nw; i++) wfd[i] = clone_tree(W[i], 1);
    for (int i = 0; i < 6; i++) { snprintf(b, sizeof b, "/dev/%s", devs[i]); dfd[i] = clone_tree(b, 0); }
    for (int i = 0; i < ns; i++) sfd[i] = clone_tree(S[i], 0);
    MARK("clones");
    setattr(AT_FDCWD, "/", AT_RECURSIVE_, MOUNT_ATTR_RDONLY_ | MOUNT_ATTR_NOSUID_ | MOUNT_ATTR_NODEV_);
    MARK("root read-only");
    if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL)) die("mount", "/proc");
    MARK("proc");
    if (opt_tmp) {
        if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")) die("mount tmpfs", "/tmp");
        for (int i = 0; i < nw; i++) if (under(W[i], "/tmp") && strcmp(W[i], "/tmp")) mkdirs(W[i], 0);
    }
    for (int i = 0; i < nr; i++) {   /* masks: empty tmpfs, read-only after the sockets are bound back */
        if (mount("tmpfs", R[i], "tmpfs", MS_NOSUID | MS_NODEV, "mode=755")) die("mount tmpfs", R[i]);
        for (int j = 0; j < nw; j++) if (under(W[j], R[i])) mkdirs(W[j], 0);
    }
    for (int i = 0; i < nw; i++) if (!(opt_tmp && !strcmp(W[i], "/tmp"))) attach(wfd[i], W[i]);
    MARK("writable roots");
    for (int i = 0; i < nm; i++) attach(clone_tree(M[i], 1), M[i]);
    for (int i = 0; i < np; i++) {
        struct stat st;
        if (lstat(P[i], &st) == 0 && !S_ISLNK(st.st_mode)) {
            int fd = clone_tree(P[i], 1);
            setattr(fd, "", AT_EMPTY_PATH | AT_RECURSIVE_, MOUNT_ATTR_RDONLY_ | MOUNT_ATTR_NOSUID_ | MOUNT_ATTR_NODEV_);
            attach(fd, P[i]);
        } else {   /* missing or a link: /dev/null on it (first missing component, or the link) */
            snprintf(b, sizeof b, "%s", P[i]);
            for (;;) { char *sl = strrchr(b, '/'); if (!sl || sl == b) break; *sl = 0; if (lstat(b, &st) == 0) { *sl = '/'; break; } }
            if (lstat(b, &st) != 0) { int fd = open(b, O_CREAT | O_WRONLY | O_CLOEXEC, 0); if (fd >= 0) close(fd); }
            if (mount("/dev/null", b, NULL, MS_BIND, NULL) || mount(NULL, b, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL)) die("bind /dev/null on", b);
        }
    }
    MARK("protected paths");
    for (int i = 0; i < nu; i++) {   /* other programs' sockets: /dev/null on each */
        struct stat st;
        if (lstat(U[i], &st) == 0 && S_ISSOCK(st.st_mode) && mount("/dev/null", U[i], NULL, MS_BIND, NULL) == 0)
            mount(NULL, U[i], NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL);
    }
    MARK("socket sweep");
    for (int i = 0; i < ns; i++) { mkdirs(S[i], 1); attach(sfd[i], S[i]); }
    for (int i = 0; i < nr; i++) setattr(AT_FDCWD, R[i], 0, MOUNT_ATTR_RDONLY_);
    if (mount("tmpfs", "/dev", "tmpfs", MS_NOSUID, "mode=755,size=64k")) die("mount tmpfs", "/dev");
    for (int i = 0; i < 6; i++) { snprintf(b, sizeof b, "/dev/%s", devs[i]); mkdirs(b, 1); attach(dfd[i], b); }
    symlink("/proc/self/fd", "/dev/fd"); symlink("/proc/self/fd/0", "/dev/stdin");
    symlink("/proc/self/fd/1", "/dev/stdout"); symlink("/proc/self/fd/2", "/dev/stderr");
    mkdir("/dev/pts", 0755);
    if (mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=620")) die("mount devpts", "/dev/pts");
    symlink("pts/ptmx", "/dev/ptmx");
    mkdir("/dev/shm", 01777);
    if (mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")) die("mount tmpfs", "/dev/shm");
    setattr(AT_FDCWD, "/dev", 0, MOUNT_ATTR_RDONLY_);
    MARK("dev");
    if (opt_net) { lo_up(); MARK("lo up"); }
}

static void drop_caps(void) {
    for (int c = 0; c <= 63; c++) prctl(PR_CAPBSET_DROP, c, 0, 0, 0);
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
    struct __user_cap_data_struct d[2] = { { 0 } };
    if (syscall(SYS_capset, &h, d)) die("capset", NULL);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) die("no_new_privs", NULL);
}

struct ll_attr { uint64_t fs, net, scoped; };
struct ll_path { uint64_t allowed; int32_t fd; } __attribute__((packed));
#define LL_WRITE3 ((1ULL<<1)|(1ULL<<4)|(1ULL<<5)|(1ULL<<6)|(1ULL<<7)|(1ULL<<8)|(1ULL<<9)|(1ULL<<10)|(1ULL<<11)|(1ULL<<12)|(1ULL<<13)|(1ULL<<14))
static void landlock(void) {
    struct ll_attr a = { LL_WRITE3, 0, 3 /* abstract unix + signal */ };
    int rs = syscall(SYS_landlock_create_ruleset, &a, sizeof a, 0);
    if (rs < 0) die("landlock_create_ruleset", NULL);
    const char *extra[] = { "/dev/null", "/dev/zero", "/dev/full", "/dev/shm", "/dev/pts", "/tmp" };
    for (int i = 0; i < nw + 6; i++) {
        const char *p = i < nw ? W[i] : extra[i - nw];
        if (i >= nw && !strcmp(p, "/tmp") && !opt_tmp) continue;
        int fd = open(p, O_PATH | O_CLOEXEC); if (fd < 0) continue;
        struct stat st; fstat(fd, &st);
        struct ll_path r = { S_ISDIR(st.st_mode) ? LL_WRITE3 : ((1ULL << 1) | (1ULL << 14)), fd };
        if (syscall(SYS_landlock_add_rule, rs, 1, &r, 0)) die("landlock_add_rule", p);
        close(fd);
    }
    if (syscall(SYS_landlock_restrict_self, rs, 0)) die("landlock_restrict_self", NULL);
}

static void seccomp_net(void) {
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),            /* i386 / other arch */
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),            /* x32 */
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_io_uring_setup, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_socket, 0, 5),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_INET, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_INET6, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EACCES),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog p = { sizeof f / sizeof f[0], f };
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &p)) die("seccomp", NULL);
}

int main(int argc, char **argv) {
    int i = 1;
    for (; i < argc && strcmp(argv[i], "--"); i++) {
        const char *o = argv[i];
        if (!strcmp(o, "-w")) W[nw++] = argv[++i];
        else if (!strcmp(o, "-m")) M[nm++] = argv[++i];
        else if (!strcmp(o, "-p")) P[np++] = argv[++i];
        else if (!strcmp(o, "-R")) R[nr++] = argv[++i];
        else if (!strcmp(o, "-s")) S[ns++] = argv[++i];
        else if (!strcmp(o, "-t")) opt_tmp = 1;
        else if (!strcmp(o, "-n")) opt_net = 1;
        else if (!strcmp(o, "-l")) opt_ll = 1;
        else if (!strcmp(o, "-c")) opt_sc = 1;
        else if (!strcmp(o, "-k")) opt_keep = 1;
        else if (!strcmp(o, "-T")) opt_T = 1;
        else if (!strcmp(o, "-U")) opt_U = 1;
        else { fprintf(stderr, "pod: unknown option %s\n", o); return 125; }
    }
    if (i >= argc - 1) { fprintf(stderr, "pod: no command\n"); return 125; }
    char **cmd = argv + i + 1;
    t0 = us();
    uid_t uid = getuid(); gid_t gid = getgid();
    if (opt_U) {   /* must be read in the caller's network namespace: the list is per netns */
        FILE *f = fopen("/proc/net/unix", "re"); char line[4500];
        if (f && fgets(line, sizeof line, f))
            while (nu < 256 && fgets(line, sizeof line, f)) {
                char *p = line; for (int k = 0; k < 7 && p; k++) { p = strchr(p, ' '); while (p && *p == ' ') p++; }
                if (!p || *p != '/') continue;
                p[strcspn(p, "\n")] = 0;
                int skip = 0; struct stat st;
                for (int k = 0; k < nw; k++) if (under(p, W[k])) skip = 1;
                for (int k = 0; k < ns; k++) if (!strcmp(p, S[k])) skip = 1;
                for (int k = 0; k < nu; k++) if (!strcmp(p, U[k])) skip = 1;
                if (!skip && lstat(p, &st) == 0 && S_ISSOCK(st.st_mode)) U[nu++] = strdup(p);
            }
        if (f) fclose(f);
        MARK("read /proc/net/unix");
    }
    char cwd[4096]; if (!getcwd(cwd, sizeof cwd)) die("getcwd", NULL);
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | (opt_net ? CLONE_NEWNET : 0))) die("unshare", NULL);
    char map[64];
    write_file("/proc/self/setgroups", "deny");
    snprintf(map, sizeof map, "%u %u 1\n", uid, uid); write_file("/proc/self/uid_map", map);
    snprintf(map, sizeof map, "%u %u 1\n", gid, gid); write_file("/proc/self/gid_map", map);
    MARK("unshare + maps");
    pid_t init = fork();
    if (init < 0) die("fork", "init");
    if (init > 0) {   /* launcher: relay the command's status */
        int st; while (waitpid(init, &st, 0) < 0 && errno == EINTR) {}
        if (WIFSIGNALED(st)) { signal(WTERMSIG(st), SIG_DFL); kill(getpid(), WTERMSIG(st)); }
        return WIFEXITED(st) ? WEXITSTATUS(st) : 125;
    }
    prctl(PR_SET_PDEATHSIG, SIGKILL);   /* init dies with the launcher: the kernel then kills the ns */
    if (getppid() == 0) {}              /* (the launcher is outside the ns: ppid reads 0) */
    setup_mounts();
    if (chdir(cwd)) die("chdir", cwd);
    pid_t c = fork();
    if (c < 0) die("fork", "command");
    if (c == 0) {
        setsid();
        drop_caps();
        if (opt_ll) landlock();
        if (opt_sc) seccomp_net();
        MARK("exec");
        execvp(cmd[0], cmd);
        die("exec", cmd[0]);
    }
    int code = 125;
    for (;;) {
        int st; pid_t w = wait(&st);
        if (w < 0) { if (errno == EINTR) continue; break; }
        if (w == c) {
            code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
            if (!opt_keep) break;   /* returning from pid 1 kills every other process in the ns */
        }
    }
    return code;
}
