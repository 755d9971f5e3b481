/* llrun: what hx does today for a bash command (src/process.rs + src/sandbox/kernel.rs):
 * setsid, no_new_privs, a Landlock ruleset handling the ABI-3 write rights with rules for
 * the writable folders and the device files, and (with -N) TCP bind/connect handled with
 * no port allowed. Used to show each attack working against today's sandbox.
 * With -S it adds the ABI-6 scopes (signals, abstract Unix sockets) and with -C a seccomp
 * filter refusing IPv4/IPv6 sockets and io_uring (the fallback without namespaces).
 * cc -O2 -o llrun llrun.c ; llrun [-w DIR]... [-N] [-S] [-C] -- CMD... */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <stddef.h>
#include <sys/socket.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
static int seccomp_ip(void) {
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
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
    return syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &p);
}
struct attr { uint64_t fs, net, scoped; };
struct pb { uint64_t allowed; int32_t fd; } __attribute__((packed));
#define W3 ((1ULL<<1)|(1ULL<<4)|(1ULL<<5)|(1ULL<<6)|(1ULL<<7)|(1ULL<<8)|(1ULL<<9)|(1ULL<<10)|(1ULL<<11)|(1ULL<<12)|(1ULL<<13)|(1ULL<<14))
int main(int argc, char **argv) {
    const char *w[40]; int nw = 0, net = 0, scopes = 0, sc = 0, i = 1;
    for (; i < argc && strcmp(argv[i], "--"); i++) {
        if (!strcmp(argv[i], "-w")) w[nw++] = argv[++i];
        else if (!strcmp(argv[i], "-N")) net = 1;
        else if (!strcmp(argv[i], "-S")) scopes = 1;
        else if (!strcmp(argv[i], "-C")) sc = 1;
    }
    const char *dev[] = { "/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/shm", "/tmp" };
    for (int d = 0; d < 7; d++) w[nw++] = dev[d];
    struct attr a = { W3, net ? 3 : 0, scopes ? 3 : 0 };
    int rs = syscall(SYS_landlock_create_ruleset, &a, scopes ? 24 : 16, 0);   /* 16: the ABI-4 struct */
    if (rs < 0) { perror("landlock_create_ruleset"); return 125; }
    for (int k = 0; k < nw; k++) {
        int fd = open(w[k], O_PATH | O_NOFOLLOW | O_CLOEXEC); if (fd < 0) continue;
        struct stat st; fstat(fd, &st);
        struct pb r = { S_ISDIR(st.st_mode) ? W3 : ((1ULL << 1) | (1ULL << 14)), fd };
        if (syscall(SYS_landlock_add_rule, rs, 1, &r, 0)) { perror(w[k]); return 125; }
        close(fd);
    }
    if (setsid() < 0) { perror("setsid"); return 125; }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || syscall(SYS_landlock_restrict_self, rs, 0)) { perror("restrict"); return 125; }
    if (sc && seccomp_ip()) { perror("seccomp"); return 125; }
    execvp(argv[i + 1], argv + i + 1);
    perror("exec"); return 127;
}
