#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>
static void *idle(void *a) { pause(); return a; }
int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    pthread_t t; pthread_create(&t, NULL, idle, NULL);
    int r = unshare(CLONE_NEWUSER);
    printf("unshare(CLONE_NEWUSER) with 2 threads: %s\n", r ? strerror(errno) : "ok");
    r = unshare(CLONE_NEWNS);
    printf("unshare(CLONE_NEWNS) with 2 threads: %s\n", r ? strerror(errno) : "ok");
    if (fork() == 0) { r = unshare(CLONE_NEWUSER); printf("in a forked child (1 thread): %s\n", r ? strerror(errno) : "ok"); _exit(0); }
    sleep(1); return 0;
}
