/* Unit test of common/auth: SHA-256 against the FIPS 180-4 / NIST examples
 * (empty, "abc", the 448- and 896-bit messages, a million 'a') fed in odd
 * pieces, HMAC-SHA256 against RFC 4231 test cases 1-7, hex, the constant-time compare,
 * nonces and token files. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/auth.h"
#include "tests/unit/check.h"

static void sha256_hex(const void *p, size_t n, size_t piece, char *hex)
{
	const uint8_t *in = p;
	uint8_t digest[SHA256_SIZE];
	struct sha256 c;
	size_t off = 0;

	sha256_init(&c);
	while (off < n) {
		size_t take = n - off < piece ? n - off : piece;

		sha256_update(&c, in + off, take);
		off += take;
	}
	sha256_final(&c, digest);
	auth_hex(digest, sizeof(digest), hex);
}

static void test_sha256(void)
{
	static const struct {
		const char *msg, *want;
	} vec[] = {
		{ "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
		{ "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
		{ "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1" },
		/* the 896-bit message: two blocks once padded */
		{ "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
		  "ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
		  "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1" },
	};
	static const size_t pieces[] = { 1, 3, 7, 55, 56, 63, 64, 65, 1000 };
	char hex[2 * SHA256_SIZE + 1];
	size_t i, j;
	char *million;

	for (i = 0; i < sizeof(vec) / sizeof(vec[0]); i++)
		for (j = 0; j < sizeof(pieces) / sizeof(pieces[0]); j++) {
			sha256_hex(vec[i].msg, strlen(vec[i].msg), pieces[j], hex);
			CHECK_STR(hex, vec[i].want);
		}

	million = malloc(1000000);
	if (!CHECK(million))
		return;
	memset(million, 'a', 1000000);
	for (j = 0; j < sizeof(pieces) / sizeof(pieces[0]); j++) {
		sha256_hex(million, 1000000, pieces[j] * 13 + 4, hex);
		CHECK_STR(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	}
	free(million);
}

/* Every message length around the padding boundary: one update equals many. */
static void test_sha256_lengths(void)
{
	uint8_t msg[200], a[SHA256_SIZE], b[SHA256_SIZE];
	struct sha256 c;
	size_t n, i;

	for (i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)(i * 37 + 11);
	for (n = 0; n <= sizeof(msg); n++) {
		sha256_init(&c);
		sha256_update(&c, msg, n);
		sha256_final(&c, a);
		sha256_init(&c);
		for (i = 0; i < n; i++)
			sha256_update(&c, msg + i, 1);
		sha256_final(&c, b);
		CHECK(!memcmp(a, b, sizeof(a)));
	}
}

