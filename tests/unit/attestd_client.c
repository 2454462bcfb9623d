#include "attestd_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

void test_attestd_opts(const test_endpoint_root *r, ota_attestd_opts *o)
{
	ota_attestd_opts_init(o);
	o->port = 0;
	o->db_path = r->db_path;
	o->trust_root_path = r->root_path;
	o->verifier_key_path = r->key_path;
}

uint16_t test_attestd_start(const ota_attestd_opts *o, ota_attestd **d, char *url, size_t cap)
{
	ota_error e = {0};
	assert_ota(ota_attestd_start(o, d, &e), OTA_OK);
	uint16_t port = ota_attestd_port(*d);
	int n = snprintf(url, cap, "http://127.0.0.1:%u", (unsigned)port);
	assert_true(n > 0 && (size_t)n < cap);
	return port;
}

ota_err test_attestd_challenge(const char *url, const ota_nonce_binding *b, uint8_t *nonce,
                               size_t *nl)
{
	char *ans = NULL;
	ota_error e = {0};
	ota_err rc = ota_attest_client_challenge(url, b, 0, 0, &ans, &e);
	if (rc != OTA_OK)
		return rc;
	json_t *o = json_loads(ans, 0, NULL);
	free(ans);
	assert_non_null(o);
	const char *n64 = json_string_value(json_object_get(o, "nonce"));
	assert_non_null(n64);
	uint8_t *raw = NULL;
	size_t n = 0;
	assert_ota(ota_base64_decode(n64, strlen(n64), &raw, &n), OTA_OK);
	assert_true(n <= OTA_NONCE_MAX_BYTES);
	memcpy(nonce, raw, n);
	*nl = n;
	free(raw);
	json_decref(o);
	return OTA_OK;
}

int test_http_dial(uint16_t port, int recv_timeout_s)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	struct sockaddr_in sa;
	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	sa.sin_port = htons(port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
	struct timeval tv = {recv_timeout_s, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	return fd;
}

void test_http_send_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n > 0) {
		ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
		if (w <= 0)
			return; /* the server may answer and close early */
		c += w;
		n -= (size_t)w;
	}
}

test_http_reply test_http_read_reply(int fd)
{
	const size_t cap = 64 * 1024; /* per call: racers read at once */
	char *buf = malloc(cap);
	assert_non_null(buf);
	size_t n = 0;
	for (;;) {
		ssize_t r = recv(fd, buf + n, cap - 1 - n, 0);
		if (r <= 0)
			break;
		n += (size_t)r;
		if (n == cap - 1)
			break;
	}
	close(fd);
	buf[n] = '\0';
	test_http_reply out = {0, NULL};
	if (n >= 12 && strncmp(buf, "HTTP/1.", 7) == 0) {
		out.status = atoi(buf + 9);
		const char *b = strstr(buf, "\r\n\r\n");
		if (b != NULL)
			out.body = json_loads(b + 4, JSON_DECODE_ANY, NULL);
	}
	free(buf);
	return out;
}

test_http_reply test_http_post(uint16_t port, const char *path, const char *headers,
                               const void *body, size_t len)
{
	size_t cap = strlen(headers) + 512;
	char *head = malloc(cap);
	assert_non_null(head);
	int n = snprintf(head, cap, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n%s",
	                 path, headers);
	assert_true(n > 0 && (size_t)n < cap);
	if (strstr(headers, "Content-Length") == NULL)
		n += snprintf(head + n, cap - (size_t)n, "Content-Length: %zu\r\n", len);
	n += snprintf(head + n, cap - (size_t)n, "\r\n");
	int fd = test_http_dial(port, 10);
	test_http_send_all(fd, head, (size_t)n);
	test_http_send_all(fd, body, len);
	free(head);
	return test_http_read_reply(fd);
}
