/*
 * common/: writes and reads beneath a directory descriptor that never follow
 * a symlink (ota_dir_open_beneath, ota_file_write_atomic_at,
 * ota_file_read_beneath), and the file reader's refusal of anything that is
 * not a regular file (a FIFO used to block it forever).
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "test_util.h"

typedef struct world {
	test_repo_world r; /* tmp, tmp/repo and its descriptor */
	char outside[512]; /* tmp/outside */
} world;

static int setup(void **state)
{
	world *w = calloc(1, sizeof *w);
	assert_non_null(w);
	test_repo_world_make(&w->r, O_RDONLY);
	test_mkdir_in(w->r.tmp, "outside", w->outside, sizeof w->outside);
	/* a FIFO that blocks would hang the test: fail it instead */
	alarm(60);
	*state = w;
	return 0;
}

static int teardown(void **state)
{
	world *w = *state;
	alarm(0);
	test_repo_world_free(&w->r);
	free(w);
	return 0;
}

/* Missing directories are created beneath the repository, the file lands
 * there atomically, no temporary is left. */
static void test_create_and_write(void **state)
{
	world *w = *state;
	ota_error e;
	ota_error_clear(&e);
	int fd = -1;
	assert_ota(ota_dir_open_beneath(w->r.repo_fd, w->r.repo, ".ota/archives",
	                                OTA_BENEATH_CREATE, &fd, &e),
	           OTA_OK);
	assert_ota(ota_file_write_atomic_at(fd, "t.json", ota_bytes_make("{}", 2), 0644, NULL, &e),
	           OTA_OK);
	/* overwrite of an existing regular file */
	assert_ota(ota_file_write_atomic_at(fd, "t.json", ota_bytes_make("{\"a\":1}", 7), 0600,
	                                    NULL, &e),
	           OTA_OK);
	close(fd);
	struct stat st;
	char p[1024];
	snprintf(p, sizeof p, "%s/.ota/archives/t.json", w->r.repo);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(st.st_size, 7);
	snprintf(p, sizeof p, "%s/.ota/archives", w->r.repo);
	assert_int_equal(test_count_entries(p, false), 1);
	/* without OTA_BENEATH_CREATE a missing directory is not_found */
	ota_error_clear(&e);
	assert_ota(ota_dir_open_beneath(w->r.repo_fd, w->r.repo, ".ota/cleanup", 0, &fd, &e),
	           OTA_ERR_NOT_FOUND);
	assert_int_equal(fd, -1);
	assert_non_null(strstr(e.where, ".ota/cleanup"));
	/* read back beneath */
	uint8_t *b = NULL;
	size_t n = 0;
	assert_ota(ota_file_read_beneath(w->r.repo_fd, w->r.repo, ".ota/archives/t.json", 100, &b,
	                                 &n, &e),
	           OTA_OK);
	assert_int_equal(n, 7);
	free(b);
	/* no "..", no absolute path, nothing empty */
	assert_ota(ota_dir_open_beneath(w->r.repo_fd, w->r.repo, "../outside", OTA_BENEATH_CREATE,
	                                &fd, NULL),
	           OTA_ERR_USAGE);
	assert_ota(ota_dir_open_beneath(w->r.repo_fd, w->r.repo, "/tmp", OTA_BENEATH_CREATE, &fd,
	                                NULL),
	           OTA_ERR_USAGE);
	assert_ota(
	        ota_dir_open_beneath(w->r.repo_fd, w->r.repo, "./", OTA_BENEATH_CREATE, &fd, NULL),
	        OTA_ERR_USAGE);
	assert_ota(ota_file_write_atomic_at(w->r.repo_fd, "a/b", ota_bytes_make("x", 1), 0644, NULL,
	                                    NULL),
	           OTA_ERR_USAGE);
}

/* The audit's t04/t06: .ota, or .ota/archives, a symlink to a host
 * directory (absolute or climbing with ..): refused, naming the path, and
 * nothing is created or written outside. */
static void test_symlinks_refused(void **state)
{
	world *w = *state;
	const char *const targets[] = {w->outside, "../outside", "../../../../../../../../tmp"};
	for (size_t i = 0; i < 3; i++) {
		char dot[600];
		snprintf(dot, sizeof dot, "%s/.ota", w->r.repo);
		/* .ota itself */
		assert_int_equal(symlink(targets[i], dot), 0);
		ota_error e;
		ota_error_clear(&e);
		int fd = -1;
		assert_ota(ota_dir_open_beneath(w->r.repo_fd, w->r.repo, ".ota/archives",
		                                OTA_BENEATH_CREATE, &fd, &e),
		           OTA_ERR_PATH_SYMLINK);
		assert_int_equal(fd, -1);
		assert_string_equal(e.where, dot);
		uint8_t *b = NULL;
		size_t n = 0;
		ota_error_clear(&e);
		assert_ota(ota_file_read_beneath(w->r.repo_fd, w->r.repo, ".ota/org-policy.yaml",
		                                 100, &b, &n, &e),
		           OTA_ERR_PATH_SYMLINK);
		assert_string_equal(e.where, dot);
		assert_int_equal(unlink(dot), 0);
		/* .ota/archives */
		assert_int_equal(mkdir(dot, 0755), 0);
		char arch[700];
		snprintf(arch, sizeof arch, "%s/archives", dot);
		assert_int_equal(symlink(targets[i], arch), 0);
		ota_error_clear(&e);
		assert_ota(ota_dir_open_beneath(w->r.repo_fd, w->r.repo, ".ota/archives/deeper",
		                                OTA_BENEATH_CREATE, &fd, &e),
		           OTA_ERR_PATH_SYMLINK);
		assert_string_equal(e.where, arch);
		assert_int_equal(unlink(arch), 0);
		/* .ota/archives a regular file: not a directory */
		int f = open(arch, O_WRONLY | O_CREAT | O_EXCL, 0644);
		assert_true(f >= 0);
		close(f);
		ota_error_clear(&e);
		assert_ota(ota_dir_open_beneath(w->r.repo_fd, w->r.repo, ".ota/archives",
		                                OTA_BENEATH_CREATE, &fd, &e),
		           OTA_ERR_NOT_DIRECTORY);
		assert_string_equal(e.where, arch);
		test_rmtree(dot);
		assert_int_equal(test_count_entries(w->outside, false), 0);
	}
}

