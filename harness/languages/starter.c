/* codeeval-start: the last step between the spawner and a compiler or program.

   The spawner (spawner.py) starts this with posix_spawn, which shares its memory until the
   exec instead of copying it (a fork of the spawner's Python image, its copy-on-write faults
   and the teardown of that copy at the exec cost ~2 ms of CPU a start on a virtual machine).
   It confines itself exactly as confine.py's child() does and execs the program:

     codeeval-start STATUS RULESET UID KEEPCAP N (RESOURCE LIMIT)*N CWD PROGRAM ARGV0 ARG...

   fds 0 .. STATUS-1 are the program's (posix_spawn put them there), STATUS is the write end
   of the spawner's status pipe, RULESET (or -1) a Landlock ruleset to enforce (no bubblewrap),
   UID the run's uid (-1: keep this one), KEEPCAP the one capability to keep across the change
   of uid (-1: none), then N resource limits (soft = hard), the folder to run in, the program
   and its argv; the environment is the program's. The seccomp filter and no_new_privs come
   from the spawner, which installed them on itself. A failure before the exec is written on
   STATUS (close-on-exec: the program never holds it) and ends this with status 127.

   No libc: a static binary without it starts in ~0.05 ms, while glibc's start-up (its CPU
   feature probes trap to the hypervisor) costs ~0.6 ms. x86-64 and aarch64. */

#include <asm/unistd.h>
#include <linux/capability.h>
#include <linux/prctl.h>

#define AT_FDCWD (-100)
#define O_WRONLY 01
#define O_CLOEXEC 02000000
#define F_SETFD 2
#define FD_CLOEXEC 1

typedef unsigned long size_t;

struct rlimit64 {
    unsigned long long cur, max;
};

#if defined(__x86_64__)
static long sys6(long n, long a, long b, long c, long d, long e, long f)
{
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    register long r9 __asm__("r9") = f;
    long ret;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    return ret;
}
__asm__(".text\n.globl _start\n_start:\n mov %rsp, %rdi\n and $-16, %rsp\n call start\n hlt\n");
#elif defined(__aarch64__)
static long sys6(long n, long a, long b, long c, long d, long e, long f)
{
    register long x8 __asm__("x8") = n;
    register long x0 __asm__("x0") = a;
    register long x1 __asm__("x1") = b;
    register long x2 __asm__("x2") = c;
    register long x3 __asm__("x3") = d;
    register long x4 __asm__("x4") = e;
    register long x5 __asm__("x5") = f;
    __asm__ volatile("svc 0"
                     : "+r"(x0)
                     : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
                     : "memory");
    return x0;
}
__asm__(".text\n.globl _start\n_start:\n mov x0, sp\n bl start\n brk #0\n");
#else
#error "codeeval-start supports x86-64 and aarch64"
#endif

#define SYS(n, a, b, c) sys6(n, (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define SYS5(n, a, b, c, d, e) sys6(n, (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), 0)

/* The compiler may call these for struct copies and zeroing. */
void *memset(void *s, int c, size_t n)
{
    unsigned char *p = s;
    while (n--)
        *p++ = (unsigned char)c;
    return s;
}

void *memcpy(void *d, const void *s, size_t n)
{
    unsigned char *p = d;
    const unsigned char *q = s;
    while (n--)
        *p++ = *q++;
    return d;
}

static size_t length(const char *s)
{
    size_t n = 0;
    while (s[n])
        n++;
    return n;
}

static int status_fd = -1;

static void say(const char *s)
{
    if (status_fd >= 0)
        SYS(__NR_write, status_fd, s, length(s));
}

/* Report why the program could not start, on the status pipe, and end. */
static void fail(const char *program, const char *step, long ret)
{
    char digits[24];
    int i = sizeof(digits);
    unsigned long e = (unsigned long)-ret;
    digits[--i] = 0;
    do {
        digits[--i] = (char)('0' + e % 10);
        e /= 10;
    } while (e && i > 0);
    say("cannot start ");
    say(program);
    say(": ");
    say(step);
    say(" failed (errno ");
    say(digits + i);
    say(")");
    SYS(__NR_exit_group, 127, 0, 0);
    for (;;) {
    }
}

