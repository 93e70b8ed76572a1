/* Authentication of the live connection: SHA-256 written from FIPS 180-4,
 * HMAC from RFC 2104, nonces, hex, constant-time compare and token files. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/auth.h"

/* FIPS 180-4 4.2.2: the first 32 bits of the fractional parts of the cube
 * roots of the first 64 primes. */
static const uint32_t sha256_k[64] = {
	0x428a2f98u, 0x71374491u, 0xb5c0fbcfu, 0xe9b5dba5u, 0x3956c25bu, 0x59f111f1u, 0x923f82a4u, 0xab1c5ed5u,
	0xd807aa98u, 0x12835b01u, 0x243185beu, 0x550c7dc3u, 0x72be5d74u, 0x80deb1feu, 0x9bdc06a7u, 0xc19bf174u,
	0xe49b69c1u, 0xefbe4786u, 0x0fc19dc6u, 0x240ca1ccu, 0x2de92c6fu, 0x4a7484aau, 0x5cb0a9dcu, 0x76f988dau,
	0x983e5152u, 0xa831c66du, 0xb00327c8u, 0xbf597fc7u, 0xc6e00bf3u, 0xd5a79147u, 0x06ca6351u, 0x14292967u,
	0x27b70a85u, 0x2e1b2138u, 0x4d2c6dfcu, 0x53380d13u, 0x650a7354u, 0x766a0abbu, 0x81c2c92eu, 0x92722c85u,
	0xa2bfe8a1u, 0xa81a664bu, 0xc24b8b70u, 0xc76c51a3u, 0xd192e819u, 0xd6990624u, 0xf40e3585u, 0x106aa070u,
	0x19a4c116u, 0x1e376c08u, 0x2748774cu, 0x34b0bcb5u, 0x391c0cb3u, 0x4ed8aa4au, 0x5b9cca4fu, 0x682e6ff3u,
	0x748f82eeu, 0x78a5636fu, 0x84c87814u, 0x8cc70208u, 0x90befffau, 0xa4506cebu, 0xbef9a3f7u, 0xc67178f2u,
};

/* FIPS 180-4 5.3.3: the first 32 bits of the fractional parts of the square
 * roots of the first 8 primes. */
static const uint32_t sha256_h0[8] = {
	0x6a09e667u, 0xbb67ae85u, 0x3c6ef372u, 0xa54ff53au, 0x510e527fu, 0x9b05688cu, 0x1f83d9abu, 0x5be0cd19u,
};

#define HMAC_IPAD 0x36u
#define HMAC_OPAD 0x5cu

/* Zeroes memory that held a secret; the volatile stores are not optimised
 * away as a memset of a dying buffer may be. */
static void auth_wipe(void *p, size_t n)
{
	volatile uint8_t *q = p;

	while (n--)
		*q++ = 0;
}

static uint32_t rotr32(uint32_t x, unsigned n)
{
	return (x >> n) | (x << (32 - n));
}

