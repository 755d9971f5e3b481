/* Landlock probe: ABI version, signal scope, abstract-unix scope, pathname unix sockets,
 * TCP connect rules vs TCP Fast Open and MPTCP, UDP, metadata calls, terminal reads.
 * Build: cc -O2 -o /tmp/hxprobe/landlock_probe landlock_probe.c
 * Run:   landlock_probe            (as anyone; uses no_new_privs)
 * The network parts need a loopback listener; run inside `unshare -n` after `ip link set lo up`
 * (root) or `unshare -Urn` (unprivileged) so no sysctl of the host is touched. */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <unistd.h>

#ifndef MSG_FASTOPEN
#define MSG_FASTOPEN 0x20000000
#endif
#define IPPROTO_MPTCP_ 262

struct attr { uint64_t fs, net, scoped; };
#define CREATE_VERSION (1U << 0)
#define ACCESS_NET_BIND_TCP (1ULL << 0)
#define ACCESS_NET_CONNECT_TCP (1ULL << 1)
#define SCOPE_ABSTRACT_UNIX (1ULL << 0)
#define SCOPE_SIGNAL (1ULL << 1)
/* ABI 1..3 write rights (same set hx's handled_fs() gives): */
#define FS_WRITE_ABI3 ((1ULL<<1)|(1ULL<<4)|(1ULL<<5)|(1ULL<<6)|(1ULL<<7)|(1ULL<<8)|(1ULL<<9)|(1ULL<<10)|(1ULL<<11)|(1ULL<<12)|(1ULL<<13)|(1ULL<<14))

static int abi(void) { return syscall(SYS_landlock_create_ruleset, NULL, 0, CREATE_VERSION); }

static int restrict_self(uint64_t fs, uint64_t net, uint64_t scoped) {
    struct attr a = { fs, net, scoped };
    int fd = syscall(SYS_landlock_create_ruleset, &a, sizeof a, 0);
    if (fd < 0) { printf("  create_ruleset: %s\n", strerror(errno)); return -1; }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) { perror("nnp"); return -1; }
    if (syscall(SYS_landlock_restrict_self, fd, 0)) { printf("  restrict_self: %s\n", strerror(errno)); return -1; }
    close(fd);
    return 0;
}

static const char *r(int rc) { static char b[128]; if (rc == 0) return "ok (allowed)"; snprintf(b, sizeof b, "refused: %s", strerror(errno)); return b; }

static void test_signal(void) {
    pid_t outsider = fork();
    if (outsider == 0) { pause(); _exit(0); }
    pid_t c = fork();
    if (c == 0) {
        if (restrict_self(0, 0, SCOPE_SIGNAL)) _exit(1);
        printf("  kill(parent hx-like, 0): %s\n", r(kill(getppid(), 0)));
        printf("  kill(sibling outside domain, SIGKILL): %s\n", r(kill(outsider, SIGKILL)));
        int e = kill(-1, SIGKILL) ; /* should hit only our own domain = ourselves? kill(-1) skips caller */
        printf("  kill(-1, SIGKILL): %s\n", r(e));
        pid_t in = fork();
        if (in == 0) { pause(); _exit(0); }
        printf("  kill(own child inside domain, SIGKILL): %s\n", r(kill(in, SIGKILL)));
        waitpid(in, NULL, 0);
        _exit(0);
    }
    waitpid(c, NULL, 0);
    int st; pid_t w = waitpid(outsider, &st, WNOHANG);
    printf("  outsider still alive after the child's kill -9 -1: %s\n", w == 0 ? "yes" : "NO");
    kill(outsider, SIGKILL); waitpid(outsider, NULL, 0);
}

static void test_abstract(void) {
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    const char name[] = "\0hxprobe-abstract";
    memcpy(a.sun_path, name, sizeof name - 1);
    socklen_t len = offsetof(struct sockaddr_un, sun_path) + sizeof name - 1;
    if (bind(s, (void *)&a, len) || listen(s, 4)) { perror("abstract bind"); return; }
    unlink("/tmp/hxprobe-path.sock");
    int p = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un pa = { .sun_family = AF_UNIX, .sun_path = "/tmp/hxprobe-path.sock" };
    if (bind(p, (void *)&pa, sizeof pa) || listen(p, 4)) { perror("path bind"); return; }
    pid_t c = fork();
    if (c == 0) {
        if (restrict_self(FS_WRITE_ABI3, 0, SCOPE_ABSTRACT_UNIX)) _exit(1);
        int t = socket(AF_UNIX, SOCK_STREAM, 0);
        printf("  connect(abstract socket made outside): %s\n", r(connect(t, (void *)&a, len)));
        int u = socket(AF_UNIX, SOCK_STREAM, 0);
        printf("  connect(pathname socket /tmp/hxprobe-path.sock made outside, fs writes handled): %s\n", r(connect(u, (void *)&pa, sizeof pa)));
        _exit(0);
    }
    waitpid(c, NULL, 0);
    close(s); close(p); unlink("/tmp/hxprobe-path.sock");
}

static int listen_tcp(int port, int tfo) {
    int s = socket(AF_INET, SOCK_STREAM, 0), one = 1, q = 16;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (tfo) setsockopt(s, IPPROTO_TCP, TCP_FASTOPEN, &q, sizeof q);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    if (bind(s, (void *)&a, sizeof a) || listen(s, 16)) { perror("tcp listen"); return -1; }
    return s;
}

