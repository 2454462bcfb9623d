/*
 * The OCI runtime driven through its CLI. crun 1.8.1 refuses hybrid cgroup
 * hosts, so each crun command runs in a private mount namespace in which the
 * cgroup2 mount is detached (research/sandbox-anchors-report.md section 0);
 * the runner's own namespace is never changed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/openat2.h>

#include "oci_internal.h"
#include "procfs.h"
#include "ota/json.h"
#include "ota/limits.h"

static bool find_in_path(const char *name, char *out, size_t cap)
{
	if (strchr(name, '/') != NULL) {
		if (access(name, X_OK) != 0)
			return false;
		snprintf(out, cap, "%s", name);
		return true;
	}
	const char *path = getenv("PATH");
	if (path == NULL || path[0] == '\0')
		path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	while (*path != '\0') {
		const char *e = strchr(path, ':');
		size_t len = e != NULL ? (size_t)(e - path) : strlen(path);
		int n = snprintf(out, cap, "%.*s/%s", (int)len, path, name);
		if (n > 0 && (size_t)n < cap && access(out, X_OK) == 0)
			return true;
		path += len;
		if (*path == ':')
			path++;
	}
	return false;
}

/* The directory fd (named where) is one a runtime's or the runner's state
 * may live in: a directory owned by root (or by the caller, when not root)
 * that neither group nor others may write; else code. */
static ota_err dir_owner_check(int fd, ota_err code, const char *where, ota_error *err)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return ota_error_set(err, OTA_ERR_IO, where, "fstat: %s", strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return ota_error_set(err, code, where, "not a directory");
	uid_t me = geteuid();
	if (st.st_uid != 0 && st.st_uid != me)
		return ota_error_set(err, code, where, "owned by uid %u, not by root%s",
		                     (unsigned)st.st_uid, me != 0 ? " or the caller" : "");
	if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
		return ota_error_set(err, code, where, "writable by group or others (mode %04o)",
		                     (unsigned)(st.st_mode & 07777));
	return OTA_OK;
}

