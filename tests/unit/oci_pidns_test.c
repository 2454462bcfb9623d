/*
 * provider-oci/pidns.c: every process of a pid namespace killed through
 * pidfds, nothing outside it. A child made init of a new pid namespace
 * (root: CLONE_NEWPID) forks a tree of sleepers, the grandchildren into a
 * new session so that killing the init alone is not what kills them here;
 * oci_pidns_kill must signal each one, and a sleeper outside the
 * namespace (this test's other child) must survive. The runner's own
 * namespace is never a target.
 */
#include "test_util.h"

#include <dirent.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "provider-oci/oci_internal.h"

#define SLEEPERS 24

static int pidfd_open_(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

/* Counts the processes of namespace ns under /proc (this test's own scan). */
static int count_in_ns(const char *ns)
{
	DIR *d = opendir("/proc");
	assert_non_null(d);
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		char p[300], got[OCI_PIDNS_LEN];
		snprintf(p, sizeof p, "/proc/%s/ns/pid", de->d_name);
		ssize_t l = readlink(p, got, sizeof got - 1);
		if (l <= 0)
			continue;
		got[l] = '\0';
		n += strcmp(got, ns) == 0;
	}
	closedir(d);
	return n;
}

/* A sleeper that dies only of a signal. */
static pid_t sleeper(void)
{
	pid_t p = fork();
	if (p == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* a failed assertion leaves none */
		for (;;)
			pause();
	}
	return p;
}

static void test_kills_the_namespace_and_nothing_else(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	pid_t outside = sleeper();
	assert_true(outside > 0);
	int pid_pipe[2], ready_pipe[2]; /* the init's pid; the tree is forked */
	assert_int_equal(pipe(pid_pipe), 0);
	assert_int_equal(pipe(ready_pipe), 0);
	pid_t helper = fork();
	assert_true(helper >= 0);
	if (helper == 0) {
		/* the helper's next child is init of a new pid namespace; each
		 * dies with its parent (a failed assertion leaves none) */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (unshare(CLONE_NEWPID) != 0)
			_exit(2);
		pid_t init = fork();
		if (init == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			for (int i = 0; i < SLEEPERS; i++) {
				pid_t c = fork();
				if (c == 0) {
					setsid(); /* its own session, below the init */
					if (fork() == 0) {
						for (;;)
							pause();
					}
					for (;;)
						pause();
				}
			}
			(void)!write(ready_pipe[1], "r", 1);
			for (;;) /* reaps what dies below it, as an init does */
				if (wait(NULL) < 0)
					pause();
		}
		/* report the init's host pid, then wait for it */
		(void)!write(pid_pipe[1], &init, sizeof init);
		int st;
		while (waitpid(init, &st, 0) < 0) {
		}
		_exit(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL ? 0 : 3);
	}
	close(pid_pipe[1]);
	close(ready_pipe[1]);
	pid_t init = 0;
	assert_int_equal(read(pid_pipe[0], &init, sizeof init), (ssize_t)sizeof init);
	char c;
	assert_int_equal(read(ready_pipe[0], &c, 1), 1);
	close(pid_pipe[0]);
	close(ready_pipe[0]);

	int pfd = pidfd_open_(init);
	assert_true(pfd >= 0);
	int st = 0;
	char ns[OCI_PIDNS_LEN];
	assert_true(oci_pidns_of(pfd, init, ns));
	assert_int_equal(strncmp(ns, "pid:[", 5), 0);
	/* the init, its SLEEPERS children and theirs; the last may still be
	 * forking, so wait until all are there */
	int want = 1 + 2 * SLEEPERS;
	for (int i = 0; i < 200 && count_in_ns(ns) < want; i++)
		usleep(20000);
	assert_int_equal(count_in_ns(ns), want);

	/* every process but the init, each signalled itself */
	assert_int_equal(oci_pidns_kill(ns, init), (size_t)want - 1);
	for (int i = 0; i < 200 && count_in_ns(ns) > 1; i++)
		usleep(20000);
	assert_int_equal(count_in_ns(ns), 1);
	assert_int_equal(waitpid(helper, &st, WNOHANG), 0); /* the init lives */
	assert_int_equal(syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0), 0);
	assert_int_equal(waitpid(helper, &st, 0), helper);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	for (int i = 0; i < 200 && count_in_ns(ns) > 0; i++)
		usleep(20000);
	assert_int_equal(count_in_ns(ns), 0);
	/* nothing left to kill; the pidfd's process is gone: no namespace */
	assert_int_equal(oci_pidns_kill(ns, 0), 0);
	char gone[OCI_PIDNS_LEN];
	assert_false(oci_pidns_of(pfd, init, gone));
	close(pfd);

	/* the sleeper outside the namespace is alive */
	assert_int_equal(waitpid(outside, &st, WNOHANG), 0);
	assert_int_equal(kill(outside, SIGKILL), 0);
	assert_int_equal(waitpid(outside, &st, 0), outside);
}

