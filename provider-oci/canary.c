/*
 * ota-oci-canary: the runner-owned canary, a static binary bound read-only
 * into the container. ota_oci_run makes it the container's own process (gate
 * mode, below), so its checks run in the task's boundary and process
 * settings before the task, which it then execs in place.
 *
 * Each argument is one check; one JSON object per line is printed:
 *   deny:PATH      writing PATH (a file) or creating a file in PATH (a dir) fails
 *   allow:PATH     creating, writing and removing a file in PATH succeeds
 *   tcp:ADDR:PORT  connecting fails with a network-unreachable error
 *   udp:ADDR:PORT  sending a datagram fails with a network-unreachable error
 *   absent:PATH    PATH does not exist
 *   loopback       a TCP listener on 127.0.0.1 accepts a local connection
 *   status         reports NoNewPrivs, Seccomp and capability sets
 *   syscalls       mount, ptrace, user namespaces, io_uring, AF_VSOCK, raw and
 *                  packet sockets fail; so does making a set-user-ID or
 *                  set-group-ID file (the canary's own filter, below)
 * Exit status 0 when every check held, 1 otherwise. No jansson: static libc only.
 *
 * Gate mode (the container's own process, see docs/oci-local.md):
 *   ota-oci-canary gate CHECK... -- TASK-ARGV...
 * first waits for one byte from descriptor 4 (a socket whose other end only
 * the host holds): 'C' (the start, sent once the host has inspected the
 * container) runs the checks, anything else or end of file exits 125 at
 * once. The report is written to descriptor 3 (a pipe only the host reads)
 * instead of stdout, which is closed; then one more byte from
 * descriptor 4: 'G' (go) closes it and execs TASK-ARGV (PATH
 * lookup as the runtime would do it) in place, in the same process and
 * boundary; anything else, or end of file, exits 125 without running the
 * task. The task's code thus starts only after the host has read the
 * complete report, and it inherits neither descriptor.
 *
 * Before its checks (which witness it) the canary adds a seccomp filter of
 * its own, which the task inherits and cannot remove: making a
 * set-user-ID or set-group-ID file fails with EPERM (see own_filter),
 * and every system call newer than the profile's review gives ENOSYS
 * (see NEWER_NR).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#ifndef AF_PACKET
#define AF_PACKET 17
#endif
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif

int main(int argc, char **argv);

static void put_json_str(const char *s)
{
	putchar('"');
	for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
		if (*p == '"' || *p == '\\')
			printf("\\%c", *p);
		else if (*p < 0x20)
			printf("\\u%04x", *p);
		else
			putchar(*p);
	}
	putchar('"');
}

static int report(const char *check, const char *target, int ok, int err)
{
	printf("{\"check\":");
	put_json_str(check);
	printf(",\"target\":");
	put_json_str(target);
	printf(",\"ok\":%s,\"errno\":", ok ? "true" : "false");
	put_json_str(err != 0 ? strerrorname_np(err) != NULL ? strerrorname_np(err) : "E?" : "");
	printf("}\n");
	return ok;
}

static int write_denied(int e)
{
	return e == EROFS || e == EACCES || e == EPERM;
}

static int check_deny(const char *path)
{
	struct stat st;
	if (lstat(path, &st) != 0)
		return report("deny", path, 0, errno);
	if (S_ISDIR(st.st_mode)) {
		char f[4096];
		snprintf(f, sizeof f, "%s/.ota-canary-%ld", path, (long)getpid());
		int fd = open(f, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd >= 0) {
			close(fd);
			unlink(f);
			return report("deny", path, 0, 0);
		}
		int e = errno;
		/* FS-15: an unnamed file in the directory is refused too */
		int t = open(path, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
		if (t >= 0) {
			close(t);
			return report("deny", path, 0, 0);
		}
		return report("deny", path, write_denied(e), e);
	}
	int fd = open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		close(fd);
		return report("deny", path, 0, 0);
	}
	int e = errno;
	return report("deny", path, write_denied(e), e);
}

