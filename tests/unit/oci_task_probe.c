/*
 * oci-task-probe: a hostile task for the oci_local tests, a static binary
 * copied into a carve-out and run inside the container (busybox cannot make
 * these system calls). One line per attempt: "NAME made" when the attempt
 * succeeded, "NAME denied ERRNO" otherwise; the tests' verdict comes from
 * the host (a find for set-id files, the process count), not from these.
 *
 *   oci-task-probe setid DIR   tries every way to leave a set-user-ID or
 *                              set-group-ID file in DIR
 *   oci-task-probe mmapw FILE  writes a marker into FILE through a shared
 *                              writable mapping
 *   oci-task-probe forkbomb    forks without end, retrying when the pid
 *                              space is full; never exits by itself
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
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
	if (getcwd(cwd, sizeof cwd) != NULL) {
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
	if (argc == 2 && strcmp(argv[1], "forkbomb") == 0) {
		printf("forkbomb\n");
		fflush(stdout);
		for (;;)
			if (fork() < 0)
				usleep(2000);
	}
	fprintf(stderr, "usage: oci-task-probe setid DIR | mmapw FILE | forkbomb\n");
	return 2;
}