static void test_never_its_own_namespace(void **state)
{
	(void)state;
	pid_t child = sleeper();
	assert_true(child > 0);
	int pfd = pidfd_open_(child);
	assert_true(pfd >= 0);
	char ns[OCI_PIDNS_LEN];
	/* a process of this very namespace: refused, ns "" */
	assert_false(oci_pidns_of(pfd, child, ns));
	assert_string_equal(ns, "");
	char self[OCI_PIDNS_LEN];
	ssize_t l = readlink("/proc/self/ns/pid", self, sizeof self - 1);
	assert_true(l > 0);
	self[l] = '\0';
	assert_int_equal(oci_pidns_kill(self, 0), 0);
	assert_int_equal(oci_pidns_kill(NULL, 0), 0);
	assert_int_equal(oci_pidns_kill("", 0), 0);
	assert_int_equal(oci_pidns_kill("net:[4026531840]", 0), 0);
	int st;
	assert_int_equal(waitpid(child, &st, WNOHANG), 0); /* still alive */
	assert_int_equal(kill(child, SIGKILL), 0);
	assert_int_equal(waitpid(child, &st, 0), child);
	/* a dead process's pidfd vouches for no pid */
	assert_false(oci_pidns_of(pfd, child, ns));
	assert_false(oci_pidns_of(-1, 1, ns));
	close(pfd);
}

/*
 * oci_pidns_kill_container: a process is killed, with its namespace, only
 * once it is proved to be the container's (a cgroup named by the id, a pid
 * namespace not this one). A namespace init outside any such cgroup, or
 * under another id's, is left alone; moved into a cgroup named ID (of the
 * first cgroup hierarchy mounted here), it and everything of its namespace
 * are killed. A process of this namespace in that cgroup is refused.
 */

/* Mount point of a cgroup v1 hierarchy with the pids controller, else of a
 * cgroup2 one (this process's mountinfo), into out. */
static bool cgroup_mount(char *out, size_t cap)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	assert_non_null(f);
	char line[4096], v2[1024] = "";
	bool found = false;
	while (!found && fgets(line, sizeof line, f) != NULL) {
		char *sep = strstr(line, " - ");
		if (sep == NULL)
			continue;
		char mnt[1024], fstype[64], src[256], opts[1024];
		if (sscanf(line, "%*s %*s %*s %*s %1023s", mnt) != 1 ||
		    sscanf(sep + 3, "%63s %255s %1023s", fstype, src, opts) != 3)
			continue;
		if (strcmp(fstype, "cgroup") == 0 && strstr(opts, "pids") != NULL) {
			snprintf(out, cap, "%s", mnt);
			found = true;
		} else if (strcmp(fstype, "cgroup2") == 0 && v2[0] == '\0')
			snprintf(v2, sizeof v2, "%s", mnt);
	}
	fclose(f);
	if (!found && v2[0] != '\0') {
		snprintf(out, cap, "%s", v2);
		found = true;
	}
	return found;
}

static void move_to(const char *dir, pid_t pid)
{
	char p[1200];
	snprintf(p, sizeof p, "%s/cgroup.procs", dir);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	assert_true(fprintf(f, "%ld\n", (long)pid) > 0);
	assert_int_equal(fclose(f), 0);
}