static int check_allow(const char *path)
{
	char f[4096];
	snprintf(f, sizeof f, "%s/.ota-canary-%ld", path, (long)getpid());
	int fd = open(f, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return report("allow", path, 0, errno);
	ssize_t w = write(fd, "ota", 3);
	int e = w == 3 ? 0 : errno;
	close(fd);
	if (unlink(f) != 0 && e == 0)
		e = errno;
	return report("allow", path, w == 3 && e == 0, e);
}

static int parse_addr(const char *spec, struct sockaddr_storage *ss, socklen_t *len)
{
	char host[128];
	const char *colon = strrchr(spec, ':');
	if (colon == NULL || (size_t)(colon - spec) >= sizeof host)
		return -1;
	memcpy(host, spec, (size_t)(colon - spec));
	host[colon - spec] = '\0';
	long port = strtol(colon + 1, NULL, 10);
	memset(ss, 0, sizeof *ss);
	char *h = host;
	if (h[0] == '[') {
		h++;
		h[strlen(h) - 1] = '\0';
	}
	struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
	if (inet_pton(AF_INET, h, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons((uint16_t)port);
		*len = sizeof *a4;
		return 0;
	}
	if (inet_pton(AF_INET6, h, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)port);
		*len = sizeof *a6;
		return 0;
	}
	return -1;
}

static int net_denied(int e)
{
	return e == ENETUNREACH || e == EHOSTUNREACH || e == ENETDOWN || e == EADDRNOTAVAIL ||
	       e == EPERM || e == EACCES;
}

static int check_net(const char *spec, int type)
{
	const char *name = type == SOCK_STREAM ? "tcp" : "udp";
	struct sockaddr_storage ss;
	socklen_t len = 0;
	if (parse_addr(spec, &ss, &len) != 0)
		return report(name, spec, 0, EINVAL);
	int s = socket(ss.ss_family, type | SOCK_CLOEXEC, 0);
	if (s < 0) {
		int e = errno;
		return report(name, spec, net_denied(e) || e == EAFNOSUPPORT, e);
	}
	int r;
	if (type == SOCK_STREAM) {
		struct timeval tv = {2, 0};
		setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
		r = connect(s, (struct sockaddr *)&ss, len);
	} else {
		r = (int)sendto(s, "ota", 3, 0, (struct sockaddr *)&ss, len);
	}
	int e = r < 0 ? errno : 0;
	close(s);
	return report(name, spec, r < 0 && net_denied(e), e);
}

static int check_absent(const char *path)
{
	struct stat st;
	if (lstat(path, &st) == 0)
		return report("absent", path, 0, 0);
	int e = errno;
	return report("absent", path, e == ENOENT || e == ENOTDIR, e);
}

static int check_loopback(void)
{
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0)
		return report("loopback", "127.0.0.1", 0, errno);
	struct sockaddr_in a;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t al = sizeof a;
	int e = 0;
	if (bind(l, (struct sockaddr *)&a, sizeof a) != 0 || listen(l, 1) != 0 ||
	    getsockname(l, (struct sockaddr *)&a, &al) != 0)
		e = errno;
	int c = -1;
	if (e == 0) {
		c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof a) != 0)
			e = errno;
	}
	if (c >= 0)
		close(c);
	close(l);
	return report("loopback", "127.0.0.1", e == 0, e);
}

