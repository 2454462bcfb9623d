/* Small helpers: hex, base64, files, SHA-256 identities, secret hygiene. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "ota/common.h"
#include "md.h"

#ifndef OTA_VERSION_STRING
#define OTA_VERSION_STRING "0.0.0"
#endif

const char *ota_version(void)
{
	return OTA_VERSION_STRING;
}

void ota_wipe(void *p, size_t n)
{
	if (p != NULL && n > 0)
		OPENSSL_cleanse(p, n);
}

bool ota_ct_equal(ota_bytes a, ota_bytes b)
{
	if (a.len != b.len)
		return false;
	if (a.len == 0)
		return true;
	return CRYPTO_memcmp(a.ptr, b.ptr, a.len) == 0;
}

void ota_hex_encode(ota_bytes in, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < in.len; i++) {
		out[2 * i] = digits[in.ptr[i] >> 4];
		out[2 * i + 1] = digits[in.ptr[i] & 15];
	}
	out[2 * in.len] = '\0';
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

ota_err ota_hex_decode(const char *hex, size_t hex_len, ota_buf out, size_t *out_len)
{
	*out_len = 0;
	if (hex_len % 2 != 0)
		return OTA_ERR_BAD_HEX;
	if (hex_len / 2 > out.cap)
		return OTA_ERR_TOO_LARGE;
	for (size_t i = 0; i < hex_len; i += 2) {
		int hi = hexval(hex[i]), lo = hexval(hex[i + 1]);
		if (hi < 0 || lo < 0)
			return OTA_ERR_BAD_HEX;
		out.ptr[i / 2] = (uint8_t)(hi << 4 | lo);
	}
	*out_len = hex_len / 2;
	return OTA_OK;
}

ota_err ota_file_read(const char *path, size_t max, uint8_t **out, size_t *out_len,
                      ota_error *err)
{
	*out = NULL;
	*out_len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return ota_error_set(err, OTA_ERR_IO, path, "cannot open: %s", strerror(errno));
	struct stat st;
	if (fstat(fd, &st) != 0) {
		close(fd);
		return ota_error_set(err, OTA_ERR_IO, path, "cannot stat: %s", strerror(errno));
	}
	if (S_ISDIR(st.st_mode)) {
		close(fd);
		return ota_error_set(err, OTA_ERR_IO, path, "is a directory");
	}
	if (S_ISREG(st.st_mode) && (uint64_t)st.st_size > max) {
		close(fd);
		return ota_error_set(err, OTA_ERR_TOO_LARGE, path,
		                     "file has %lld bytes, limit is %zu", (long long)st.st_size, max);
	}
	/* Room for max + 1 bytes at most: reading one byte past max proves "too large". */
	size_t cap = S_ISREG(st.st_mode) ? (size_t)st.st_size + 2 : 4096;
	if (cap > max + 2)
		cap = max + 2;
	uint8_t *buf = malloc(cap);
	if (buf == NULL) {
		close(fd);
		return ota_error_set(err, OTA_ERR_NOMEM, path, NULL);
	}
	size_t len = 0;
	for (;;) {
		if (len + 1 >= cap) {
			size_t ncap = cap * 2;
			if (ncap > max + 2)
				ncap = max + 2;
			uint8_t *nb = realloc(buf, ncap);
			if (nb == NULL) {
				free(buf);
				close(fd);
				return ota_error_set(err, OTA_ERR_NOMEM, path, NULL);
			}
			buf = nb;
			cap = ncap;
		}
		ssize_t r = read(fd, buf + len, cap - len - 1);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			free(buf);
			close(fd);
			return ota_error_set(err, OTA_ERR_IO, path, "read failed: %s", strerror(errno));
		}
		if (r == 0)
			break;
		len += (size_t)r;
		if (len > max) {
			free(buf);
			close(fd);
			return ota_error_set(err, OTA_ERR_TOO_LARGE, path,
			                     "input exceeds the limit of %zu bytes", max);
		}
	}
	close(fd);
	buf[len] = '\0';
	*out = buf;
	*out_len = len;
	return OTA_OK;
}

ota_err ota_file_write_atomic(const char *path, ota_bytes data, unsigned mode, ota_error *err)
{
	size_t n = strlen(path);
	char *tmp = malloc(n + 16);
	char *dircopy = strdup(path);
	if (tmp == NULL || dircopy == NULL) {
		free(tmp);
		free(dircopy);
		return ota_error_set(err, OTA_ERR_NOMEM, path, NULL);
	}
	snprintf(tmp, n + 16, "%s.tmp.XXXXXX", path);
	ota_err rc = OTA_OK;
	int fd = mkstemp(tmp);
	if (fd < 0) {
		rc = ota_error_set(err, OTA_ERR_IO, path, "cannot create temporary file: %s",
		                   strerror(errno));
		goto out;
	}
	if (fchmod(fd, (mode_t)mode) != 0) {
		rc = ota_error_set(err, OTA_ERR_IO, path, "chmod: %s", strerror(errno));
		goto out_unlink;
	}
	size_t off = 0;
	while (off < data.len) {
		ssize_t w = write(fd, data.ptr + off, data.len - off);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			rc = ota_error_set(err, OTA_ERR_IO, path, "write: %s", strerror(errno));
			goto out_unlink;
		}
		off += (size_t)w;
	}
	if (fsync(fd) != 0) {
		rc = ota_error_set(err, OTA_ERR_IO, path, "fsync: %s", strerror(errno));
		goto out_unlink;
	}
	if (close(fd) != 0) {
		fd = -1;
		rc = ota_error_set(err, OTA_ERR_IO, path, "close: %s", strerror(errno));
		goto out_unlink;
	}
	fd = -1;
	if (rename(tmp, path) != 0) {
		rc = ota_error_set(err, OTA_ERR_IO, path, "rename: %s", strerror(errno));
		goto out_unlink;
	}
	int dfd = open(dirname(dircopy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		if (fsync(dfd) != 0)
			rc = ota_error_set(err, OTA_ERR_IO, path, "fsync of directory: %s",
			                   strerror(errno));
		close(dfd);
	}
	goto out;
out_unlink:
	if (fd >= 0)
		close(fd);
	unlink(tmp);
out:
	free(tmp);
	free(dircopy);
	return rc;
}