static void test_container_proof(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	char mnt[1024];
	if (!cgroup_mount(mnt, sizeof mnt))
		skip();
	const char *id = "ota-0123456789abcdef01234567";
	const char *other = "ota-76543210fedcba9876543210";
	char dir[1100];
	snprintf(dir, sizeof dir, "%s/%s", mnt, id);
	(void)rmdir(dir);
	assert_int_equal(mkdir(dir, 0755), 0);

	/* a namespace: the init and four sleepers in their own sessions */
	int pid_pipe[2], ready_pipe[2];
	assert_int_equal(pipe(pid_pipe), 0);
	assert_int_equal(pipe(ready_pipe), 0);
	pid_t helper = fork();
	assert_true(helper >= 0);
	if (helper == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (unshare(CLONE_NEWPID) != 0)
			_exit(2);
		pid_t init = fork();
		if (init == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			for (int i = 0; i < 4; i++)
				if (fork() == 0) {
					setsid();
					for (;;)
						pause();
				}
			(void)!write(ready_pipe[1], "r", 1);
			for (;;)
				if (wait(NULL) < 0)
					pause();
		}
		(void)!write(pid_pipe[1], &init, sizeof init);
		int st;
		while (waitpid(init, &st, 0) < 0) {
		}
		_exit(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL ? 0 : 3);
	}
	close(pid_pipe[1]);
	close(ready_pipe[1]);
	pid_t init = 0;
	char c;
	assert_int_equal(read(pid_pipe[0], &init, sizeof init), (ssize_t)sizeof init);
	assert_int_equal(read(ready_pipe[0], &c, 1), 1);
	close(pid_pipe[0]);
	close(ready_pipe[0]);
	int pfd = pidfd_open_(init);
	assert_true(pfd >= 0);
	char ns[OCI_PIDNS_LEN];
	assert_true(oci_pidns_of(pfd, init, ns));
	for (int i = 0; i < 200 && count_in_ns(ns) < 5; i++)
		usleep(20000);
	assert_int_equal(count_in_ns(ns), 5);

	size_t swept = 99;
	bool proved = true;
	/* not in a cgroup named by the id: nothing is signalled */
	assert_false(oci_pidns_kill_container(id, init, 500, &swept, &proved));
	assert_false(proved);
	assert_int_equal(swept, 0);
	/* ids that are not the runner's form are refused before anything */
	assert_false(oci_pidns_kill_container("../x", init, 500, &swept, &proved));
	assert_false(oci_pidns_kill_container(NULL, init, 500, &swept, &proved));
	assert_false(oci_pidns_kill_container(id, 1, 500, &swept, &proved));
	assert_false(proved);
	move_to(dir, init);
	/* in a cgroup of another id: refused */
	assert_false(oci_pidns_kill_container(other, init, 500, &swept, &proved));
	assert_false(proved);
	assert_int_equal(count_in_ns(ns), 5);
	int st = 0;
	assert_int_equal(waitpid(helper, &st, WNOHANG), 0);

	/* a process of this namespace in that cgroup: refused as well */
	pid_t mine = sleeper();
	assert_true(mine > 0);
	move_to(dir, mine);
	assert_false(oci_pidns_kill_container(id, mine, 500, &swept, &proved));
	assert_false(proved);
	assert_int_equal(waitpid(mine, &st, WNOHANG), 0);
	assert_int_equal(kill(mine, SIGKILL), 0);
	assert_int_equal(waitpid(mine, &st, 0), mine);

	/* proved: the init and its namespace are killed */
	assert_true(oci_pidns_kill_container(id, init, 10000, &swept, &proved));
	assert_true(proved);
	assert_true(swept >= 4);
	assert_int_equal(waitpid(helper, &st, 0), helper);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	for (int i = 0; i < 200 && count_in_ns(ns) > 0; i++)
		usleep(20000);
	assert_int_equal(count_in_ns(ns), 0);
	close(pfd);
	for (int i = 0; i < 100 && rmdir(dir) != 0; i++)
		usleep(20000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kills_the_namespace_and_nothing_else),
		cmocka_unit_test(test_never_its_own_namespace),
		cmocka_unit_test(test_container_proof),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