static uint32_t be32_get(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static void be32_put(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* FIPS 180-4 6.2.2: one 64-byte block into the hash. */
static void sha256_block(uint32_t h[8], const uint8_t *block)
{
	uint32_t w[64], a, b, c, d, e, f, g, k, t1, t2;
	unsigned i;

	for (i = 0; i < 16; i++)
		w[i] = be32_get(block + 4 * i);
	for (i = 16; i < 64; i++) {
		uint32_t s0 = rotr32(w[i - 15], 7) ^ rotr32(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = rotr32(w[i - 2], 17) ^ rotr32(w[i - 2], 19) ^ (w[i - 2] >> 10);

		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	a = h[0];
	b = h[1];
	c = h[2];
	d = h[3];
	e = h[4];
	f = h[5];
	g = h[6];
	k = h[7];
	for (i = 0; i < 64; i++) {
		uint32_t big_s1 = rotr32(e, 6) ^ rotr32(e, 11) ^ rotr32(e, 25);
		uint32_t big_s0 = rotr32(a, 2) ^ rotr32(a, 13) ^ rotr32(a, 22);
		uint32_t ch = (e & f) ^ (~e & g);
		uint32_t maj = (a & b) ^ (a & c) ^ (b & c);

		t1 = k + big_s1 + ch + sha256_k[i] + w[i];
		t2 = big_s0 + maj;
		k = g;
		g = f;
		f = e;
		e = d + t1;
		d = c;
		c = b;
		b = a;
		a = t1 + t2;
	}
	h[0] += a;
	h[1] += b;
	h[2] += c;
	h[3] += d;
	h[4] += e;
	h[5] += f;
	h[6] += g;
	h[7] += k;
	auth_wipe(w, sizeof(w));
}

void sha256_init(struct sha256 *c)
{
	memcpy(c->h, sha256_h0, sizeof(c->h));
	c->bytes = 0;
	c->used = 0;
}

void sha256_update(struct sha256 *c, const void *p, size_t n)
{
	const uint8_t *in = p;

	c->bytes += n;
	if (c->used) {
		size_t take = SHA256_BLOCK - c->used < n ? SHA256_BLOCK - c->used : n;

		memcpy(c->block + c->used, in, take);
		c->used += take;
		in += take;
		n -= take;
		if (c->used < SHA256_BLOCK)
			return;
		sha256_block(c->h, c->block);
		c->used = 0;
	}
	/* whole blocks straight from the input */
	while (n >= SHA256_BLOCK) {
		sha256_block(c->h, in);
		in += SHA256_BLOCK;
		n -= SHA256_BLOCK;
	}
	if (n) {
		memcpy(c->block, in, n);
		c->used = n;
	}
}

void sha256_final(struct sha256 *c, uint8_t out[SHA256_SIZE])
{
	uint64_t bits = c->bytes * 8;
	unsigned i;

	/* FIPS 180-4 5.1.1: a 1 bit, zeros, then the length in bits as a
	 * big-endian 64-bit number ending a block */
	c->block[c->used++] = 0x80;
	if (c->used > SHA256_BLOCK - 8) {
		memset(c->block + c->used, 0, SHA256_BLOCK - c->used);
		sha256_block(c->h, c->block);
		c->used = 0;
	}
	memset(c->block + c->used, 0, SHA256_BLOCK - 8 - c->used);
	be32_put(c->block + SHA256_BLOCK - 8, (uint32_t)(bits >> 32));
	be32_put(c->block + SHA256_BLOCK - 4, (uint32_t)bits);
	sha256_block(c->h, c->block);
	for (i = 0; i < 8; i++)
		be32_put(out + 4 * i, c->h[i]);
	auth_wipe(c, sizeof(*c));
}

void hmac_sha256(const void *key, size_t key_len, const void *msg, size_t msg_len, uint8_t out[SHA256_SIZE])
{
	uint8_t k[SHA256_BLOCK], pad[SHA256_BLOCK], inner[SHA256_SIZE];
	struct sha256 c;
	unsigned i;

	/* K0 (FIPS 198-1): a long key is hashed, a short one padded with zeros */
	memset(k, 0, sizeof(k));
	if (key_len > SHA256_BLOCK) {
		sha256_init(&c);
		sha256_update(&c, key, key_len);
		sha256_final(&c, k);
	} else if (key_len) {
		memcpy(k, key, key_len);
	}
	for (i = 0; i < SHA256_BLOCK; i++)
		pad[i] = k[i] ^ HMAC_IPAD;
	sha256_init(&c);
	sha256_update(&c, pad, sizeof(pad));
	sha256_update(&c, msg, msg_len);
	sha256_final(&c, inner);
	for (i = 0; i < SHA256_BLOCK; i++)
		pad[i] = k[i] ^ HMAC_OPAD;
	sha256_init(&c);
	sha256_update(&c, pad, sizeof(pad));
	sha256_update(&c, inner, sizeof(inner));
	sha256_final(&c, out);
	auth_wipe(k, sizeof(k));
	auth_wipe(pad, sizeof(pad));
	auth_wipe(inner, sizeof(inner));
}

/* Reads n bytes of /dev/urandom into buf. */
static int auth_urandom(uint8_t *buf, size_t n)
{
	size_t done = 0;
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	int ret = 0;

	if (fd < 0)
		return -errno;
	while (done < n) {
		ssize_t r = read(fd, buf + done, n - done);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			ret = r < 0 ? -errno : -EIO;
			break;
		}
		done += (size_t)r;
	}
	close(fd);
	return ret;
}

int auth_random(uint8_t *buf, size_t n)
{
	size_t done = 0;

#ifdef SYS_getrandom
	/* the system call rather than libc's getrandom(), which older embedded
	 * C libraries lack; ENOSYS (kernel before 3.17) falls back to the file */
	while (done < n) {
		long r = syscall(SYS_getrandom, buf + done, n - done, 0);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ENOSYS)
				break;
			return -errno;
		}
		done += (size_t)r;
	}
#endif
	if (done == n)
		return 0;
	return auth_urandom(buf + done, n - done);
}

void auth_hex(const uint8_t *bytes, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = digits[bytes[i] >> 4];
		out[2 * i + 1] = digits[bytes[i] & 15];
	}
	out[2 * n] = '\0';
}

/* The value of one hex digit, or -1. */
static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int auth_unhex(const char *hex, uint8_t *out, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		int hi, lo;

		/* a NUL ends the string early: hex_digit rejects it before the
		 * next byte is looked at */
		hi = hex_digit(hex[2 * i]);
		if (hi < 0)
			return -EINVAL;
		lo = hex_digit(hex[2 * i + 1]);
		if (lo < 0)
			return -EINVAL;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return hex[2 * n] == '\0' ? 0 : -EINVAL;
}