static int check_status(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	if (f == NULL)
		return report("status", "/proc/self/status", 0, errno);
	char line[256];
	char nnp[32] = "", sec[32] = "", eff[32] = "", prm[32] = "", bnd[32] = "", amb[32] = "";
	while (fgets(line, sizeof line, f) != NULL) {
		char *v = strchr(line, ':');
		if (v == NULL)
			continue;
		*v++ = '\0';
		while (*v == ' ' || *v == '\t')
			v++;
		v[strcspn(v, "\n")] = '\0';
		char *dst = strcmp(line, "NoNewPrivs") == 0 ? nnp
		            : strcmp(line, "Seccomp") == 0  ? sec
		            : strcmp(line, "CapEff") == 0   ? eff
		            : strcmp(line, "CapPrm") == 0   ? prm
		            : strcmp(line, "CapBnd") == 0   ? bnd
		            : strcmp(line, "CapAmb") == 0   ? amb
		                                            : NULL;
		if (dst != NULL)
			snprintf(dst, 32, "%s", v);
	}
	fclose(f);
	const char *zero = "0000000000000000";
	int ok = strcmp(nnp, "1") == 0 && strcmp(sec, "2") == 0 && strcmp(eff, zero) == 0 &&
	         strcmp(prm, zero) == 0 && strcmp(bnd, zero) == 0 && strcmp(amb, zero) == 0;
	printf("{\"check\":\"status\",\"target\":\"self\",\"ok\":%s,\"no_new_privs\":\"%s\","
	       "\"seccomp\":\"%s\",\"cap_eff\":\"%s\",\"cap_prm\":\"%s\",\"cap_bnd\":\"%s\","
	       "\"cap_amb\":\"%s\"}\n",
	       ok ? "true" : "false", nnp, sec, eff, prm, bnd, amb);
	return ok;
}

/*
 * Set-user-ID and set-group-ID files. The task runs as uid 0 of the host
 * (no user namespace), without capabilities: it owns every file it makes
 * in a carve-out, and an owner may set S_ISUID (and S_ISGID, being in
 * group 0) on its own file without CAP_FSETID. nosuid on the container's
 * mounts does not reach the host: such a file stays in the repository,
 * owned by root, and any local user who can reach it runs it as root.
 * The runtime's profile is no reliable place to deny this by name: runc
 * and crun silently drop a name their libseccomp cannot resolve (fchmodat2,
 * Linux 6.6, came with libseccomp 2.5.5; Debian 12's 2.5.4 has a table up
 * to 6.7, and the next such call would pass), and openat2 passes its mode
 * in memory. So this filter goes by number: the chmod family with S_ISUID or S_ISGID
 * in the mode, open/openat/creat/mknod/mknodat creating a file with them,
 * give EPERM; openat2 gives ENOSYS (callers fall back to openat). The
 * tables cover every entry point of the host's CPU: x86_64 with its i386
 * (int 0x80) and x32 calls, aarch64 with arm.
 */
#define SETID_BITS 06000u
/*
 * Newer system calls. The runtime's profile is a deny-list by name: a call
 * the kernel gained after the list was reviewed is allowed, and one the
 * runtime's libseccomp cannot name cannot be listed at all (Debian 12's
 * 2.5.4 names up to futex_requeue, 456, Linux 6.7; this kind of machine
 * runs 6.18, with statmount and listmount (457, 458), the LSM calls, mseal,
 * the *xattrat calls, open_tree_attr (467: the mount family the profile
 * denies), file_getattr and file_setattr). This filter gives ENOSYS, the
 * answer of a kernel that predates the call, to every number from
 * NEWER_NR on: libc and programs fall back as they do on an older kernel.
 * Since Linux 5.1 (424, pidfd_send_signal) new calls take one number on
 * every architecture, so one bound serves x86_64, i386, x32, aarch64 and
 * arm; above it stay x32's own calls (512-547, bit 30 set) and arm's
 * private ones (0xf0000 on: set_tls, cacheflush). To allow a newer call,
 * review it and raise the bound (the profile's deny-list gains its name).
 */
#define NEWER_NR 457u
#define OPEN_CREATING 020000100u /* O_CREAT | __O_TMPFILE */

typedef struct setid_call {
	unsigned nr;
	int mode; /* argument holding the mode */
	int flags; /* argument holding open flags (mode used only when creating); -1: none */
	bool nosys; /* mode out of reach (openat2): ENOSYS */
} setid_call;