/* Accepts one connection with a timeout and prints what arrived. */
static void drain(int ls, const char *what) {
    struct timeval tv = { 1, 0 };
    setsockopt(ls, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    int c = accept(ls, NULL, NULL);
    if (c < 0) { printf("    listener: nothing accepted for %s\n", what); return; }
    setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char b[64] = {0}; ssize_t n = recv(c, b, sizeof b - 1, 0);
    printf("    listener: accepted for %s, received %zd bytes \"%s\"\n", what, n, n > 0 ? b : "");
    close(c);
}

static void test_net(void) {
    int ls = listen_tcp(7777, 1);
    int us = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in ua = { .sin_family = AF_INET, .sin_port = htons(7778), .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    bind(us, (void *)&ua, sizeof ua);
    if (ls < 0) return;
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(7777), .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    /* warm up a TFO cookie without restrictions, so the next sendto can carry data in the SYN */
    int w = socket(AF_INET, SOCK_STREAM, 0);
    sendto(w, "warm", 4, MSG_FASTOPEN, (void *)&a, sizeof a); drain(ls, "warm-up (unrestricted)"); close(w);
    pid_t c = fork();
    if (c == 0) {
        if (restrict_self(0, ACCESS_NET_BIND_TCP | ACCESS_NET_CONNECT_TCP, 0)) _exit(1);
        int t = socket(AF_INET, SOCK_STREAM, 0);
        printf("  connect(tcp 127.0.0.1:7777): %s\n", r(connect(t, (void *)&a, sizeof a)));
        int f = socket(AF_INET, SOCK_STREAM, 0);
        ssize_t n = sendto(f, "tfo-data", 8, MSG_FASTOPEN, (void *)&a, sizeof a);
        printf("  sendto(MSG_FASTOPEN, 127.0.0.1:7777): %s\n", n >= 0 ? "ok (allowed)" : r(-1));
        int m = socket(AF_INET, SOCK_STREAM, IPPROTO_MPTCP_);
        if (m < 0) printf("  socket(AF_INET, SOCK_STREAM, MPTCP): %s\n", r(-1));
        else { printf("  connect(mptcp 127.0.0.1:7777): %s\n", r(connect(m, (void *)&a, sizeof a))); send(m, "mptcp", 5, 0); }
        int u = socket(AF_INET, SOCK_DGRAM, 0);
        n = sendto(u, "udp", 3, 0, (void *)&ua, sizeof ua);
        printf("  sendto(udp 127.0.0.1:7778): %s\n", n >= 0 ? "ok (allowed)" : r(-1));
        sleep(1);
        _exit(0);
    }
    drain(ls, "first restricted attempt");
    drain(ls, "second restricted attempt");
    waitpid(c, NULL, 0);
    char b[16] = {0}; struct timeval tv = { 0, 200000 }; setsockopt(us, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ssize_t n = recv(us, b, sizeof b, 0);
    printf("    udp listener: %zd bytes \"%s\"\n", n, n > 0 ? b : "");
    close(ls); close(us);
}

static void test_metadata(const char *path) {
    pid_t c = fork();
    if (c == 0) {
        if (restrict_self(FS_WRITE_ABI3, 0, 0)) _exit(1);
        printf("  write-open %s: %s\n", path, r(open(path, O_WRONLY) < 0 ? -1 : 0));
        printf("  chmod %s 0777: %s\n", path, r(chmod(path, 0777)));
        printf("  chown %s 0:0: %s\n", path, r(chown(path, 0, 0)));
        struct timespec ts[2] = { { 0, 0 }, { 0, 0 } };
        printf("  utimensat %s (1970): %s\n", path, r(utimensat(AT_FDCWD, path, ts, 0)));
        printf("  setxattr %s user.hx: %s\n", path, r(setxattr(path, "user.hx", "1", 1, 0)));
        _exit(0);
    }
    waitpid(c, NULL, 0);
}

static void test_tty(void) {
    pid_t c = fork();
    if (c == 0) {
        setsid();
        if (restrict_self(FS_WRITE_ABI3, 0, 0)) _exit(1);
        printf("  open /dev/tty O_RDONLY after setsid: %s\n", r(open("/dev/tty", O_RDONLY) < 0 ? -1 : 0));
        printf("  open /dev/ptmx O_RDWR: %s\n", r(open("/dev/ptmx", O_RDWR) < 0 ? -1 : 0));
        printf("  open /dev/ptmx O_RDONLY: %s\n", r(open("/dev/ptmx", O_RDONLY) < 0 ? -1 : 0));
        const char *p = getenv("PROBE_PTS");
        if (p) printf("  open %s O_RDONLY (another terminal): %s\n", p, r(open(p, O_RDONLY) < 0 ? -1 : 0));
        _exit(0);
    }
    waitpid(c, NULL, 0);
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0);
    int v = abi();
    printf("landlock ABI: %d%s\n", v, v < 0 ? strerror(errno) : "");
    const char *what = argc > 1 ? argv[1] : "all";
    if (!strcmp(what, "all") || !strcmp(what, "signal")) { printf("signal scope:\n"); test_signal(); }
    if (!strcmp(what, "all") || !strcmp(what, "unix")) { printf("unix sockets:\n"); test_abstract(); }
    if (!strcmp(what, "all") || !strcmp(what, "meta")) { printf("metadata (fs writes handled, no rule):\n"); test_metadata(argc > 2 ? argv[2] : "/tmp/hxprobe-meta"); }
    if (!strcmp(what, "all") || !strcmp(what, "tty")) { printf("terminals:\n"); test_tty(); }
    if (!strcmp(what, "net")) { printf("network (TCP bind/connect handled):\n"); test_net(); }
    return 0;
}