void auth_mac_hex(const char *token, size_t token_len, const uint8_t nonce[AUTH_NONCE_SIZE], char *mac_hex)
{
	uint8_t mac[AUTH_MAC_SIZE];

	hmac_sha256(token, token_len, nonce, AUTH_NONCE_SIZE, mac);
	auth_hex(mac, sizeof(mac), mac_hex);
	auth_wipe(mac, sizeof(mac));
}

bool auth_equal(const void *a, const void *b, size_t n)
{
	const volatile uint8_t *x = a, *y = b;
	uint8_t diff = 0;
	size_t i;

	/* every byte is looked at whatever the differences found before */
	for (i = 0; i < n; i++)
		diff |= x[i] ^ y[i];
	return diff == 0;
}

static bool token_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

int auth_token_load(const char *path, char *out, size_t size, bool *warn)
{
	/* room for the longest token, trailing blanks and the newline; a first
	 * line that does not end within it is too long */
	char buf[2 * AUTH_TOKEN_MAX + 2];
	size_t got = 0, len;
	struct stat st;
	const char *nl;
	int fd, ret;

	*warn = false;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		ret = -errno;
		goto out;
	}
	*warn = (st.st_mode & (S_IRGRP | S_IROTH)) != 0;
	while (got < sizeof(buf)) {
		ssize_t r = read(fd, buf + got, sizeof(buf) - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			ret = -errno;
			goto out;
		}
		if (r == 0)
			break;
		got += (size_t)r;
		if (memchr(buf + got - (size_t)r, '\n', (size_t)r))
			break; /* the first line is complete */
	}
	nl = memchr(buf, '\n', got);
	if (!nl && got == sizeof(buf)) {
		ret = -EINVAL;
		goto out;
	}
	len = nl ? (size_t)(nl - buf) : got;
	while (len && token_space(buf[len - 1]))
		len--;
	if (!len || len > AUTH_TOKEN_MAX || len >= size || memchr(buf, '\0', len)) {
		ret = -EINVAL;
		goto out;
	}
	memcpy(out, buf, len);
	out[len] = '\0';
	ret = (int)len;
out:
	auth_wipe(buf, sizeof(buf));
	close(fd);
	return ret;
}

/* log2(d) in units of 1/1024, for d >= 1: the integer part by shifts, then
 * ten fraction bits by squaring the mantissa (no libm on the target). */
static unsigned log2_q10(unsigned d)
{
	uint64_t m; /* the mantissa in [1, 2), 30 fraction bits */
	unsigned r = 0, i;

	while (d >> (r + 1))
		r++;
	m = ((uint64_t)d << 30) >> r;
	r <<= 10;
	for (i = 0; i < 10; i++) {
		m = (m * m) >> 30;
		if (m >= 2ull << 30) {
			m >>= 1;
			r |= 1u << (9 - i);
		}
	}
	return r;
}

unsigned auth_token_bits(const char *token, size_t len)
{
	bool seen[256] = { false };
	unsigned distinct = 0;
	size_t i;

	for (i = 0; i < len; i++) {
		uint8_t c = (uint8_t)token[i];

		if (!seen[c]) {
			seen[c] = true;
			distinct++;
		}
	}
	if (distinct < 2)
		return 0; /* one byte repeated: nothing to guess but the length */
	if (len > AUTH_TOKEN_MAX)
		len = AUTH_TOKEN_MAX; /* no token is longer; keeps the product small */
	return (unsigned)(((uint64_t)len * log2_q10(distinct)) >> 10);
}

bool auth_token_weak(const char *token, size_t len)
{
	return len < AUTH_TOKEN_MIN_LEN || auth_token_bits(token, len) < AUTH_TOKEN_MIN_BITS;
}

int auth_token_generate(const char *path)
{
	uint8_t bytes[AUTH_TOKEN_GEN_BYTES];
	char text[2 * AUTH_TOKEN_GEN_BYTES + 2];
	size_t done = 0, n = sizeof(text) - 1;
	int fd, ret;

	ret = auth_random(bytes, sizeof(bytes));
	if (ret)
		return ret;
	auth_hex(bytes, sizeof(bytes), text);
	auth_wipe(bytes, sizeof(bytes));
	text[n - 1] = '\n';
	text[n] = '\0';
	/* O_EXCL: never a file or a link someone put there; the mode is set
	 * at creation, so the token is never readable by others */
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	if (fchmod(fd, 0600)) {
		ret = -errno;
		goto fail;
	}
	while (done < n) {
		ssize_t w = write(fd, text + done, n - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			ret = w < 0 ? -errno : -EIO;
			goto fail;
		}
		done += (size_t)w;
	}
	if (fsync(fd)) {
		ret = -errno;
		goto fail;
	}
	if (close(fd))
		ret = -errno;
	fd = -1;
	if (!ret)
		goto out;
fail:
	if (fd >= 0)
		close(fd);
	unlink(path);
out:
	auth_wipe(text, sizeof(text));
	return ret;
}