#if defined(__x86_64__)
#define SETID_ARCH AUDIT_ARCH_X86_64
#define SETID_ARCH2 AUDIT_ARCH_I386
/* chmod, fchmod, fchmodat, fchmodat2, open, openat, creat, mknod, mknodat, openat2 */
static const setid_call setid_calls[] = {
	{90, 1, -1, false},  {91, 1, -1, false},  {268, 2, -1, false}, {452, 2, -1, false},
	{2, 2, 1, false},    {257, 3, 2, false},  {85, 1, -1, false},  {133, 1, -1, false},
	{259, 2, -1, false}, {437, 0, -1, true},
};
static const setid_call setid_calls2[] = { /* i386 (int 0x80), same order */
	{15, 1, -1, false},  {94, 1, -1, false},  {306, 2, -1, false}, {452, 2, -1, false},
	{5, 2, 1, false},    {295, 3, 2, false},  {8, 1, -1, false},   {14, 1, -1, false},
	{297, 2, -1, false}, {437, 0, -1, true},
};
#elif defined(__aarch64__)
#define SETID_ARCH AUDIT_ARCH_AARCH64
#define SETID_ARCH2 AUDIT_ARCH_ARM
/* fchmod, fchmodat, fchmodat2, openat, mknodat, openat2 */
static const setid_call setid_calls[] = {
	{52, 1, -1, false}, {53, 2, -1, false}, {452, 2, -1, false},
	{56, 3, 2, false},  {33, 2, -1, false}, {437, 0, -1, true},
};
static const setid_call setid_calls2[] = { /* arm (EABI), in the x86_64 table's order */
	{15, 1, -1, false},  {94, 1, -1, false}, {333, 2, -1, false}, {452, 2, -1, false},
	{5, 2, 1, false},    {322, 3, 2, false}, {8, 1, -1, false},   {14, 1, -1, false},
	{324, 2, -1, false}, {437, 0, -1, true},
};
#endif

#if defined(SETID_ARCH)
#define SECCOMP_ARG_LO(i) \
	((__u32)(offsetof(struct seccomp_data, args) + (size_t)(i) * sizeof(__u64) + \
	         (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__ ? 4u : 0u)))

/* Appends the bound on newer calls (NEWER_NR): A holds the number; numbers
 * in [hole_lo, hole_hi) (an architecture's own calls above the common
 * ones; hole_lo == hole_hi: none) go on to the next check. */
static size_t newer_block(struct sock_filter *f, size_t n, __u32 hole_lo, __u32 hole_hi)
{
	if (hole_lo == hole_hi) {
		f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, NEWER_NR, 0, 1);
	} else {
		f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, NEWER_NR, 0, 3);
		f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, hole_hi, 1, 0);
		f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, hole_lo, 1, 0);
	}
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & 0xffff));
	return n;
}

/* Appends the checks of one architecture's calls: A holds the number. */
static size_t setid_block(struct sock_filter *f, size_t n, const setid_call *c, size_t nc)
{
	for (size_t i = 0; i < nc; i++) {
		if (c[i].nosys) {
			f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, c[i].nr, 0, 1);
			f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
			                                      SECCOMP_RET_ERRNO | (ENOSYS & 0xffff));
			continue;
		}
		bool open = c[i].flags >= 0;
		f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, c[i].nr, 0,
		                                      open ? 6 : 4);
		if (open) {
			f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			                                      SECCOMP_ARG_LO(c[i].flags));
			f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, OPEN_CREATING,
			                                      0, 3);
		}
		f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, SECCOMP_ARG_LO(c[i].mode));
		f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, SETID_BITS, 0, 1);
		f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
		f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	}
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	return n;
}
#endif

/* Installs the canary's own filter, set-id files and the NEWER_NR bound
 * (no_new_privs is already set by the runtime); -1 when it cannot: the
 * setid and listmount checks then fail and the run is refused. */