static long number(const char *s, int *ok)
{
    long sign = 1, value = 0;
    if (*s == '-') {
        sign = -1;
        s++;
    }
    if (!*s)
        *ok = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || value > (1L << 60)) {
            *ok = 0;
            return 0;
        }
        value = value * 10 + (*s - '0');
    }
    return sign * value;
}

static void check(long ret, const char *program, const char *step)
{
    if (ret < 0)
        fail(program, step, ret);
}

__attribute__((used)) void start(long *sp)
{
    long argc = sp[0];
    char **argv = (char **)(sp + 1);
    char **envp = argv + argc + 1;
    int ok = 1;
    if (argc < 9)
        SYS(__NR_exit_group, 126, 0, 0);
    status_fd = (int)number(argv[1], &ok);
    long ruleset = number(argv[2], &ok);
    long uid = number(argv[3], &ok);
    long keep_cap = number(argv[4], &ok);
    long count = number(argv[5], &ok);
    if (!ok || status_fd < 0 || count < 0 || argc < 9 + 2 * count)
        SYS(__NR_exit_group, 126, 0, 0);
    char **limits = argv + 6;
    const char *cwd = argv[6 + 2 * count];
    const char *program = argv[7 + 2 * count];
    char **program_argv = argv + 8 + 2 * count;

    check(SYS(__NR_fcntl, status_fd, F_SETFD, FD_CLOEXEC), program, "fcntl");
    check(SYS(__NR_setsid, 0, 0, 0), program, "setsid");
    /* The kernel's first choice when memory runs out, never the spawner or the harness
       (before Landlock, whose domain forbids it; best effort, as in confine.py). */
    long fd = SYS5(__NR_openat, AT_FDCWD, "/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC, 0, 0);
    if (fd >= 0) {
        SYS(__NR_write, fd, "1000", 4);
        SYS(__NR_close, fd, 0, 0);
    }
    check(SYS5(__NR_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), program, "no_new_privs");
    if (ruleset >= 0) /* the view, where there is no bubblewrap */
        check(SYS(__NR_landlock_restrict_self, ruleset, 0, 0), program, "landlock");
    /* Nothing but the program's fds and the status pipe goes on. */
    check(SYS(__NR_close_range, status_fd + 1, ~0U, 0), program, "close_range");
    for (long i = 0; i < count; i++) {
        struct rlimit64 limit;
        int good = 1;
        long resource = number(limits[2 * i], &good);
        long value = number(limits[2 * i + 1], &good);
        if (!good)
            fail(program, "a limit", -22);
        limit.cur = limit.max = (unsigned long long)value;
        check(SYS5(__NR_prlimit64, 0, resource, &limit, 0, 0), program, "setrlimit");
    }
    if (uid >= 0) {
        if (keep_cap >= 0)
            check(SYS5(__NR_prctl, PR_SET_KEEPCAPS, 1, 0, 0, 0), program, "keepcaps");
        check(SYS(__NR_setgroups, 0, 0, 0), program, "setgroups");
        check(SYS(__NR_setresgid, uid, uid, uid), program, "setresgid");
        check(SYS(__NR_setresuid, uid, uid, uid), program, "setresuid");
    }
    struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2] = {{0, 0, 0}, {0, 0, 0}};
    if (uid >= 0 && keep_cap >= 0 && keep_cap < 64) {
        /* The one that reads the view: effective, permitted, inheritable and ambient, so
           that execve keeps it. */
        unsigned bit = 1U << (keep_cap % 32);
        data[keep_cap / 32].effective = data[keep_cap / 32].permitted = bit;
        data[keep_cap / 32].inheritable = bit;
        check(SYS(__NR_capset, &header, data, 0), program, "capset");
        check(SYS5(__NR_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, keep_cap, 0, 0), program,
              "ambient capability");
    } else {
        /* Empty effective, permitted and inheritable sets (setpriv's --inh-caps=-all). */
        check(SYS(__NR_capset, &header, data, 0), program, "capset");
    }
    check(SYS(__NR_chdir, cwd, 0, 0), program, "chdir");
    check(SYS(__NR_execve, program, program_argv, envp), program, "execve");
}
