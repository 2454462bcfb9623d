/*
 * oci-task-probe: a hostile task for the oci_local tests, a static binary
 * copied into a carve-out and run inside the container (busybox cannot make
 * these system calls). One line per attempt: "NAME made" when the attempt
 * succeeded, "NAME denied ERRNO" otherwise; the tests' verdict comes from
 * the host (a find for set-id files, the process count), not from these.
 *
 *   oci-task-probe setid DIR   tries every way to leave a set-user-ID or
 *                              set-group-ID file in DIR
 *   oci-task-probe syscalls32  tries the calls the seccomp profile denies
 *                              through the i386 entry points
 *   oci-task-probe profile     tries system calls the profile denies by
 *                              name natively, those newer than its review
 *                              (the canary's NEWER_NR bound), and
 *                              cachestat, one below it
 *   oci-task-probe mmapw FILE  writes a marker into FILE through a shared
 *                              writable mapping
 *   oci-task-probe forkbomb    forks without end, retrying when the pid
 *                              space is full; never exits by itself
 *   oci-task-probe spawn N     forks N children that pause, counts the
 *                              forks refused, says "spawned X failed Y"
 *                              and "full", then pauses itself
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void says(const char *name, long r)
{
	if (r < 0)
		printf("%s denied %s\n", name, strerrorname_np(errno) ? strerrorname_np(errno) : "?");
	else
		printf("%s made\n", name);
	fflush(stdout);
}

#if defined(__x86_64__)
/* i386 system calls from a 64-bit process (int 0x80): the pointers must lie
 * below 4 GiB, so static storage of a static, non-PIE binary */
static char path32[512];

static long sys32(long nr, long a, long b, long c)
{
	long ret;
	__asm__ volatile("int $0x80"
	                 : "=a"(ret)
	                 : "a"(nr), "b"(a), "c"(b), "d"(c)
	                 : "memory", "cc", "r8", "r9", "r10", "r11");
	if (ret < 0 && ret > -4096) {
		errno = (int)-ret;
		return -1;
	}
	return ret;
}

/* Whether this kernel has the i386 entry points at all: a kernel without
 * IA32 emulation (CONFIG_IA32_EMULATION off, or ia32_emulation=0) answers
 * int 0x80 with a SIGSEGV, so it is tried in a child first. Says
 * "i386 unavailable" when it has none (then there is no 32-bit way around
 * the filter to try). */
static int ia32(void)
{
	static int known = -1;
	if (known >= 0)
		return known;
	fflush(stdout);
	pid_t c = fork();
	if (c == 0) {
		_exit(sys32(20 /* getpid */, 0, 0, 0) > 0 ? 0 : 1);
	}
	int st = 0;
	known = c > 0 && waitpid(c, &st, 0) == c && WIFEXITED(st) && WEXITSTATUS(st) == 0;
	if (!known)
		printf("i386 unavailable\n");
	fflush(stdout);
	return known;
}
#endif

