/* Authentication of the live connection (docs/protocol.md, "Session"): SHA-256,
 * HMAC-SHA256, random nonces, hex, a constant-time compare and the token file.
 * Target-side code: C11 and libc only, no crypto library. */
#ifndef LP_AUTH_H
#define LP_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AUTH_NONCE_SIZE 32u
#define AUTH_MAC_SIZE 32u
#define AUTH_TOKEN_MAX 1024u
/* The weakest token accepted to guard an agent or a server: this long, and
 * this many bits by auth_token_bits. */
#define AUTH_TOKEN_MIN_LEN 16u
#define AUTH_TOKEN_MIN_BITS 64u
/* A generated token: this many random bytes, written as hex. */
#define AUTH_TOKEN_GEN_BYTES 32u
#define SHA256_SIZE 32u
#define SHA256_BLOCK 64u

/* SHA-256 (FIPS 180-4) of a message given in pieces of any size.  The state
 * is plain data: no allocation, nothing to release; copy it to fork a hash. */
struct sha256 {
	uint32_t h[8];               /* the hash so far */
	uint64_t bytes;              /* message bytes taken */
	uint8_t block[SHA256_BLOCK]; /* the current partial block */
	size_t used;                 /* bytes of block filled, < SHA256_BLOCK */
};

void sha256_init(struct sha256 *c);
void sha256_update(struct sha256 *c, const void *p, size_t n);
/* Writes the digest and wipes the state; sha256_init before reusing it. */
void sha256_final(struct sha256 *c, uint8_t out[SHA256_SIZE]);

/* HMAC-SHA256 (RFC 2104) of msg keyed with key (any length, hashed first when
 * longer than a block).  out may not overlap the inputs.  Wipes its copies of
 * the key from the stack. */
void hmac_sha256(const void *key, size_t key_len, const void *msg, size_t msg_len, uint8_t out[SHA256_SIZE]);

/* Fills buf[n] with random bytes from getrandom(), or /dev/urandom when the
 * kernel lacks it.  May block early at boot until the kernel pool is ready.
 * Returns 0 or -errno. */
int auth_random(uint8_t *buf, size_t n);

/* Writes bytes[n] as 2n lowercase hex digits and a NUL: out holds 2n + 1. */
void auth_hex(const uint8_t *bytes, size_t n, char *out);
/* Parses a NUL-terminated string of exactly 2n hex digits (either case) into
 * out[n].  Returns 0, or -EINVAL for any other string (out then undefined). */
int auth_unhex(const char *hex, uint8_t *out, size_t n);

/* The AUTH frame's mac: writes hex(HMAC-SHA256(token, nonce)) into
 * mac_hex[2 * AUTH_MAC_SIZE + 1], NUL-terminated. */
void auth_mac_hex(const char *token, size_t token_len, const uint8_t nonce[AUTH_NONCE_SIZE], char *mac_hex);

/* Whether a[n] and b[n] are equal, in a time that depends on n only: the
 * agent compares MACs with it, so that timing does not tell how much of a
 * guess was right. */
bool auth_equal(const void *a, const void *b, size_t n);

/* Reads a token file: its first line, trailing whitespace (space, tab, CR, VT, FF)
 * removed.  On success writes the token, NUL-terminated, into out[size]
 * (size >= AUTH_TOKEN_MAX + 1) and returns its length, > 0.  A token that is
 * empty, longer than AUTH_TOKEN_MAX, holds a NUL byte or does not fit in out
 * is -EINVAL; a file that cannot be read is -errno (-ENOENT when missing).
 * *warn is set when the file is readable by group or others (the caller
 * warns), cleared otherwise.  The bytes read are wiped from the stack. */
int auth_token_load(const char *path, char *out, size_t size, bool *warn);

/* A rough measure of how hard token[len] is to guess, in bits: its length
 * times log2 of the number of different bytes it holds.  It cannot see a
 * word or a pattern, but it catches the short and the repetitive
 * ("aaaa...", "abab...").  A token from auth_token_generate has about 256. */
unsigned auth_token_bits(const char *token, size_t len);
/* Whether token[len] is too weak to guard anything: shorter than
 * AUTH_TOKEN_MIN_LEN bytes or under AUTH_TOKEN_MIN_BITS by auth_token_bits. */
bool auth_token_weak(const char *token, size_t len);

/* Writes a new token to a new file at path: AUTH_TOKEN_GEN_BYTES bytes from
 * auth_random as lowercase hex, and a newline.  The file is created
 * exclusively (O_EXCL, no link followed) with mode 0600 whatever the umask,
 * and synced.  Returns 0, or -errno: -EEXIST when anything is at path; a
 * file that could not be written whole is removed. */
int auth_token_generate(const char *path);

#endif
