/* Talking to an ota-attestd from the unit tests: starting one on the
 * endpoint root of test_util.h, challenges through the library client, and
 * raw HTTP on loopback for what the library client would never send. */
#ifndef OTA_TEST_ATTESTD_CLIENT_H
#define OTA_TEST_ATTESTD_CLIENT_H
#include <jansson.h>

#include "ota/attestd.h"
#include "test_util.h"

/* Options for an endpoint on r: port 0 (any free one), r's store, trust
 * root and verifier key; the rest as ota_attestd_opts_init sets them. */
void test_attestd_opts(const test_endpoint_root *r, ota_attestd_opts *o);
/* Starts an endpoint with o (the test fails if it does not start); url
 * (cap bytes) receives "http://127.0.0.1:<port>". Returns the port. */
uint16_t test_attestd_start(const ota_attestd_opts *o, ota_attestd **d, char *url, size_t cap);
/* Asks url for a challenge of b (default length and ttl) and copies its
 * nonce to nonce (OTA_NONCE_MAX_BYTES), its length to *nl. Returns what the
 * client returned; nonce is set only when that is OTA_OK. */
ota_err test_attestd_challenge(const char *url, const ota_nonce_binding *b, uint8_t *nonce,
                               size_t *nl);

/* ---- raw HTTP on loopback ---- */

/* A connected TCP socket to 127.0.0.1:port, receiving with a timeout. */
int test_http_dial(uint16_t port, int recv_timeout_s);
/* Sends what it can; stops quietly when the server closes early. */
void test_http_send_all(int fd, const void *p, size_t n);

typedef struct test_http_reply {
	int status;   /* 0 when no HTTP status line came */
	json_t *body; /* the JSON answer (new), or NULL */
} test_http_reply;
/* Reads the answer of fd to its end (Connection: close; at most 64 KiB) and
 * closes fd. */
test_http_reply test_http_read_reply(int fd);
/* POSTs body to path on port with the given extra header lines (each
 * ending in \r\n), Connection: close; Content-Length is added unless the
 * headers carry their own. Receives with a 10 s timeout. */
test_http_reply test_http_post(uint16_t port, const char *path, const char *headers,
                               const void *body, size_t len);
#endif