static int setid(const char *dir)
{
	if (chdir(dir) != 0)
		return 2;
	int fd = open("plain", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	if (fd < 0)
		return 2;
	says("chmod", chmod("plain", 04755));
	says("chmod_sgid", chmod("plain", 02755));
	says("fchmod", fchmod(fd, 04755));
	says("fchmodat", fchmodat(AT_FDCWD, "plain", 04755, 0));
	says("fchmodat2", syscall(452, AT_FDCWD, "plain", 04755, 0));
	close(fd);
	fd = open("open", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 04755);
	says("open", fd);
	if (fd >= 0)
		close(fd);
	fd = creat("creat", 02755);
	says("creat", fd);
	if (fd >= 0)
		close(fd);
	says("mknod", mknod("mknod", S_IFREG | 04755, 0));
	fd = open(".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 04755);
	if (fd >= 0) {
		char p[64];
		snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
		says("tmpfile", linkat(AT_FDCWD, p, AT_FDCWD, "tmpfile", AT_SYMLINK_FOLLOW));
		close(fd);
	} else {
		says("tmpfile", -1);
	}
	struct {
		uint64_t flags, mode, resolve;
	} how = {O_WRONLY | O_CREAT | O_CLOEXEC, 04755, 0};
	fd = (int)syscall(437, AT_FDCWD, "openat2", &how, sizeof how);
	says("openat2", fd);
	if (fd >= 0)
		close(fd);
	says("mkdir_chmod_sgid", mkdir("sgid-dir", 0755) == 0 ? chmod("sgid-dir", 02775) : -1);
#if defined(__x86_64__)
	char cwd[400];
	if (ia32() && getcwd(cwd, sizeof cwd) != NULL) {
		snprintf(path32, sizeof path32, "%s/plain", cwd);
		says("i386_chmod", sys32(15, (long)(uintptr_t)path32, 04755, 0));
		says("i386_fchmodat2", sys32(452, AT_FDCWD, (long)(uintptr_t)path32, 04755));
		snprintf(path32, sizeof path32, "%s/open32", cwd);
		says("i386_open", sys32(5, (long)(uintptr_t)path32, O_WRONLY | O_CREAT, 04755));
	}
#endif
	/* not set-id: still allowed */
	says("chmod_plain", chmod("plain", 0700));
	return 0;
}

/* The calls the runtime's seccomp profile denies (EPERM), through the i386
 * entry points (int 0x80), where the canary's own checks use the native
 * ones: a user namespace (unshare, clone), the mount family, keyrings,
 * io_uring, bpf, perf_event_open, userfaultfd, ptrace, setns, chroot,
 * open_by_handle_at, and AF_VSOCK sockets both directly and through the
 * socketcall multiplexer (whose arguments lie in memory). */
static int syscalls32(void)
{
#if defined(__x86_64__)
	static unsigned int args[4];
	static char buf[64];
	if (!ia32())
		return 0;
	snprintf(path32, sizeof path32, "/tmp");
	args[0] = 40; /* AF_VSOCK */
	args[1] = 1;  /* SOCK_STREAM */
	args[2] = 0;
	says("i386_unshare_user", sys32(310, 0x10000000, 0, 0));
	says("i386_clone_user", sys32(120, 0x10000000 | 17, 0, 0));
	says("i386_mount", sys32(21, (long)(uintptr_t)"none", (long)(uintptr_t)path32,
	                         (long)(uintptr_t)"tmpfs"));
	says("i386_umount2", sys32(52, (long)(uintptr_t)path32, 2, 0));
	says("i386_keyctl", sys32(288, 0, -3, 0));
	says("i386_add_key", sys32(286, (long)(uintptr_t)"user", (long)(uintptr_t)"k", 0));
	says("i386_io_uring_setup", sys32(425, 4, (long)(uintptr_t)buf, 0));
	says("i386_bpf", sys32(357, 0, (long)(uintptr_t)buf, 16));
	says("i386_perf_event_open", sys32(336, (long)(uintptr_t)buf, 0, -1));
	says("i386_userfaultfd", sys32(374, 0, 0, 0));
	says("i386_ptrace", sys32(26, 16 /* PTRACE_ATTACH */, 1, 0));
	says("i386_setns", sys32(346, 0, 0, 0));
	says("i386_chroot", sys32(61, (long)(uintptr_t)path32, 0, 0));
	says("i386_open_by_handle_at", sys32(342, AT_FDCWD, (long)(uintptr_t)buf, 0));
	says("i386_socket_vsock", sys32(359, 40, 1, 0));
	says("i386_socketcall_vsock", sys32(102, 1 /* SYS_SOCKET */, (long)(uintptr_t)args, 0));
	return 0;
#else
	printf("syscalls32 unsupported\n");
	return 0;
#endif
}

/* Calls the profile denies by name (EPERM; arguments a kernel would accept
 * or refuse otherwise: kcmp of the caller with itself, get_mempolicy,
 * clock_adjtime read-only, ustat, sysfs, ...); then calls from NEWER_NR (457) on, each with arguments a kernel that has it
 * would refuse otherwise than ENOSYS (mseal of nothing succeeds), natively,
 * through x32 (bit 30) and, where the kernel has them, the i386 entry
 * points; then cachestat (451), below the bound, which reaches the kernel
 * (EBADF from 6.5 on). */
static int profile(void)
{
	static char buf[512];
	pid_t me = getpid();
	says("denied_kcmp", syscall(SYS_kcmp, me, me, 0 /* KCMP_FILE */, 0, 0));
	says("denied_get_mempolicy", syscall(SYS_get_mempolicy, NULL, NULL, 0, NULL, 0));
	says("denied_set_mempolicy", syscall(SYS_set_mempolicy, 0 /* MPOL_DEFAULT */, NULL, 0));
	says("denied_mbind", syscall(SYS_mbind, buf, 0, 0, NULL, 0, 0));
	says("denied_migrate_pages", syscall(SYS_migrate_pages, 0, 0, NULL, NULL));
	says("denied_move_pages", syscall(SYS_move_pages, 0, 0, NULL, NULL, NULL, 0));
	memset(buf, 0, sizeof buf);
	says("denied_clock_adjtime", syscall(SYS_clock_adjtime, 0 /* CLOCK_REALTIME */, buf));
	says("denied_settimeofday", syscall(SYS_settimeofday, NULL, NULL));
	says("denied_clock_settime", syscall(SYS_clock_settime, 0, NULL));
#if defined(SYS_ustat) && defined(SYS_sysfs) && defined(SYS_uselib) /* not on aarch64 */
	says("denied_ustat", syscall(SYS_ustat, 0, buf));
	says("denied_sysfs", syscall(SYS_sysfs, 3 /* count file systems */));
	says("denied_uselib", syscall(SYS_uselib, "/nonexistent"));
#endif
	says("newer_statmount", syscall(457, NULL, NULL, 0, 0));
	says("newer_listmount", syscall(458, NULL, NULL, 0, 0));
	says("newer_mseal", syscall(462, 0, 0, 0));
	says("newer_open_tree_attr", syscall(467, AT_FDCWD, "/", 0, NULL, 0));
	says("newer_file_setattr", syscall(469, AT_FDCWD, "/", NULL, 0, 0));
	says("newer_unassigned", syscall(509, 0, 0, 0));
#if defined(__x86_64__)
	says("newer_x32_listmount", syscall(0x40000000 | 458, NULL, NULL, 0, 0));
	if (ia32())
		says("newer_i386_listmount", sys32(458, 0, 0, 0));
#endif
	says("reviewed_cachestat", syscall(451, -1, NULL, NULL, 0));
	return 0;
}

/* Writes a marker at the start of FILE through a shared writable mapping
 * (which, unlike write(), keeps a set-id bit and file capabilities). */
static int mmapw(const char *file)
{
	static const char marker[] = "OTA-MMAP-WRITTEN";
	int fd = open(file, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		says("mmapw_open", -1);
		return 0;
	}
	char *p = mmap(NULL, sizeof marker, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		says("mmapw_map", -1);
		close(fd);
		return 0;
	}
	memcpy(p, marker, sizeof marker - 1);
	says("mmapw", msync(p, sizeof marker, MS_SYNC));
	munmap(p, sizeof marker);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "setid") == 0)
		return setid(argv[2]);
	if (argc == 3 && strcmp(argv[1], "mmapw") == 0)
		return mmapw(argv[2]);
	if (argc == 2 && strcmp(argv[1], "syscalls32") == 0)
		return syscalls32();
	if (argc == 2 && strcmp(argv[1], "profile") == 0)
		return profile();
	if (argc == 2 && strcmp(argv[1], "forkbomb") == 0) {
		printf("forkbomb\n");
		fflush(stdout);
		for (;;)
			if (fork() < 0)
				usleep(2000);
	}
	if (argc == 3 && strcmp(argv[1], "spawn") == 0) {
		int want = atoi(argv[2]), made = 0, failed = 0;
		for (int i = 0; i < want; i++) {
			pid_t c = fork();
			if (c == 0)
				for (;;)
					pause();
			if (c < 0)
				failed++;
			else
				made++;
		}
		printf("spawned %d failed %d\nfull\n", made, failed);
		fflush(stdout);
		for (;;)
			pause();
	}
	fprintf(stderr, "usage: oci-task-probe setid DIR | mmapw FILE | syscalls32 | forkbomb | "
	                "spawn N\n");
	return 2;
}