/* The file name itself: a symlink is neither followed nor replaced, a FIFO
 * is not replaced; the target stays as it was. */
static void test_last_component(void **state)
{
	world *w = *state;
	char victim[600], link[600], fifo[600];
	snprintf(victim, sizeof victim, "%s/victim", w->outside);
	snprintf(link, sizeof link, "%s/receipt.json", w->r.repo);
	snprintf(fifo, sizeof fifo, "%s/fifo.json", w->r.repo);
	int f = open(victim, O_WRONLY | O_CREAT | O_EXCL, 0644);
	assert_true(f >= 0);
	assert_int_equal(write(f, "orig", 4), 4);
	close(f);
	assert_int_equal(symlink(victim, link), 0);
	ota_error e;
	ota_error_clear(&e);
	assert_ota(ota_file_write_atomic(link, ota_bytes_make("new", 3), 0644, &e),
	           OTA_ERR_PATH_SYMLINK);
	assert_string_equal(e.where, link);
	assert_ota(ota_file_write_atomic_at(w->r.repo_fd, "receipt.json", ota_bytes_make("new", 3),
	                                    0644, NULL, NULL),
	           OTA_ERR_PATH_SYMLINK);
	struct stat st;
	assert_int_equal(lstat(link, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	uint8_t *b = NULL;
	size_t n = 0;
	assert_ota(ota_file_read(victim, 100, &b, &n, NULL), OTA_OK);
	assert_int_equal(n, 4);
	assert_memory_equal(b, "orig", 4);
	free(b);
	assert_int_equal(mkfifo(fifo, 0644), 0);
	assert_ota(ota_file_write_atomic(fifo, ota_bytes_make("new", 3), 0644, NULL),
	           OTA_ERR_NOT_REGULAR);
	assert_int_equal(lstat(fifo, &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	/* only the two planted names: no temporary left */
	assert_int_equal(test_count_entries(w->r.repo, false), 2);
}

/* The audit's t14: a FIFO (or a symlink to one) where a file is read. The
 * reader opens with O_NONBLOCK and refuses before reading; without that
 * this test blocks (and the alarm fails it). */
static void test_fifo_and_socket_not_read(void **state)
{
	world *w = *state;
	char fifo[1024], dot[600];
	snprintf(dot, sizeof dot, "%s/.ota", w->r.repo);
	assert_int_equal(mkdir(dot, 0755), 0);
	snprintf(fifo, sizeof fifo, "%s/org-policy.yaml", dot);
	assert_int_equal(mkfifo(fifo, 0644), 0);
	uint8_t *b = NULL;
	size_t n = 0;
	ota_error e;
	ota_error_clear(&e);
	assert_ota(ota_file_read(fifo, 100, &b, &n, &e), OTA_ERR_NOT_REGULAR);
	assert_null(b);
	assert_string_equal(e.where, fifo);
	ota_error_clear(&e);
	assert_ota(ota_file_read_beneath(w->r.repo_fd, w->r.repo, ".ota/org-policy.yaml", 100, &b,
	                                 &n, &e),
	           OTA_ERR_NOT_REGULAR);
	assert_string_equal(e.where, fifo);
	/* a symlink to the FIFO: followed by the plain reader (a path the
	 * caller chose), refused beneath (never followed) */
	char lnk[600];
	snprintf(lnk, sizeof lnk, "%s/lnk", w->outside);
	assert_int_equal(symlink(fifo, lnk), 0);
	assert_ota(ota_file_read(lnk, 100, &b, &n, NULL), OTA_ERR_NOT_REGULAR);
	assert_int_equal(unlink(fifo), 0);
	assert_int_equal(symlink("../../outside/lnk", fifo), 0);
	assert_ota(ota_file_read_beneath(w->r.repo_fd, w->r.repo, ".ota/org-policy.yaml", 100, &b,
	                                 &n, NULL),
	           OTA_ERR_PATH_SYMLINK);
	assert_int_equal(unlink(fifo), 0);
	/* a socket file */
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(s >= 0);
	struct sockaddr_un sa;
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	int sl = snprintf(sa.sun_path, sizeof sa.sun_path, "%s/s", w->r.tmp);
	assert_true(sl > 0 && (size_t)sl < sizeof sa.sun_path);
	char sock[sizeof sa.sun_path];
	memcpy(sock, sa.sun_path, sizeof sock);
	assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof sa), 0);
	assert_int_equal(listen(s, 1), 0);
	assert_ota(ota_file_read(sock, 100, &b, &n, NULL), OTA_ERR_IO); /* ENXIO on open */
	close(s);
	/* a missing file beneath is not_found (the caller decides what absent means) */
	ota_error_clear(&e);
	assert_ota(ota_file_read_beneath(w->r.repo_fd, w->r.repo, ".ota/org-policy.yaml", 100, &b,
	                                 &n, &e),
	           OTA_ERR_NOT_FOUND);
	assert_ota(ota_file_read_beneath(w->r.repo_fd, w->r.repo, "nodir/org-policy.yaml", 100, &b,
	                                 &n, NULL),
	           OTA_ERR_NOT_FOUND);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_create_and_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_symlinks_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_last_component, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fifo_and_socket_not_read, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