static int own_filter(void)
{
#if defined(SETID_ARCH)
	struct sock_filter f[16 + 7 * (sizeof setid_calls / sizeof setid_calls[0] +
	                               sizeof setid_calls2 / sizeof setid_calls2[0])];
	size_t n = 0;
	f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
	                                      offsetof(struct seccomp_data, arch));
	size_t jump2 = n++; /* the second architecture's block, patched below */
	f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
	                                      offsetof(struct seccomp_data, nr));
#if defined(__x86_64__)
	/* x32 calls carry bit 30; their numbers of these calls are the same */
	f[n++] = (struct sock_filter)BPF_STMT(BPF_ALU | BPF_AND | BPF_K, ~0x40000000u);
	n = newer_block(f, n, 512, 548); /* x32's own calls */
#else
	n = newer_block(f, n, 0, 0);
#endif
	n = setid_block(f, n, setid_calls, sizeof setid_calls / sizeof setid_calls[0]);
	size_t second = n;
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SETID_ARCH2, 1, 0);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
	                                      offsetof(struct seccomp_data, nr));
#if defined(__x86_64__)
	n = newer_block(f, n, 0, 0);
#else
	n = newer_block(f, n, 0xf0000, 0xf0100); /* arm's private calls */
#endif
	n = setid_block(f, n, setid_calls2, sizeof setid_calls2 / sizeof setid_calls2[0]);
	/* arch == SETID_ARCH: fall through to the first block; else to the second */
	f[jump2] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SETID_ARCH, 0,
	                                        (unsigned char)(second - jump2 - 1));
	struct sock_fprog prog = {(unsigned short)n, f};
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
#else
	return -1;
#endif
}

static int check_syscalls(void)
{
	int all = 1;
	/* a target that does not exist: denied by seccomp (EPERM) before the
	 * lookup; anywhere else (the canary run by hand as root) it mounts
	 * nothing (ENOENT) */
	static const char nowhere[] = "/proc/ota-canary-nowhere";
	int r = mount("none", nowhere, "tmpfs", 0, NULL);
	all &= report("syscall", "mount", r != 0 && (errno == EPERM || errno == EACCES), r != 0 ? errno : 0);
	r = unshare(CLONE_NEWUSER);
	all &= report("syscall", "unshare_user", r != 0, r != 0 ? errno : 0);
	r = unshare(CLONE_NEWNS);
	all &= report("syscall", "unshare_mnt", r != 0, r != 0 ? errno : 0);
	long p = ptrace(PTRACE_TRACEME, 0, NULL, NULL);
	all &= report("syscall", "ptrace", p != 0, p != 0 ? errno : 0);
	long u = syscall(SYS_io_uring_setup, 1, NULL);
	all &= report("syscall", "io_uring_setup", u < 0 && errno != EFAULT, u < 0 ? errno : 0);
	int s = socket(AF_VSOCK, SOCK_STREAM, 0);
	int e = s < 0 ? errno : 0;
	if (s >= 0)
		close(s);
	all &= report("syscall", "af_vsock", s < 0, e);
	/* NET-08: raw and packet sockets need CAP_NET_RAW, which is not granted */
	s = socket(AF_INET, SOCK_RAW, IPPROTO_ICMP);
	e = s < 0 ? errno : 0;
	if (s >= 0)
		close(s);
	all &= report("syscall", "raw_socket", s < 0, e);
	s = socket(AF_PACKET, SOCK_RAW, 0);
	e = s < 0 ? errno : 0;
	if (s >= 0)
		close(s);
	all &= report("syscall", "packet_socket", s < 0, e);
	/* set-id files (own_filter): EPERM before the path is looked up, so
	 * the same path shows the filter without making anything */
	r = chmod(nowhere, 04755);
	all &= report("syscall", "chmod_setid", r != 0 && errno == EPERM, r != 0 ? errno : 0);
	r = (int)syscall(452, AT_FDCWD, nowhere, 02755, 0); /* fchmodat2 */
	all &= report("syscall", "fchmodat2_setid", r != 0 && errno == EPERM, r != 0 ? errno : 0);
	r = open(nowhere, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 04755);
	e = r < 0 ? errno : 0;
	if (r >= 0)
		close(r);
	all &= report("syscall", "open_setid", r < 0 && e == EPERM, e);
	r = mknod(nowhere, S_IFREG | 02755, 0);
	all &= report("syscall", "mknod_setid", r != 0 && errno == EPERM, r != 0 ? errno : 0);
	/* newer than the profile's review (NEWER_NR): ENOSYS whether the kernel
	 * has it (6.8 on) or not; an unfiltered 6.8 answers EFAULT or EINVAL */
	long m = syscall(458 /* listmount */, NULL, NULL, 0, 0);
	all &= report("syscall", "listmount", m < 0 && errno == ENOSYS, m < 0 ? errno : 0);
	return all;
}

