/*
 * provider-oci/pidns.c - SIGKILL to every process of a container's pid
 * namespace, through pidfds, without forking and without the runtime.
 *
 * Killing a pid namespace's init makes the kernel kill the rest, but only
 * once the init acts on its SIGKILL. A task forking as fast as it can
 * (a fork bomb against its pids limit) keeps the init and its other
 * processes in uninterruptible waits in fork (dup_mmap, on the lock of the
 * one binary every copy maps), and on a loaded machine the init took more
 * than ten seconds to die. Each process signalled itself stops forking at
 * its next check for a fatal signal, so the lock frees and the init goes.
 * `runtime kill --all` would do the same, but it must fork, and a task that
 * filled the pid space leaves nothing to fork with.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "oci_internal.h"

/* The link /proc/PID/ns/pid reads ("pid:[INODE]"), relative to proc_fd. */
static bool ns_link(int proc_fd, const char *pid, char out[OCI_PIDNS_LEN])
{
	char p[64];
	if (snprintf(p, sizeof p, "%s/ns/pid", pid) >= (int)sizeof p)
		return false;
	ssize_t n = readlinkat(proc_fd, p, out, OCI_PIDNS_LEN - 1);
	if (n <= 0 || n >= OCI_PIDNS_LEN - 1)
		return false;
	out[n] = '\0';
	return strncmp(out, "pid:[", 5) == 0;
}

bool oci_pidns_of(int pfd, long pid, char ns[OCI_PIDNS_LEN])
{
	ns[0] = '\0';
	if (pfd < 0 || pid <= 0)
		return false;
	int proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (proc_fd < 0)
		return false;
	char self[OCI_PIDNS_LEN], num[24], got[OCI_PIDNS_LEN];
	snprintf(num, sizeof num, "%ld", pid);
	bool ok = ns_link(proc_fd, "self", self) && ns_link(proc_fd, num, got) &&
	          /* the pidfd's process is alive after the read: the pid was its */
	          syscall(SYS_pidfd_send_signal, pfd, 0, NULL, 0) == 0 &&
	          /* never this process's own namespace */
	          strcmp(self, got) != 0;
	close(proc_fd);
	if (ok)
		snprintf(ns, OCI_PIDNS_LEN, "%s", got);
	return ok;
}

size_t oci_pidns_kill(const char *ns, long except)
{
	if (ns == NULL || strncmp(ns, "pid:[", 5) != 0)
		return 0;
	DIR *d = opendir("/proc");
	if (d == NULL)
		return 0;
	int proc_fd = dirfd(d);
	char self[OCI_PIDNS_LEN];
	if (!ns_link(proc_fd, "self", self) || strcmp(self, ns) == 0) {
		closedir(d);
		return 0;
	}
	size_t n = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		const char *name = de->d_name;
		char *end = NULL;
		errno = 0;
		long pid = strtol(name, &end, 10);
		if (name[0] < '1' || name[0] > '9' || *end != '\0' || errno != 0 || pid > INT_MAX ||
		    pid == except)
			continue;
		char got[OCI_PIDNS_LEN];
		if (!ns_link(proc_fd, name, got) || strcmp(got, ns) != 0)
			continue;
		int pfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
		if (pfd < 0)
			continue;
		/* read again with the pidfd held: a pid reused in between by a
		 * process elsewhere reads another namespace and is left alone */
		if (ns_link(proc_fd, name, got) && strcmp(got, ns) == 0 &&
		    syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0) == 0)
			n++;
		close(pfd);
	}
	closedir(d);
	return n;
}

/* Whether the text of /proc/PID/cgroup (n bytes) has a line whose path's
 * last component is exactly id: a cgroup runc or crun made for the
 * container id (ids are "ota-" and 24 random hex digits, nothing else
 * makes such a directory). */
static bool cgroup_names(const char *text, size_t n, const char *id)
{
	size_t idl = strlen(id);
	const char *p = text, *end = text + n;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl != NULL ? nl : end;
		/* "HIERARCHY:CONTROLLERS:PATH": the path follows the second ':' */
		const char *c1 = memchr(p, ':', (size_t)(le - p));
		const char *c2 = c1 != NULL ? memchr(c1 + 1, ':', (size_t)(le - c1 - 1)) : NULL;
		if (c2 != NULL && (size_t)(le - c2 - 1) > idl && le[-(ptrdiff_t)idl - 1] == '/' &&
		    memcmp(le - idl, id, idl) == 0)
			return true;
		p = le + 1;
	}
	return false;
}

bool oci_pidns_kill_container(const char *id, long pid, int wait_ms, size_t *swept,
                              bool *proved)
{
	*swept = 0;
	*proved = false;
	if (id == NULL || !oci_container_id_valid(id) || pid <= 1 || pid > INT_MAX)
		return false;
	int pfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
	if (pfd < 0)
		return false;
	char path[64], ns[OCI_PIDNS_LEN];
	snprintf(path, sizeof path, "/proc/%ld/cgroup", pid);
	uint8_t *cg = NULL;
	size_t cgn = 0;
	ota_error e;
	ota_error_clear(&e);
	/* both read after the pidfd was opened and before oci_pidns_of finds
	 * its process alive: they are that process's */
	bool ok = oci_proc_read(path, 64u * 1024u, &cg, &cgn, &e) == OTA_OK &&
	          cgroup_names((const char *)cg, cgn, id) && oci_pidns_of(pfd, pid, ns);
	free(cg);
	if (!ok) {
		close(pfd);
		return false;
	}
	*proved = true;
	bool gone = false;
	for (int waited = 0;; waited += 100) {
		*swept += oci_pidns_kill(ns, pid);
		(void)syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0);
		struct pollfd pf = {pfd, POLLIN, 0};
		int r = poll(&pf, 1, 100);
		if (r > 0 && (pf.revents & POLLIN) != 0) {
			gone = true;
			break;
		}
		if (waited >= wait_ms)
			break;
	}
	close(pfd);
	return gone;
}