static const char b64std[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static ota_err b64_encode(ota_bytes in, const char *alphabet, bool pad, char **out)
{
	size_t olen = (in.len + 2) / 3 * 4 + 1;
	char *o = malloc(olen);
	*out = NULL;
	if (o == NULL)
		return OTA_ERR_NOMEM;
	size_t j = 0, i = 0;
	for (; i + 3 <= in.len; i += 3) {
		uint32_t v = (uint32_t)in.ptr[i] << 16 | (uint32_t)in.ptr[i + 1] << 8 | in.ptr[i + 2];
		o[j++] = alphabet[v >> 18 & 63];
		o[j++] = alphabet[v >> 12 & 63];
		o[j++] = alphabet[v >> 6 & 63];
		o[j++] = alphabet[v & 63];
	}
	size_t rem = in.len - i;
	if (rem > 0) {
		uint32_t v = (uint32_t)in.ptr[i] << 16;
		if (rem == 2)
			v |= (uint32_t)in.ptr[i + 1] << 8;
		o[j++] = alphabet[v >> 18 & 63];
		o[j++] = alphabet[v >> 12 & 63];
		if (rem == 2)
			o[j++] = alphabet[v >> 6 & 63];
		else if (pad)
			o[j++] = '=';
		if (pad)
			o[j++] = '=';
	}
	o[j] = '\0';
	*out = o;
	return OTA_OK;
}

ota_err ota_base64_encode(ota_bytes in, char **out)
{
	return b64_encode(in, b64std, true, out);
}

ota_err ota_base64url_encode(ota_bytes in, char **out)
{
	return b64_encode(in, b64url, false, out);
}

static int b64val(char c, bool *url, bool *std)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '/') {
		*std = true;
		return c == '+' ? 62 : 63;
	}
	if (c == '-' || c == '_') {
		*url = true;
		return c == '-' ? 62 : 63;
	}
	return -1;
}

ota_err ota_base64_decode(const char *in, size_t in_len, uint8_t **out, size_t *out_len)
{
	*out = NULL;
	*out_len = 0;
	size_t n = in_len;
	while (n > 0 && in[n - 1] == '=')
		n--;
	if (in_len - n > 2 || (in_len != n && in_len % 4 != 0) || n % 4 == 1)
		return OTA_ERR_BAD_BASE64;
	uint8_t *o = malloc(n / 4 * 3 + 3);
	if (o == NULL)
		return OTA_ERR_NOMEM;
	bool url = false, std = false;
	size_t j = 0;
	uint32_t acc = 0;
	unsigned bits = 0;
	for (size_t i = 0; i < n; i++) {
		int v = b64val(in[i], &url, &std);
		if (v < 0 || (url && std)) {
			free(o);
			return OTA_ERR_BAD_BASE64;
		}
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			o[j++] = (uint8_t)(acc >> bits);
			acc &= (1u << bits) - 1;
		}
	}
	/* Leftover bits must be zero (canonical encoding). */
	if (acc != 0) {
		free(o);
		return OTA_ERR_BAD_BASE64;
	}
	*out = o;
	*out_len = j;
	return OTA_OK;
}

static EVP_MD *g_sha2[3];
static pthread_once_t g_sha2_once = PTHREAD_ONCE_INIT;

static void sha2_fetch(void)
{
	g_sha2[0] = EVP_MD_fetch(NULL, "SHA256", NULL);
	g_sha2[1] = EVP_MD_fetch(NULL, "SHA384", NULL);
	g_sha2[2] = EVP_MD_fetch(NULL, "SHA512", NULL);
}

const EVP_MD *ota_md_sha2(unsigned bits)
{
	if (pthread_once(&g_sha2_once, sha2_fetch) != 0)
		return NULL;
	return bits == 256 ? g_sha2[0] : bits == 384 ? g_sha2[1] : bits == 512 ? g_sha2[2] : NULL;
}

ota_err ota_sha256(ota_bytes data, uint8_t out[32])
{
	unsigned int n = 0;
	const EVP_MD *md = ota_md_sha2(256);
	if (md == NULL || EVP_Digest(data.ptr, data.len, out, &n, md, NULL) != 1 || n != 32)
		return OTA_ERR_CRYPTO;
	return OTA_OK;
}

ota_err ota_sha256_id(ota_bytes data, char out[OTA_ID_LEN + 1])
{
	uint8_t d[32];
	ota_err rc = ota_sha256(data, d);
	if (rc != OTA_OK) {
		out[0] = '\0';
		return rc;
	}
	memcpy(out, "sha256:", 7);
	ota_hex_encode(ota_bytes_make(d, 32), out + 7);
	return OTA_OK;
}

bool ota_id_is_valid(const char *s)
{
	if (s == NULL || strncmp(s, "sha256:", 7) != 0 || strlen(s) != OTA_ID_LEN)
		return false;
	for (size_t i = 7; i < OTA_ID_LEN; i++) {
		char c = s[i];
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return false;
	}
	return true;
}