ota_err oci_dir_walk(const char *path, bool create, int *fd, ota_error *err)
{
	*fd = -1;
	size_t len = path != NULL ? strlen(path) : 0;
	if (len == 0 || len >= OTA_MAX_PATH_BYTES)
		return ota_error_set(err, OTA_ERR_USAGE, path != NULL ? path : "path",
		                     len == 0 ? "empty directory path" : "directory path too long");
	int cur = open(path[0] == '/' ? "/" : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cur < 0)
		return ota_error_set(err, OTA_ERR_IO, path, "cannot open %s: %s",
		                     path[0] == '/' ? "/" : "the working directory", strerror(errno));
	char where[OTA_MAX_PATH_BYTES];
	size_t i = 0;
	while (i < len) {
		while (i < len && path[i] == '/')
			i++;
		if (i == len)
			break;
		size_t j = i;
		while (j < len && path[j] != '/')
			j++;
		char name[NAME_MAX + 1];
		size_t nl = j - i;
		memcpy(where, path, j); /* the path up to this component */
		where[j] = '\0';
		if (nl > NAME_MAX) {
			close(cur);
			return ota_error_set(err, OTA_ERR_USAGE, where, "component too long");
		}
		memcpy(name, path + i, nl);
		name[nl] = '\0';
		if (create && mkdirat(cur, name, 0700) != 0 && errno != EEXIST) {
			int e = errno;
			close(cur);
			return ota_error_set(err, OTA_ERR_IO, where, "mkdir: %s", strerror(e));
		}
		int next = openat(cur, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0) {
			int e = errno;
			struct stat st;
			bool link = fstatat(cur, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
			close(cur);
			if (link)
				return ota_error_set(err, OTA_ERR_OCI_RUNTIME_DIR_UNSAFE, where,
				                     "is a symlink: not followed");
			if (e == ENOENT)
				return ota_error_set(err, OTA_ERR_NOT_FOUND, where, "does not exist");
			if (e == ENOTDIR || e == ELOOP)
				return ota_error_set(err, OTA_ERR_OCI_RUNTIME_DIR_UNSAFE, where,
				                     "not a directory");
			return ota_error_set(err, OTA_ERR_IO, where, "cannot open: %s", strerror(e));
		}
		close(cur);
		cur = next;
		i = j;
	}
	*fd = cur;
	return OTA_OK;
}

ota_err oci_rt_init(oci_rt *rt, const ota_oci_runtime_opts *o, ota_error *err)
{
	memset(rt, 0, sizeof *rt);
	rt->kind = o != NULL ? o->kind : OTA_OCI_RUNC;
	if (rt->kind != OTA_OCI_RUNC && rt->kind != OTA_OCI_CRUN)
		return ota_error_set(err, OTA_ERR_USAGE, "runtime", "unknown runtime");
	const char *bin = o != NULL && o->binary != NULL ? o->binary : oci_rt_name(rt->kind);
	if (!find_in_path(bin, rt->bin, sizeof rt->bin))
		return ota_error_set(err, OTA_ERR_OCI_RUNTIME_MISSING, bin,
		                     "runtime binary not found (scripts/install-deps.sh installs it)");
	const char *root = o != NULL && o->root != NULL
	                           ? o->root
	                           : (rt->kind == OTA_OCI_CRUN ? "/run/ota/crun" : "/run/ota/runc");
	int n = snprintf(rt->root, sizeof rt->root, "%s", root);
	if (n < 0 || (size_t)n >= sizeof rt->root || root[0] != '/')
		return ota_error_set(err, OTA_ERR_USAGE, root, "runtime root must be an absolute path");
	/*
	 * The runtime keeps every container's state (runc's state.json with
	 * the init pid, exec.fifo) below its root: a root redirected by a
	 * symlink, or one another user can write, lets that user forge or
	 * hide the state every kill, delete and confirmation reads. Missing
	 * components are made 0700 beneath descriptors, nothing is followed,
	 * and the root itself must be root's (or the caller's) and not
	 * group/other-writable. The runtime is handed the path, so rt_cmd
	 * checks before each command that the path still names this directory.
	 */
	int fd = -1;
	ota_err rc = oci_dir_walk(rt->root, true, &fd, err);
	if (rc == OTA_OK)
		rc = dir_owner_check(fd, OTA_ERR_OCI_RUNTIME_DIR_UNSAFE, rt->root, err);
	struct stat st;
	if (rc == OTA_OK && fstat(fd, &st) != 0)
		rc = ota_error_set(err, OTA_ERR_IO, rt->root, "fstat: %s", strerror(errno));
	if (fd >= 0)
		close(fd);
	if (rc != OTA_OK)
		return rc;
	rt->root_dev = st.st_dev;
	rt->root_ino = st.st_ino;
	return OTA_OK;
}

/* The runtime root path still names the directory oci_rt_init checked (no
 * symlink swapped in since, at the root or above it). */
static ota_err rt_root_verify(const oci_rt *rt, ota_error *err)
{
	struct stat st;
	if (stat(rt->root, &st) != 0)
		return ota_error_set(err, OTA_ERR_OCI_RUNTIME_DIR_UNSAFE, rt->root,
		                     "the runtime root no longer resolves: %s", strerror(errno));
	if (!S_ISDIR(st.st_mode) || st.st_dev != rt->root_dev || st.st_ino != rt->root_ino)
		return ota_error_set(err, OTA_ERR_OCI_RUNTIME_DIR_UNSAFE, rt->root,
		                     "the runtime root path resolves to another directory than the"
		                     " one checked");
	return OTA_OK;
}

ota_err oci_rt_cmd(const oci_rt *rt, const char *const *args, int out_fd, int err_fd,
                   char *cap_out, size_t cap_out_len, char *cap_err, size_t cap_err_len,
                   int *status, ota_error *err)
{
	return oci_rt_cmd_fds(rt, args, out_fd, err_fd, NULL, 0, cap_out, cap_out_len, cap_err,
	                      cap_err_len, status, err);
}

int oci_rt_deadline_seconds(const oci_rt *rt, const char *cmd)
{
	if (rt->timeout_seconds > 0 && rt->timeout_seconds <= OTA_OCI_RT_TIMEOUT_MAX)
		return rt->timeout_seconds;
	if (cmd == NULL)
		return OTA_OCI_RT_TIMEOUT_QUICK;
	if (strcmp(cmd, "run") == 0 || strcmp(cmd, "create") == 0)
		return OTA_OCI_RT_TIMEOUT_CREATE;
	if (strcmp(cmd, "start") == 0 || strcmp(cmd, "exec") == 0)
		return OTA_OCI_RT_TIMEOUT_START;
	if (strcmp(cmd, "delete") == 0)
		return OTA_OCI_RT_TIMEOUT_DELETE;
	return OTA_OCI_RT_TIMEOUT_QUICK; /* state, kill, --version */
}

/* A command that moves a run forward: the caller's cancel flag ends it.
 * The cleanup commands (state, kill, delete) are bounded by their
 * deadline only: an interrupted run still removes its container. */
static bool rt_cmd_cancellable(const char *cmd)
{
	return cmd != NULL && (strcmp(cmd, "run") == 0 || strcmp(cmd, "create") == 0 ||
	                       strcmp(cmd, "start") == 0 || strcmp(cmd, "exec") == 0 ||
	                       strcmp(cmd, "--version") == 0);
}

static double rt_mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

/* oci_rt_cmd_fds; *out_len (may be NULL) is the number of bytes captured
 * into cap_out (at most cap_out_len - 1: the rest of a longer output is
 * read and dropped), NUL bytes included. */
static ota_err rt_cmd(const oci_rt *rt, const char *const *args, int out_fd, int err_fd,
                      const int *extra, size_t n_extra, char *cap_out, size_t cap_out_len,
                      size_t *out_len, char *cap_err, size_t cap_err_len, int *status,
                      ota_error *err)
{
	if (out_len != NULL)
		*out_len = 0;
	if (n_extra > 8)
		return ota_error_set(err, OTA_ERR_INTERNAL, "runtime", "too many preserved fds");
	*status = -1;
	if (cap_out != NULL && cap_out_len > 0)
		cap_out[0] = '\0';
	if (cap_err != NULL && cap_err_len > 0)
		cap_err[0] = '\0';
	ota_err vrc = rt_root_verify(rt, err);
	if (vrc != OTA_OK)
		return vrc;
	const char *argv[64];
	size_t n = 0;
	argv[n++] = rt->bin;
	if (rt->kind == OTA_OCI_CRUN)
		argv[n++] = "--cgroup-manager=disabled";
	argv[n++] = "--root";
	argv[n++] = rt->root;
	for (size_t i = 0; args[i] != NULL; i++) {
		if (n + 1 >= sizeof argv / sizeof argv[0])
			return ota_error_set(err, OTA_ERR_INTERNAL, "runtime", "too many arguments");
		argv[n++] = args[i];
	}
	argv[n] = NULL;
	int po[2] = {-1, -1}, pe[2] = {-1, -1};
	if (out_fd < 0 && cap_out != NULL && pipe2(po, O_CLOEXEC) != 0)
		return ota_error_set(err, OTA_ERR_IO, "pipe", "%s", strerror(errno));
	if (err_fd < 0 && cap_err != NULL && pipe2(pe, O_CLOEXEC) != 0) {
		if (po[0] >= 0) {
			close(po[0]);
			close(po[1]);
		}
		return ota_error_set(err, OTA_ERR_IO, "pipe", "%s", strerror(errno));
	}
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		if (devnull >= 0)
			close(devnull);
		for (int i = 0; i < 2; i++) {
			if (po[i] >= 0)
				close(po[i]);
			if (pe[i] >= 0)
				close(pe[i]);
		}
		return ota_error_set(err, OTA_ERR_IO, "fork", "%s", strerror(e));
	}
	if (pid == 0) {
		/* child: only async-signal-safe calls until exec. A runtime command
		 * never outlives the runner: a killed runner must not leave a
		 * `create` running on that later makes a container no lease covers. */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
			_exit(125);
		/* its own process group: at the deadline (or an interruption) the
		 * runner kills the command with everything it started */
		if (setpgid(0, 0) != 0)
			_exit(125);
		int o = out_fd >= 0 ? out_fd : po[1] >= 0 ? po[1] : devnull;
		int e = err_fd >= 0 ? err_fd : pe[1] >= 0 ? pe[1] : devnull;
		/* the preserved descriptors land on 3.. (moved above the range
		 * first so that none is overwritten before it is copied) */
		int hi[8];
		for (size_t i = 0; i < n_extra; i++) {
			hi[i] = fcntl(extra[i], F_DUPFD_CLOEXEC, 64);
			if (hi[i] < 0)
				_exit(127);
		}
		if (dup2(devnull, 0) < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
			_exit(127);
		for (size_t i = 0; i < n_extra; i++)
			if (dup2(hi[i], 3 + (int)i) < 0)
				_exit(127);
		syscall(SYS_close_range, 3U + (unsigned)n_extra, ~0U, 0U);
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		if (rt->kind == OTA_OCI_CRUN) {
			if (unshare(CLONE_NEWNS) != 0)
				_exit(126);
			if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
				_exit(126);
			(void)umount2("/sys/fs/cgroup/unified", MNT_DETACH);
		}
		char *const *av;
		const char **avp = argv;
		memcpy(&av, &avp, sizeof av); /* execv takes char *const[] */
		execv(rt->bin, av);
		_exit(127);
	}
	(void)setpgid(pid, pid); /* also here: no window before the child's own call */
	if (devnull >= 0)
		close(devnull);
	if (po[1] >= 0)
		close(po[1]);
	if (pe[1] >= 0)
		close(pe[1]);
	size_t lo = 0, le = 0;
	const char *cmd = args[0];
	int limit_s = oci_rt_deadline_seconds(rt, cmd);
	bool cancellable = rt->cancel != NULL && rt_cmd_cancellable(cmd);
	double t0 = rt_mono_ms(), kill_at = 0;
	enum { RT_RUNNING, RT_TIMED_OUT, RT_INTERRUPTED } why = RT_RUNNING;
	bool exited = false, reap_failed = false;
	int st = 0;
	/* Read both pipes until EOF and reap the command, polling in short
	 * slices: the deadline and the cancel flag are looked at while the
	 * runtime runs, not once it returns. The command's pidfd (when the
	 * kernel has pidfd_open) wakes the poll at its exit, so a command
	 * that ends is reaped at once, not at the next slice. */
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	struct pollfd pf[3];
	int open_n = 0;
	if (po[0] >= 0)
		pf[open_n++] = (struct pollfd){po[0], POLLIN, 0};
	if (pe[0] >= 0)
		pf[open_n++] = (struct pollfd){pe[0], POLLIN, 0};
	while (!exited || (open_n > 0 && why == RT_RUNNING)) {
		nfds_t nf = (nfds_t)open_n;
		if (!exited && pidfd >= 0)
			pf[nf++] = (struct pollfd){pidfd, POLLIN, 0};
		int r = poll(pf, nf, 50);
		if (r < 0 && errno != EINTR)
			r = 0; /* the deadline still ends the wait */
		for (int i = 0; r > 0 && i < open_n; i++) {
			if (pf[i].revents == 0)
				continue;
			char tmp[4096];
			ssize_t got = read(pf[i].fd, tmp, sizeof tmp);
			if (got < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (got <= 0) {
				close(pf[i].fd);
				pf[i] = pf[open_n - 1];
				open_n--;
				i--;
				continue;
			}
			bool is_out = pf[i].fd == po[0];
			char *b = is_out ? cap_out : cap_err;
			size_t cap = is_out ? cap_out_len : cap_err_len;
			size_t *len = is_out ? &lo : &le;
			if (b != NULL && *len + 1 < cap) {
				size_t take = (size_t)got;
				if (take > cap - 1 - *len)
					take = cap - 1 - *len;
				memcpy(b + *len, tmp, take);
				*len += take;
				b[*len] = '\0';
			}
		}
		if (!exited) {
			pid_t w = waitpid(pid, &st, WNOHANG);
			if (w == pid) {
				exited = true;
			} else if (w < 0 && errno != EINTR) {
				int e = errno;
				for (int i = 0; i < open_n; i++)
					close(pf[i].fd);
				if (pidfd >= 0)
					close(pidfd);
				(void)killpg(pid, SIGKILL);
				return ota_error_set(err, OTA_ERR_IO, "waitpid", "%s", strerror(e));
			}
		}
		double now = rt_mono_ms();
		if (why == RT_RUNNING) {
			if (cancellable && *rt->cancel != 0)
				why = RT_INTERRUPTED;
			else if (now - t0 >= (double)limit_s * 1000.0)
				why = RT_TIMED_OUT;
			if (why != RT_RUNNING) {
				/* the command with every process it started (a `runc init`
				 * blocked on a FIFO, a shell's child), unless it is
				 * already reaped: its pid may be another's by now */
				if (!exited) {
					(void)killpg(pid, SIGKILL);
					(void)kill(pid, SIGKILL);
				}
				kill_at = now;
			}
		} else if (!exited && now - kill_at > 5000) {
			reap_failed = true; /* unkillable (uninterruptible sleep): left */
			break;
		}
	}
	for (int i = 0; i < open_n; i++)
		close(pf[i].fd);
	if (pidfd >= 0)
		close(pidfd);
	if (out_len != NULL)
		*out_len = lo;
	if (why != RT_RUNNING) {
		*status = -1;
		const char *left = reap_failed ? "; it could not be reaped within 5 s" : "";
		if (why == RT_INTERRUPTED)
			return ota_error_set(err, OTA_ERR_OCI_INTERRUPTED, cmd,
			                     "interrupted by a signal while the runtime's %s command ran; "
			                     "its process group was killed%s",
			                     cmd, left);
		return ota_error_set(err, OTA_ERR_OCI_RUNTIME_TIMEOUT, cmd,
		                     "the runtime's %s command did not finish within %d s; its "
		                     "process group was killed%s",
		                     cmd, limit_s, left);
	}
	*status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	return OTA_OK;
}

ota_err oci_rt_cmd_fds(const oci_rt *rt, const char *const *args, int out_fd, int err_fd,
                       const int *extra, size_t n_extra, char *cap_out, size_t cap_out_len,
                       char *cap_err, size_t cap_err_len, int *status, ota_error *err)
{
	return rt_cmd(rt, args, out_fd, err_fd, extra, n_extra, cap_out, cap_out_len, NULL, cap_err,
	              cap_err_len, status, err);
}

/* The statuses runc and crun report (the OCI states, and runc's
 * "pausing" / "paused"). */
static bool state_status_known(const char *s)
{
	static const char *const known[] = {"creating", "created", "running",
	                                    "pausing",  "paused",  "stopped"};
	for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
		if (strcmp(s, known[i]) == 0)
			return true;
	return false;
}

ota_err oci_rt_state_parse(ota_bytes text, const char *id, char status_out[32], long *pid_out,
                           ota_error *err)
{
	status_out[0] = '\0';
	if (pid_out != NULL)
		*pid_out = 0;
	if (text.len > OTA_OCI_MAX_STATE_BYTES)
		return ota_error_set(err, OTA_ERR_OCI_RUNTIME_STATE_INVALID, id,
		                     "state output exceeds %u bytes", OTA_OCI_MAX_STATE_BYTES);
	json_t *v = NULL;
	ota_error je;
	ota_error_clear(&je);
	if (ota_json_parse(text, &v, &je) != OTA_OK)
		return ota_error_set(err, OTA_ERR_OCI_RUNTIME_STATE_INVALID, id,
		                     "state output is not strict JSON (%s at %s)",
		                     ota_err_name(je.code), je.where);
	ota_err rc = OTA_OK;
	const char *sid = json_string_value(json_object_get(v, "id"));
	const char *s = json_string_value(json_object_get(v, "status"));
	json_t *jp = json_object_get(v, "pid");
	json_int_t pid = json_is_integer(jp) ? json_integer_value(jp) : -1;
	if (!json_is_object(v))
		rc = ota_error_set(err, OTA_ERR_OCI_RUNTIME_STATE_INVALID, id,
		                   "state output is not a JSON object");
	else if (sid == NULL || strcmp(sid, id) != 0)
		rc = ota_error_set(err, OTA_ERR_OCI_RUNTIME_STATE_INVALID, "state.id",
		                   "state output is not about container %s", id);
	else if (s == NULL || !state_status_known(s))
		rc = ota_error_set(err, OTA_ERR_OCI_RUNTIME_STATE_INVALID, "state.status",
		                   "unknown container status");
	/* a live container's init pid is 1..INT_MAX (a pid_t); a stopped
	 * one's is 0 (runc and crun) or its last pid */
	else if (!json_is_integer(jp) || pid > INT_MAX ||
	         pid < (strcmp(s, "stopped") == 0 ? 0 : 1))
		rc = ota_error_set(err, OTA_ERR_OCI_RUNTIME_STATE_INVALID, "state.pid",
		                   "pid is not an integer in %d..%d for status %s",
		                   strcmp(s, "stopped") == 0 ? 0 : 1, INT_MAX, s);
	else {
		snprintf(status_out, 32, "%s", s);
		if (pid_out != NULL)
			*pid_out = (long)pid;
	}
	json_decref(v);
	return rc;
}

ota_err oci_rt_state(const oci_rt *rt, const char *id, bool *exists, char status_out[32],
                     long *pid_out, ota_error *err)
{
	*exists = false;
	status_out[0] = '\0';
	if (pid_out != NULL)
		*pid_out = 0;
	const char *args[] = {"state", id, NULL};
	/* one byte past the limit proves "too large"; the runtime's further
	 * output is read and dropped */
	size_t cap = OTA_OCI_MAX_STATE_BYTES + 2;
	char *out = malloc(cap);
	if (out == NULL)
		return ota_error_set(err, OTA_ERR_NOMEM, id, NULL);
	char er[2048];
	int st = 0;
	size_t len = 0;
	ota_err rc = rt_cmd(rt, args, -1, -1, NULL, 0, out, cap, &len, er, sizeof er, &st, err);
	if (rc == OTA_OK && st != 0) {
		/* runc: "container does not exist"; crun: "... No such file or directory" */
		if (strstr(er, "does not exist") == NULL && strstr(er, "No such file") == NULL &&
		    strstr(er, "not exist") == NULL)
			rc = ota_error_set(err, OTA_ERR_OCI_RUNTIME_FAILED, id, "state failed: %.200s",
			                   er);
	} else if (rc == OTA_OK) {
		char status[32];
		long pid = 0;
		rc = oci_rt_state_parse(ota_bytes_make(out, len), id, status, &pid, err);
		if (rc == OTA_OK) {
			*exists = true;
			snprintf(status_out, 32, "%s", status);
			if (pid_out != NULL)
				*pid_out = pid;
		}
	}
	free(out);
	return rc;
}

void oci_rt_version(const oci_rt *rt, char *out, size_t cap)
{
	char buf[1024];
	int st = 0;
	ota_error e;
	ota_error_clear(&e);
	/* --version must not carry --root for crun/runc? both accept global flags first. */
	const char *args[] = {"--version", NULL};
	out[0] = '\0';
	if (oci_rt_cmd(rt, args, -1, -1, buf, sizeof buf, NULL, 0, &st, &e) != OTA_OK || st != 0)
		return;
	char *nl = strchr(buf, '\n');
	if (nl != NULL)
		*nl = '\0';
	snprintf(out, cap, "%s", buf);
}

ota_err oci_proc_read(const char *path, size_t max, uint8_t **out, size_t *out_len, ota_error *err)
{
	*out = NULL;
	*out_len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return ota_error_set(err, OTA_ERR_IO, path, "cannot open: %s", strerror(errno));
	/* Room for max + 1 bytes at most: one byte past max proves "too large". */
	size_t cap = max + 2 < 16384 ? max + 2 : 16384;
	uint8_t *buf = malloc(cap);
	size_t len = 0;
	ota_err rc = buf != NULL ? OTA_OK : ota_error_set(err, OTA_ERR_NOMEM, path, NULL);
	while (rc == OTA_OK) {
		if (len + 1 >= cap) {
			size_t ncap = cap * 2 < max + 2 ? cap * 2 : max + 2;
			uint8_t *nb = realloc(buf, ncap);
			if (nb == NULL) {
				rc = ota_error_set(err, OTA_ERR_NOMEM, path, NULL);
				break;
			}
			buf = nb;
			cap = ncap;
		}
		ssize_t r = read(fd, buf + len, cap - len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			rc = ota_error_set(err, OTA_ERR_IO, path, "read failed: %s", strerror(errno));
		else if (r == 0)
			break;
		else if ((len += (size_t)r) > max)
			rc = ota_error_set(err, OTA_ERR_TOO_LARGE, path,
			                   "input exceeds the limit of %zu bytes", max);
	}
	close(fd);
	if (rc != OTA_OK) {
		free(buf);
		return rc;
	}
	buf[len] = '\0';
	*out = buf;
	*out_len = len;
	return OTA_OK;
}

bool oci_container_id_valid(const char *id)
{
	if (id == NULL || strncmp(id, OCI_ID_PREFIX, sizeof OCI_ID_PREFIX - 1) != 0)
		return false;
	const char *h = id + sizeof OCI_ID_PREFIX - 1;
	size_t n = 0;
	for (; h[n] != '\0'; n++)
		if (!((h[n] >= '0' && h[n] <= '9') || (h[n] >= 'a' && h[n] <= 'f')))
			return false;
	return n == OCI_ID_HEX_LEN;
}

const char *oci_state_dir(const ota_oci_run_opts *o)
{
	return o != NULL && o->state_dir != NULL ? o->state_dir : OTA_OCI_DEFAULT_STATE_DIR;
}

bool oci_bundle_path(const char *state_dir, const char *id, char *out, size_t cap)
{
	int n = snprintf(out, cap, "%s/bundles/%s", state_dir, id);
	if (n < 0 || (size_t)n >= cap) {
		if (cap > 0)
			out[0] = '\0';
		return false;
	}
	return true;
}

/* The directory fd (named where) is one the state may live in: a directory
 * owned by root (or by the caller, when not root) that neither group nor
 * others may write. */
static ota_err state_dir_check(int fd, const char *where, ota_error *err)
{
	return dir_owner_check(fd, OTA_ERR_OCI_STATE_DIR_UNSAFE, where, err);
}

/* The error for an open of path with O_NOFOLLOW | O_DIRECTORY that failed
 * with e (a symlink gives ENOTDIR or ELOOP: told apart by lstat). */
static ota_err state_open_error(int dirfd, const char *name, const char *where, int e,
                                ota_error *err)
{
	struct stat st;
	if (e == ENOENT)
		return ota_error_set(err, OTA_ERR_NOT_FOUND, where, "does not exist");
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
		return ota_error_set(err, OTA_ERR_OCI_STATE_DIR_UNSAFE, where,
		                     "is a symlink: not followed");
	if (e == ENOTDIR || e == ELOOP)
		return ota_error_set(err, OTA_ERR_OCI_STATE_DIR_UNSAFE, where, "not a directory");
	return ota_error_set(err, OTA_ERR_IO, where, "cannot open: %s", strerror(e));
}

ota_err oci_state_open(const char *state_dir, bool create, int *bundles_fd, ota_error *err)
{
	*bundles_fd = -1;
	char s[OTA_MAX_PATH_BYTES];
	size_t n = state_dir != NULL ? strlen(state_dir) : 0;
	while (n > 1 && state_dir[n - 1] == '/')
		n--; /* "STATE/" would follow a symlink STATE despite O_NOFOLLOW */
	if (n == 0 || n >= sizeof s)
		return ota_error_set(err, OTA_ERR_USAGE, state_dir != NULL ? state_dir : "state_dir",
		                     n == 0 ? "empty state directory" : "state directory path too long");
	memcpy(s, state_dir, n);
	s[n] = '\0';
	/* STATE itself: its parent is the operator's (made by nobody here) */
	if (create && mkdir(s, 0700) != 0 && errno != EEXIST && errno != ENOENT)
		return ota_error_set(err, OTA_ERR_IO, s, "mkdir: %s", strerror(errno));
	int sfd = open(s, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sfd < 0)
		return state_open_error(AT_FDCWD, s, s, errno, err);
	ota_err rc = state_dir_check(sfd, s, err);
	char where[OTA_MAX_PATH_BYTES + 16];
	snprintf(where, sizeof where, "%s/bundles", s);
	if (rc == OTA_OK && create && mkdirat(sfd, "bundles", 0700) != 0 && errno != EEXIST)
		rc = ota_error_set(err, OTA_ERR_IO, where, "mkdir: %s", strerror(errno));
	int bfd = -1;
	if (rc == OTA_OK) {
		bfd = openat(sfd, "bundles", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (bfd < 0)
			rc = state_open_error(sfd, "bundles", where, errno, err);
	}
	if (rc == OTA_OK)
		rc = state_dir_check(bfd, where, err);
	close(sfd);
	if (rc != OTA_OK) {
		if (bfd >= 0)
			close(bfd);
		return rc;
	}
	*bundles_fd = bfd;
	return OTA_OK;
}

ota_err oci_bundle_write(int dir_fd, const char *name, ota_bytes data, const char *where,
                         ota_error *err)
{
	int fd = openat(dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		if (errno == EEXIST)
			return ota_error_set(err, OTA_ERR_OCI_STATE_DIR_UNSAFE, where,
			                     "already exists: not overwritten");
		return ota_error_set(err, OTA_ERR_IO, where, "create: %s", strerror(errno));
	}
	size_t off = 0;
	while (off < data.len) {
		ssize_t w = write(fd, data.ptr + off, data.len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int e = w < 0 ? errno : EIO;
			close(fd);
			return ota_error_set(err, OTA_ERR_IO, where, "write: %s", strerror(e));
		}
		off += (size_t)w;
	}
	if (fsync(fd) != 0) {
		int e = errno;
		close(fd);
		return ota_error_set(err, OTA_ERR_IO, where, "fsync: %s", strerror(e));
	}
	if (close(fd) != 0)
		return ota_error_set(err, OTA_ERR_IO, where, "close: %s", strerror(errno));
	if (fsync(dir_fd) != 0)
		return ota_error_set(err, OTA_ERR_IO, where, "fsync of directory: %s", strerror(errno));
	return OTA_OK;
}

ota_err oci_bundle_create(int bundles_fd, const char *bundle, const char *id, int *dir_fd,
                          ota_error *err)
{
	*dir_fd = -1;
	if (!oci_container_id_valid(id))
		return ota_error_set(err, OTA_ERR_USAGE, bundle, "not a container id");
	if (mkdirat(bundles_fd, id, 0700) != 0) {
		if (errno == EEXIST)
			return ota_error_set(err, OTA_ERR_OCI_STATE_DIR_UNSAFE, bundle,
			                     "already exists (a fresh container id): not used");
		return ota_error_set(err, OTA_ERR_IO, bundle, "mkdir: %s", strerror(errno));
	}
	int dfd = openat(bundles_fd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return state_open_error(bundles_fd, id, bundle, errno, err);
	ota_err rc = state_dir_check(dfd, bundle, err);
	if (rc == OTA_OK && fsync(bundles_fd) != 0)
		rc = ota_error_set(err, OTA_ERR_IO, bundle, "fsync of bundles: %s", strerror(errno));
	if (rc != OTA_OK) {
		close(dfd);
		return rc;
	}
	*dir_fd = dfd;
	return OTA_OK;
}

ota_err oci_bundle_verify_path(int dir_fd, const char *bundle, ota_error *err)
{
	struct stat mine, named;
	if (fstat(dir_fd, &mine) != 0)
		return ota_error_set(err, OTA_ERR_IO, bundle, "fstat: %s", strerror(errno));
	if (stat(bundle, &named) != 0)
		return ota_error_set(err, OTA_ERR_OCI_STATE_DIR_UNSAFE, bundle,
		                     "the bundle path no longer resolves: %s", strerror(errno));
	if (named.st_dev != mine.st_dev || named.st_ino != mine.st_ino)
		return ota_error_set(err, OTA_ERR_OCI_STATE_DIR_UNSAFE, bundle,
		                     "the bundle path resolves to another directory than the one made");
	return OTA_OK;
}

bool oci_bundle_remove_at(int bundles_fd, const char *id)
{
	if (bundles_fd < 0 || !oci_container_id_valid(id))
		return false;
	int dfd = oci_openat2(bundles_fd, id, O_RDONLY | O_DIRECTORY | O_CLOEXEC,
	                      RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
	if (dfd < 0)
		return errno == ENOENT; /* a symlink (ELOOP) or a non-directory is left alone */
	/* Our own directory: config.json, the pid file and whatever a killed
	 * runtime left half-written (runc writes the pid file through a
	 * temporary name). Entries are unlinked, never followed; a directory
	 * in it is not ours, so the bundle then stays. */
	DIR *d = fdopendir(dfd);
	if (d != NULL) {
		struct dirent *de;
		while ((de = readdir(d)) != NULL)
			if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
				(void)unlinkat(dirfd(d), de->d_name, 0);
		closedir(d);
	} else {
		close(dfd);
	}
	bool gone = unlinkat(bundles_fd, id, AT_REMOVEDIR) == 0 || errno == ENOENT;
	if (gone)
		(void)fsync(bundles_fd);
	return gone;
}

bool oci_bundle_remove(const char *state_dir, const char *id)
{
	if (state_dir == NULL || !oci_container_id_valid(id))
		return false;
	/* The state directory as the runner checks it (no symlink at STATE or
	 * STATE/bundles, root's, not group/other-writable); nothing below it is
	 * followed through a symlink. */
	ota_error e;
	ota_error_clear(&e);
	int bfd = -1;
	ota_err rc = oci_state_open(state_dir, false, &bfd, &e);
	if (rc != OTA_OK)
		return rc == OTA_ERR_NOT_FOUND; /* no state directory: no bundle */
	bool gone = oci_bundle_remove_at(bfd, id);
	close(bfd);
	return gone;
}

/* true when pid no longer runs: gone, or a zombie its new parent has not
 * reaped yet (an exited process holds no namespace, mount or socket). */
static bool pid_exited(long pid)
{
	if (pid <= 0)
		return true;
	(void)waitpid((pid_t)pid, NULL, WNOHANG); /* ours when we are its subreaper */
	if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
		return true;
	char p[64], buf[512];
	snprintf(p, sizeof p, "/proc/%ld/stat", pid);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return true;
	char st;
	unsigned long long start;
	return oci_proc_stat_parse(buf, (size_t)n, &st, &start) && (st == 'Z' || st == 'X');
}

/*
 * What a creation the runtime never finished leaves in ROOT/ID when runc
 * is SIGKILLed (with the runner: PR_SET_PDEATHSIG) before it has renamed
 * state.json into place, i.e. while the runtime does not know the id yet.
 * runc 1.1 (seen by killing it after each step of `run --detach`, see
 * docs/oci-local.md): mkdir ROOT/ID; mknod exec.fifo; `runc init`
 * makes and unlinks runc.XXXXXX (mkstemp, the cloned binary's bind-mount
 * target); os.CreateTemp "state-" + digits, written, renamed to
 * state.json. These are the only names taken, each only as the file type
 * runc makes: anything else (a directory, a symlink, another name, a mount
 * point) keeps the whole directory.
 */
enum half_entry { HALF_NONE, HALF_FIFO, HALF_STATE_TMP, HALF_BIND_TMP };

static bool all_of(const char *s, size_t min, size_t max, bool alnum)
{
	size_t n = 0;
	for (; s[n] != '\0'; n++) {
		char c = s[n];
		bool ok = (c >= '0' && c <= '9') ||
		          (alnum && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')));
		if (!ok || n >= max)
			return false;
	}
	return n >= min;
}

static enum half_entry half_entry_kind(int dfd, const char *name, struct stat *fs)
{
	enum half_entry k = HALF_NONE;
	if (strcmp(name, "exec.fifo") == 0)
		k = HALF_FIFO;
	else if (strncmp(name, "state-", 6) == 0 && all_of(name + 6, 1, 20, false))
		k = HALF_STATE_TMP; /* Go's CreateTemp: a decimal random number */
	else if (strncmp(name, "runc.", 5) == 0 && all_of(name + 5, 6, 6, true))
		k = HALF_BIND_TMP; /* mkstemp's six letters and digits */
	if (k == HALF_NONE)
		return HALF_NONE;
	struct statx sx;
	if (statx(dfd, name, AT_SYMLINK_NOFOLLOW, STATX_TYPE | STATX_INO, &sx) != 0)
		return HALF_NONE;
	/*
	 * A mount point (runc.XXXXXX with runc's binary still bound on it, the
	 * `runc init` killed between its mount and umount) is not a file to
	 * unlink: the directory stays, unconfirmed.
	 */
	if ((sx.stx_attributes_mask & sx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0)
		return HALF_NONE; /* (a kernel before 5.8 does not say: unlinkat gives EBUSY) */
	if (fstatat(dfd, name, fs, AT_SYMLINK_NOFOLLOW) != 0)
		return HALF_NONE;
	if (k == HALF_FIFO ? !S_ISFIFO(fs->st_mode) : !S_ISREG(fs->st_mode))
		return HALF_NONE;
	return k;
}

/* true when some process holds a descriptor of (dev, ino): the runtime
 * still creating (runc keeps exec.fifo open O_PATH) or a `runc init`
 * (given it as _LIBCONTAINER_FIFOFD, held until it execs the process). Also
 * true when /proc or a process's descriptor table cannot be read (fails
 * closed); a process that exits meanwhile is skipped. */
static bool inode_held(dev_t dev, ino_t ino)
{
	DIR *pd = opendir("/proc");
	if (pd == NULL)
		return true;
	bool held = false;
	struct dirent *pe;
	while (!held && (pe = readdir(pd)) != NULL) {
		if (pe->d_name[0] < '1' || pe->d_name[0] > '9')
			continue;
		char p[300];
		snprintf(p, sizeof p, "%s/fd", pe->d_name);
		int ffd = openat(dirfd(pd), p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (ffd < 0) {
			held = errno != ENOENT && errno != ESRCH;
			continue;
		}
		DIR *fd_dir = fdopendir(ffd);
		if (fd_dir == NULL) {
			close(ffd);
			held = true;
			break;
		}
		struct dirent *fe;
		while (!held && (fe = readdir(fd_dir)) != NULL) {
			struct stat st;
			if (fe->d_name[0] != '.' &&
			    fstatat(dirfd(fd_dir), fe->d_name, &st, 0) == 0 && st.st_dev == dev &&
			    st.st_ino == ino)
				held = true;
		}
		closedir(fd_dir);
	}
	closedir(pd);
	return held;
}

/*
 * Removes ROOT/ID when it holds nothing but what a killed runc leaves
 * before state.json (above: exec.fifo, state-DIGITS, runc.XXXXXX, or
 * nothing), the runtime has just answered that it does not know the id,
 * and no process holds its exec.fifo. Every entry is checked first and
 * unlinked by name beneath the directory's descriptor (never followed),
 * then the directory itself: an entry that appears meanwhile makes the
 * rmdir fail. id must be a plain name. True when it removed it.
 */
static bool remove_half_built(const char *root, const char *id)
{
	if (id == NULL || id[0] == '\0' || id[0] == '.' || strchr(id, '/') != NULL)
		return false;
	int rfd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (rfd < 0)
		return false;
	int dfd = openat(rfd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (d == NULL && dfd >= 0)
		close(dfd);
	bool ok = d != NULL, fifo = false;
	struct stat fifo_st = {0};
	char names[8][32];
	size_t n = 0;
	struct dirent *de;
	while (ok && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		struct stat fs;
		enum half_entry k = half_entry_kind(dirfd(d), de->d_name, &fs);
		if (k == HALF_NONE || n == sizeof names / sizeof names[0] ||
		    strlen(de->d_name) >= sizeof names[0] || (k == HALF_FIFO && fifo)) {
			ok = false;
			break;
		}
		if (k == HALF_FIFO) {
			fifo = true;
			fifo_st = fs;
		}
		memcpy(names[n++], de->d_name, strlen(de->d_name) + 1); /* length checked */
	}
	if (ok && fifo && inode_held(fifo_st.st_dev, fifo_st.st_ino))
		ok = false;
	for (size_t i = 0; ok && i < n; i++)
		ok = unlinkat(dirfd(d), names[i], 0) == 0 || errno == ENOENT;
	bool removed = ok && unlinkat(rfd, id, AT_REMOVEDIR) == 0;
	if (d != NULL)
		closedir(d);
	close(rfd);
	return removed;
}

ota_err oci_finalize_container(const oci_rt *rt, const char *id, long pid,
                               const char *known_status, const json_t *cgroups,
                               json_t **cleanup_out, ota_error *err)
{
	*cleanup_out = NULL;
	bool exists = false;
	char status[32];
	long cur_pid = pid;
	ota_err rc = OTA_OK;
	/* A container whose init still runs is killed first without the
	 * runtime, once pid is proved to be one of its processes
	 * (oci_pidns_kill_container): asking the runtime its state and
	 * `runtime kill` fork, and a task that filled the host's pid space
	 * leaves nothing to fork with until it is gone; a task forking as fast
	 * as it can keeps its init from acting on a lone SIGKILL for seconds. */
	size_t swept = 0;
	bool proved = false, pidfd_gone = false;
	if ((known_status == NULL || strcmp(known_status, "stopped") != 0) && pid > 0 &&
	    !pid_exited(pid))
		pidfd_gone = oci_pidns_kill_container(id, pid, 10000, &swept, &proved);
	if (known_status != NULL && strcmp(known_status, "stopped") == 0) {
		exists = true; /* just inspected: stopped, the init is gone */
		snprintf(status, sizeof status, "%s", known_status);
	} else {
		rc = oci_rt_state(rt, id, &exists, status, &cur_pid, err);
		if (rc != OTA_OK) {
			/* what was done without the runtime; nothing is confirmed */
			*cleanup_out = json_pack("{s:b, s:b, s:I, s:b}", "pidns_proved", proved,
			                         "pidns_killed", proved && pidfd_gone, "pidns_signalled",
			                         (json_int_t)swept, "confirmed", 0);
			return rc;
		}
	}
	int st = 0;
	char er[2048];
	bool killed = false, deleted = false;
	if (exists && strcmp(status, "stopped") != 0) {
		const char *kargs[] = {"kill", id, "KILL", NULL};
		if (oci_rt_cmd(rt, kargs, -1, -1, NULL, 0, er, sizeof er, &st, err) == OTA_OK && st == 0)
			killed = true;
		/* wait for the init to go away (bounded) */
		for (int i = 0; i < 200 && !pid_exited(cur_pid); i++)
			usleep(10000);
	}
	if (exists) {
		const char *dargs_f[] = {"delete", "--force", id, NULL};
		const char *dargs_s[] = {"delete", id, NULL};
		const char *const *dargs = strcmp(status, "stopped") == 0 ? dargs_s : dargs_f;
		if (oci_rt_cmd(rt, dargs, -1, -1, NULL, 0, er, sizeof er, &st, err) == OTA_OK && st == 0)
			deleted = true;
	}
	bool half_built = !exists && remove_half_built(rt->root, id);
	/* Confirmation without another runtime process: `runc state` and
	 * `crun state` answer "does not exist" exactly when ROOT/ID (the state
	 * directory: runc's state.json, crun's status) is absent, and otherwise
	 * derive the status from the init pid. So: the state directory is gone
	 * (lstat gives ENOENT, not some other error), the runtime root itself is
	 * still there and readable (a vanished or unreadable root would make any
	 * id look absent), and the init pid is gone (reaped by us as subreaper,
	 * or a zombie/absent process: with the pid namespace's init gone, every
	 * process of the container is gone). */
	char dir[700];
	snprintf(dir, sizeof dir, "%s/%s", rt->root, id);
	struct stat sb, rb;
	bool root_ok = stat(rt->root, &rb) == 0 && S_ISDIR(rb.st_mode) &&
	               access(rt->root, R_OK | X_OK) == 0;
	bool dir_absent = root_ok && lstat(dir, &sb) != 0 && errno == ENOENT;
	bool still = !dir_absent;
	/* the caller's pid (a lease row's, for cleanup) and the one the
	 * runtime reported must both be gone: a wrong pid never confirms */
	long p = pid > 0 ? pid : cur_pid;
	bool pid_gone = pid_exited(p) && (cur_pid == p || pid_exited(cur_pid));
	bool gone = !still && dir_absent && pid_gone;
	/*
	 * Its cgroup directories (runc's; a killed creation leaves them), only
	 * once the container is confirmed gone, by rmdir only. One the kernel
	 * will not remove holds a process or a child cgroup: with the
	 * container's init gone every process of its pid namespace is gone, so
	 * that is something that escaped the kill (joined from outside, or a
	 * namespace entered by another way): not a confirmed removal.
	 */
	json_t *own_dirs = NULL, *left = NULL;
	bool cg_gone = false;
	if (gone) {
		if (cgroups == NULL) {
			ota_error ge;
			ota_error_clear(&ge);
			if (oci_cgroup_dirs(id, &own_dirs, &ge) == OTA_OK)
				cgroups = own_dirs;
		}
		cg_gone = cgroups != NULL && oci_cgroup_remove(id, cgroups, &left);
		if (cgroups == NULL && (left = json_array()) != NULL)
			json_array_append_new(left, json_pack("{s:n, s:s}", "dir", "reason",
			                                      "its cgroup directories cannot be determined"));
	}
	*cleanup_out = json_pack("{s:b, s:b, s:b, s:b, s:I, s:b, s:b, s:b, s:b, s:b, s:b, s:b, s:o, s:b}",
	                         "existed", exists, "killed", killed, "pidns_proved", proved,
	                         "pidns_killed", proved && pidfd_gone, "pidns_signalled",
	                         (json_int_t)swept, "deleted", deleted || !exists,
	                         "half_built_removed", half_built, "runtime_forgot", !still,
	                         "state_dir_absent", dir_absent, "pid_gone", pid_gone,
	                         "cgroups_checked", gone, "cgroups_removed", cg_gone,
	                         "cgroups_left", left != NULL ? json_incref(left) : json_array(),
	                         "confirmed", gone && cg_gone);
	json_decref(own_dirs);
	if (*cleanup_out == NULL) {
		json_decref(left);
		return OTA_ERR_NOMEM;
	}
	rc = OTA_OK;
	if (!gone)
		rc = ota_error_set(err, OTA_ERR_OCI_CLEANUP_UNCONFIRMED, id,
		                   "runtime state %s, state dir %s, pid %s",
		                   still ? "remains" : "gone", dir_absent ? "absent" : "present",
		                   pid_gone ? "gone" : "alive");
	else if (!cg_gone) {
		const json_t *l0 = json_array_get(left, 0);
		const char *d0 = json_string_value(json_object_get(l0, "dir"));
		rc = ota_error_set(err, OTA_ERR_OCI_CLEANUP_UNCONFIRMED, d0 != NULL ? d0 : id,
		                   "container %s is gone but %zu of its cgroups remain: %s", id,
		                   json_array_size(left),
		                   json_string_value(json_object_get(l0, "reason")) != NULL
		                           ? json_string_value(json_object_get(l0, "reason"))
		                           : "unknown");
	}
	json_decref(left);
	return rc;
}

void ota_oci_runtime_version_cancel(const ota_oci_runtime_opts *o,
                                    volatile sig_atomic_t *cancel, char *out, size_t cap)
{
	oci_rt rt;
	ota_error e;
	ota_error_clear(&e);
	if (cap > 0)
		out[0] = '\0';
	if (oci_rt_init(&rt, o, &e) == OTA_OK) {
		rt.cancel = cancel;
		oci_rt_version(&rt, out, cap);
	}
}

void ota_oci_runtime_version(const ota_oci_runtime_opts *o, char *out, size_t cap)
{
	ota_oci_runtime_version_cancel(o, NULL, out, cap);
}