static int run_checks(int argc, char **argv)
{
	int all = 1;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		int ok;
		if (strncmp(a, "deny:", 5) == 0)
			ok = check_deny(a + 5);
		else if (strncmp(a, "allow:", 6) == 0)
			ok = check_allow(a + 6);
		else if (strncmp(a, "tcp:", 4) == 0)
			ok = check_net(a + 4, SOCK_STREAM);
		else if (strncmp(a, "udp:", 4) == 0)
			ok = check_net(a + 4, SOCK_DGRAM);
		else if (strncmp(a, "absent:", 7) == 0)
			ok = check_absent(a + 7);
		else if (strcmp(a, "loopback") == 0)
			ok = check_loopback();
		else if (strcmp(a, "status") == 0)
			ok = check_status();
		else if (strcmp(a, "syscalls") == 0)
			ok = check_syscalls();
		else
			ok = report("unknown", a, 0, EINVAL);
		all = all && ok;
	}
	return all;
}

static int gate(int argc, char **argv)
{
	int n = 0;
	while (n < argc && strcmp(argv[n], "--") != 0)
		n++;
	if (n >= argc - 1) {
		fprintf(stderr, "ota-oci-canary: gate: no task after --\n");
		return 125;
	}
	char go = 0;
	ssize_t r;
	do
		r = read(4, &go, 1);
	while (r < 0 && errno == EINTR);
	if (r != 1 || go != 'C')
		return 125; /* not started: nothing ran in the boundary */
	if (own_filter() != 0)
		fprintf(stderr, "ota-oci-canary: gate: own seccomp filter (set-id, newer calls): %s\n", strerror(errno));
	/* the report goes to descriptor 3; stdout stays the task's */
	int saved = dup(1);
	if (saved < 0 || dup2(3, 1) < 0) {
		fprintf(stderr, "ota-oci-canary: gate: no report descriptor\n");
		return 125;
	}
	(void)run_checks(n, argv);
	fflush(stdout);
	if (dup2(saved, 1) < 0)
		return 125;
	close(saved);
	close(3);
	go = 0;
	do
		r = read(4, &go, 1);
	while (r < 0 && errno == EINTR);
	close(4);
	if (r != 1 || go != 'G')
		return 125; /* no-go: the task never runs */
	char **task = argv + n + 1;
	execvp(task[0], task);
	int e = errno;
	fprintf(stderr, "ota-oci-canary: exec %s: %s\n", task[0], strerror(e));
	return e == ENOENT ? 127 : 126;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "gate") == 0)
		return gate(argc - 2, argv + 2);
	if (own_filter() != 0)
		fprintf(stderr, "ota-oci-canary: own seccomp filter (set-id, newer calls): %s\n", strerror(errno));
	int all = run_checks(argc - 1, argv + 1);
	fflush(stdout);
	return all ? 0 : 1;
}