static void test_hmac(void)
{
	static const char test7[] = "This is a test using a larger than block-size key and a larger than block-size "
	                            "data. The key needs to be hashed before being used by the HMAC algorithm.";
	static const char test6[] = "Test Using Larger Than Block-Size Key - Hash Key First";
	uint8_t key[131], data[50], mac[SHA256_SIZE];
	char hex[2 * SHA256_SIZE + 1];
	unsigned i;

	/* RFC 4231 test case 1 */
	memset(key, 0x0b, 20);
	hmac_sha256(key, 20, "Hi There", 8, mac);
	auth_hex(mac, sizeof(mac), hex);
	CHECK_STR(hex, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");

	/* 2: a key shorter than the output */
	hmac_sha256("Jefe", 4, "what do ya want for nothing?", 28, mac);
	auth_hex(mac, sizeof(mac), hex);
	CHECK_STR(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");

	/* 3 */
	memset(key, 0xaa, 20);
	memset(data, 0xdd, 50);
	hmac_sha256(key, 20, data, 50, mac);
	auth_hex(mac, sizeof(mac), hex);
	CHECK_STR(hex, "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");

	/* 4 */
	for (i = 0; i < 25; i++)
		key[i] = (uint8_t)(i + 1);
	memset(data, 0xcd, 50);
	hmac_sha256(key, 25, data, 50, mac);
	auth_hex(mac, sizeof(mac), hex);
	CHECK_STR(hex, "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");

	/* 5: the output truncated to 128 bits */
	memset(key, 0x0c, 20);
	hmac_sha256(key, 20, "Test With Truncation", 20, mac);
	auth_hex(mac, 16, hex);
	CHECK_STR(hex, "a3b6167473100ee06e0c796c2955552b");

	/* 6 and 7: a key longer than the block is hashed first */
	memset(key, 0xaa, sizeof(key));
	hmac_sha256(key, sizeof(key), test6, strlen(test6), mac);
	auth_hex(mac, sizeof(mac), hex);
	CHECK_STR(hex, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
	hmac_sha256(key, sizeof(key), test7, strlen(test7), mac);
	auth_hex(mac, sizeof(mac), hex);
	CHECK_STR(hex, "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
}

static void test_mac_hex(void)
{
	uint8_t nonce[AUTH_NONCE_SIZE];
	char mac_hex[2 * AUTH_MAC_SIZE + 1];
	unsigned i;

	for (i = 0; i < AUTH_NONCE_SIZE; i++)
		nonce[i] = (uint8_t)i;
	memset(mac_hex, 'x', sizeof(mac_hex));
	auth_mac_hex("secret", 6, nonce, mac_hex);
	CHECK_STR(mac_hex, "47860bcbb991426bea828dbf6097dff33339b093e3b9f61d9aef8a052f93e402");
}

static void test_hex(void)
{
	uint8_t bytes[256], back[256];
	char hex[2 * sizeof(bytes) + 1];
	unsigned i;

	for (i = 0; i < sizeof(bytes); i++)
		bytes[i] = (uint8_t)i;
	auth_hex(bytes, sizeof(bytes), hex);
	CHECK_EQ_U64(strlen(hex), 2 * sizeof(bytes));
	CHECK(!strncmp(hex, "000102", 6));
	CHECK(!strcmp(hex + 2 * 250, "fafbfcfdfeff"));
	memset(back, 0, sizeof(back));
	CHECK_EQ_U64(auth_unhex(hex, back, sizeof(back)), 0);
	CHECK(!memcmp(bytes, back, sizeof(bytes)));

	CHECK_EQ_U64(auth_unhex("0aFf", back, 2), 0); /* upper case is accepted */
	CHECK_EQ_U64(back[0], 0x0a);
	CHECK_EQ_U64(back[1], 0xff);
	CHECK_EQ_U64(auth_unhex("", back, 0), 0);
	CHECK_EQ_U64(auth_unhex("0a", back, 0), -EINVAL); /* too long */
	CHECK_EQ_U64(auth_unhex("0aff0", back, 2), -EINVAL);
	CHECK_EQ_U64(auth_unhex("0af", back, 2), -EINVAL); /* too short, odd */
	CHECK_EQ_U64(auth_unhex("0a", back, 2), -EINVAL);
	CHECK_EQ_U64(auth_unhex("", back, 2), -EINVAL);
	CHECK_EQ_U64(auth_unhex("0g12", back, 2), -EINVAL);
	CHECK_EQ_U64(auth_unhex("0a 1", back, 2), -EINVAL);
	CHECK_EQ_U64(auth_unhex("+a12", back, 2), -EINVAL);
	hex[0] = '\0';
	auth_hex(bytes, 0, hex);
	CHECK_STR(hex, "");
}

static void test_equal(void)
{
	uint8_t a[64], b[64];
	unsigned i;

	for (i = 0; i < sizeof(a); i++)
		a[i] = b[i] = (uint8_t)(i * 7);
	CHECK(auth_equal(a, b, sizeof(a)));
	CHECK(auth_equal(a, b, 0));
	for (i = 0; i < sizeof(a); i++) {
		b[i] ^= 0x80;
		CHECK(!auth_equal(a, b, sizeof(a)));
		b[i] ^= 0x81;
		CHECK(!auth_equal(a, b, sizeof(a)));
		b[i] ^= 0x01;
	}
	CHECK(auth_equal(a, b, sizeof(a)));
}

static void test_random(void)
{
	uint8_t a[AUTH_NONCE_SIZE], b[AUTH_NONCE_SIZE], zero[AUTH_NONCE_SIZE];
	static uint8_t big[100000];

	memset(a, 0, sizeof(a));
	memset(b, 0, sizeof(b));
	memset(zero, 0, sizeof(zero));
	CHECK_EQ_U64(auth_random(a, sizeof(a)), 0);
	CHECK_EQ_U64(auth_random(b, sizeof(b)), 0);
	CHECK(memcmp(a, b, sizeof(a)));
	CHECK(memcmp(a, zero, sizeof(a)));
	CHECK_EQ_U64(auth_random(a, 0), 0);
	CHECK_EQ_U64(auth_random(big, sizeof(big)), 0);
	CHECK(memcmp(big + sizeof(big) - sizeof(zero), zero, sizeof(zero)));
}

static char dir[] = "/tmp/lp_test_auth.XXXXXX";

/* Writes a token file with this content and mode; returns its path. */
static const char *token_file(const char *name, const void *content, size_t len, mode_t mode)
{
	static char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, content, len) != (ssize_t)len || fchmod(fd, mode)) {
		printf("cannot write '%s': %s\n", path, strerror(errno));
		exit(1);
	}
	close(fd);
	return path;
}

/* Loads a token written with this content; returns what auth_token_load
 * returns, the token in out. */
static int token_load(const char *content, size_t len, mode_t mode, char *out, bool *warn)
{
	return auth_token_load(token_file("token", content, len, mode), out, AUTH_TOKEN_MAX + 1, warn);
}

static void test_token(void)
{
	char out[AUTH_TOKEN_MAX + 1], path[300];
	static char text[4 * AUTH_TOKEN_MAX];
	bool warn;

	if (!CHECK(mkdtemp(dir)))
		return;
	CHECK_EQ_U64(token_load("s3cret", 6, 0600, out, &warn), 6);
	CHECK_STR(out, "s3cret");
	CHECK(!warn);
	CHECK_EQ_U64(token_load("s3cret\n", 7, 0644, out, &warn), 6);
	CHECK_STR(out, "s3cret");
	CHECK(warn);
	CHECK_EQ_U64(token_load("s3cret\r\n", 8, 0640, out, &warn), 6);
	CHECK_STR(out, "s3cret");
	CHECK(warn);
	CHECK_EQ_U64(token_load("s3cret \t \nsecond line\n", 22, 0604, out, &warn), 6);
	CHECK_STR(out, "s3cret");
	CHECK(warn);
	CHECK_EQ_U64(token_load("  in side \n", 11, 0400, out, &warn), 9); /* leading blanks stay */
	CHECK_STR(out, "  in side");
	CHECK(!warn);

	CHECK_EQ_U64(token_load("", 0, 0600, out, &warn), -EINVAL);
	CHECK_EQ_U64(token_load("\n", 1, 0600, out, &warn), -EINVAL);
	CHECK_EQ_U64(token_load(" \r\n", 3, 0600, out, &warn), -EINVAL);
	CHECK_EQ_U64(token_load("\ntoken on line 2\n", 17, 0600, out, &warn), -EINVAL);
	CHECK_EQ_U64(token_load("ab\0cd\n", 6, 0600, out, &warn), -EINVAL);

	/* the longest token, also with trailing blanks; one more is too long */
	memset(text, 'k', sizeof(text));
	CHECK_EQ_U64(token_load(text, AUTH_TOKEN_MAX, 0600, out, &warn), AUTH_TOKEN_MAX);
	CHECK_EQ_U64(strlen(out), AUTH_TOKEN_MAX);
	memset(text + AUTH_TOKEN_MAX, ' ', 100);
	text[AUTH_TOKEN_MAX + 100] = '\n';
	CHECK_EQ_U64(token_load(text, AUTH_TOKEN_MAX + 101, 0600, out, &warn), AUTH_TOKEN_MAX);
	memset(text, 'k', sizeof(text));
	CHECK_EQ_U64(token_load(text, AUTH_TOKEN_MAX + 1, 0600, out, &warn), -EINVAL);
	text[AUTH_TOKEN_MAX + 1] = '\n';
	CHECK_EQ_U64(token_load(text, AUTH_TOKEN_MAX + 2, 0600, out, &warn), -EINVAL);
	CHECK_EQ_U64(token_load(text, sizeof(text), 0600, out, &warn), -EINVAL);

	/* out too small for the token */
	CHECK_EQ_U64(auth_token_load(token_file("token", "abcd", 4, 0600), out, 4, &warn), -EINVAL);
	CHECK_EQ_U64(auth_token_load(token_file("token", "abcd", 4, 0600), out, 5, &warn), 4);

	snprintf(path, sizeof(path), "%s/missing", dir);
	CHECK_EQ_U64(auth_token_load(path, out, sizeof(out), &warn), -ENOENT);
	CHECK_EQ_U64(auth_token_load(dir, out, sizeof(out), &warn), -EISDIR);

	snprintf(path, sizeof(path), "%s/token", dir);
	unlink(path);
}

/* Token strength: the estimate's exact values, and what is weak. */
static void test_token_strength(void)
{
	static const char *const weak[] = {
		"",
		"s3cret-token",                     /* 12 bytes: too short */
		"0123456789abcde",                  /* 15: too short, however varied */
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",   /* one byte repeated: 0 bits */
		"abababababababababababababababab", /* 32 bits */
		"passwordpassword",                 /* 7 different bytes: 44 bits */
		"password12345678",                 /* 15 different: 62 bits */
	};
	static const char *const strong[] = {
		"correct horse battery staple",
		"s3cret-token-for-the-test",
		"0123456789abcdef", /* 16 different bytes: 64 bits, just enough */
		"4f1c0a9e2b7d3c6858e1f0a2b3c4d5e6",
	};
	size_t i;

	CHECK_EQ_U64(auth_token_bits("aaaa", 4), 0);
	CHECK_EQ_U64(auth_token_bits("ab", 2), 2);
	CHECK_EQ_U64(auth_token_bits("abababababababababababababababab", 32), 32);
	CHECK_EQ_U64(auth_token_bits("0123456789abcdef", 16), 64);
	/* 12 different bytes: log2(12) = 3.585 bits each */
	CHECK_EQ_U64(auth_token_bits("s3cret-token-for-the-test", 25), 89);
	for (i = 0; i < sizeof(weak) / sizeof(weak[0]); i++)
		if (!CHECK(auth_token_weak(weak[i], strlen(weak[i]))))
			printf("  should be weak: '%s'\n", weak[i]);
	for (i = 0; i < sizeof(strong) / sizeof(strong[0]); i++)
		if (!CHECK(!auth_token_weak(strong[i], strlen(strong[i]))))
			printf("  should be strong: '%s'\n", strong[i]);
}

/* A generated token: a new file of mode 0600 whatever the umask, 64 hex
 * digits that load and are strong; never over an existing file or link. */
static void test_token_generate(void)
{
	char path[256], link_path[256], out[AUTH_TOKEN_MAX + 1], first[AUTH_TOKEN_MAX + 1];
	struct stat st;
	mode_t old = umask(0);
	bool warn = true;
	size_t i;
	int r;

	snprintf(path, sizeof(path), "%s/generated", dir);
	snprintf(link_path, sizeof(link_path), "%s/link", dir);
	unlink(path);
	CHECK_EQ_U64(auth_token_generate(path), 0);
	umask(old);
	CHECK(!lstat(path, &st) && S_ISREG(st.st_mode) && (st.st_mode & 07777) == 0600);
	CHECK_EQ_U64(st.st_size, 2 * AUTH_TOKEN_GEN_BYTES + 1);
	r = auth_token_load(path, first, sizeof(first), &warn);
	CHECK_EQ_U64(r, 2 * AUTH_TOKEN_GEN_BYTES);
	CHECK(!warn);
	for (i = 0; r > 0 && i < (size_t)r; i++)
		CHECK((first[i] >= '0' && first[i] <= '9') || (first[i] >= 'a' && first[i] <= 'f'));
	CHECK(r > 0 && !auth_token_weak(first, (size_t)r));
	/* never over what is there: the file stays as it was */
	CHECK_EQ_U64(auth_token_generate(path), -EEXIST);
	CHECK_EQ_U64(auth_token_load(path, out, sizeof(out), &warn), r);
	CHECK_STR(out, first);
	/* nor through a link, even one to a missing file */
	unlink(link_path);
	CHECK(!symlink("generated-by-link", link_path));
	CHECK_EQ_U64(auth_token_generate(link_path), -EEXIST);
	snprintf(out, sizeof(out), "%s/generated-by-link", dir);
	CHECK(access(out, F_OK) && errno == ENOENT);
	unlink(link_path);
	/* two tokens differ */
	unlink(path);
	CHECK_EQ_U64(auth_token_generate(path), 0);
	CHECK_EQ_U64(auth_token_load(path, out, sizeof(out), &warn), r);
	CHECK(strcmp(out, first));
	unlink(path);
	snprintf(path, sizeof(path), "%s/no-such-dir/token", dir);
	CHECK_EQ_U64(auth_token_generate(path), -ENOENT);
	rmdir(dir);
}

int main(void)
{
	test_sha256();
	test_sha256_lengths();
	test_hmac();
	test_mac_hex();
	test_hex();
	test_equal();
	test_random();
	test_token();
	test_token_strength();
	test_token_generate();
	return check_summary();
}
