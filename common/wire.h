/* Frames of the live wire protocol (docs/protocol.md) between layerprofd and
 * layerprof live: header codec, a stream reader, datagrams, sending, and the
 * key=value payloads.  Target-side code: C11 and libc only. */
#ifndef LP_WIRE_H
#define LP_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LP_WIRE_MAGIC 0x4657504cu /* "LPWF" as little-endian bytes */
#define LP_WIRE_HEADER_SIZE 20u
/* The largest payload: a CHUNK frame is a session id, a chunk header and up
 * to 1 MiB of chunk payload; the rest is slack. */
#define LP_WIRE_MAX_PAYLOAD ((1u << 20) + 64u)
#define LP_WIRE_PROTOCOL 1

enum lp_frame_type {
	LP_FRAME_HELLO = 1,
	LP_FRAME_AUTH,
	LP_FRAME_WELCOME,
	LP_FRAME_ERROR,
	LP_FRAME_START,
	LP_FRAME_ATTACH,
	LP_FRAME_SESSION,
	LP_FRAME_CHUNK,
	LP_FRAME_CONTROL,
	LP_FRAME_STATUS,
	LP_FRAME_HEARTBEAT,
	LP_FRAME_BYE,
	LP_FRAME_UDPINFO,
	LP_FRAME_OSCAL,     /* host -> agent: run the OS-call timing suite */
	LP_FRAME_OSCALDATA, /* agent -> host: lines of the suite's output */
};

/* The type's name ("HELLO", ...) or "unknown": a static string.  The reader
 * does not judge types; a caller rejects those it does not expect. */
const char *wire_frame_name(unsigned type);

/* One received frame.  payload points into the buffer it was parsed from
 * (see wire_reader_next and wire_parse_datagram for how long it stays valid);
 * len <= LP_WIRE_MAX_PAYLOAD and the checksum has been verified. */
struct wire_frame {
	uint8_t type;
	uint32_t seq;
	uint32_t len;
	const uint8_t *payload;
};

/* Fills hdr[LP_WIRE_HEADER_SIZE]: magic, type, flags and reserved (0), seq,
 * len and the CRC-32C of payload[len]. */
void wire_header_put(uint8_t *hdr, uint8_t type, uint32_t seq, const void *payload, uint32_t len);

/* Incremental parser of the frames of one TCP byte stream.  The caller reads
 * straight into the reader's buffer (wire_reader_space, then commit) and
 * takes out whole frames (wire_reader_next); nothing is copied twice.
 * Not thread-safe: one reader belongs to one connection's thread. */
struct wire_reader {
	uint8_t *buf;      /* owned; cap bytes: one header plus the largest payload */
	size_t len;        /* bytes of buf received so far */
	size_t cap;        /* LP_WIRE_HEADER_SIZE + LP_WIRE_MAX_PAYLOAD */
	size_t start;      /* first byte of buf not yet returned as a frame */
	uint32_t next_seq; /* the seq the next frame must carry */
	bool check_seq;    /* true after init; clear it to accept any seq */
	bool failed;       /* a frame broke a rule: every later next fails too */
	char error[128];   /* after -EBADMSG, what was wrong ("checksum mismatch") */
};

/* Allocates the buffer for one frame of the largest size and expects seq 0.
 * Returns 0 or -ENOMEM.  Release with wire_reader_release. */
int wire_reader_init(struct wire_reader *r);
/* Frees the buffer and zeroes the reader; accepts a zeroed struct. */
void wire_reader_release(struct wire_reader *r);
/* Where to read() next; *avail is how many bytes fit there.  *avail > 0
 * unless a whole frame is waiting to be taken with wire_reader_next.  May move
 * buffered bytes: a payload returned before is no longer valid. */
uint8_t *wire_reader_space(struct wire_reader *r, size_t *avail);
/* Records that n bytes (at most *avail of the last space call) were read
 * into the space. */
void wire_reader_commit(struct wire_reader *r, size_t n);
/* Takes the next frame out of the buffered bytes.  Returns 1 with the frame in
 * *f (its payload is valid until the next wire_reader_next or
 * wire_reader_space call); 0 when more bytes are needed; -EBADMSG when the
 * magic is wrong, the length is over LP_WIRE_MAX_PAYLOAD, the checksum does
 * not match or seq is not the one expected (with check_seq), r->error saying
 * which: "bad magic", "frame too long (N bytes)", "checksum mismatch",
 * "sequence 7, expected 5".  After -EBADMSG the stream cannot be resynchronised:
 * every later call returns -EBADMSG and the caller closes the connection. */
int wire_reader_next(struct wire_reader *r, struct wire_frame *f);

/* The payload length a header declares (not checked against anything):
 * hdr holds LP_WIRE_HEADER_SIZE bytes.  A receiver that takes only small
 * frames (the agent before AUTH) bounds it before it waits for more. */
uint32_t wire_header_len(const uint8_t *hdr);

/* Parses one UDP datagram that holds exactly one frame: header, payload and
 * nothing after it.  The seq is not checked (the caller counts gaps as lost
 * datagrams).  Returns 0 with f->payload pointing into buf, or -EBADMSG. */
int wire_parse_datagram(const uint8_t *buf, size_t len, struct wire_frame *f);

/* Sends one frame on a blocking fd with seq *seq, then increments *seq.  A
 * socket gets sendmsg(MSG_NOSIGNAL), so that a closed peer is -EPIPE and not a
 * signal; any other fd (ENOTSOCK) gets writev.  Retries EINTR and short writes;
 * a connected UDP socket gets the frame as one datagram.  Returns 0; -EMSGSIZE
 * when len is over LP_WIRE_MAX_PAYLOAD (nothing sent, *seq unchanged); or
 * -errno, after which a TCP stream is broken (part of a frame may be out) and
 * *seq has still been incremented (on UDP, the receiver sees the gap). */
int wire_send(int fd, uint8_t type, uint32_t *seq, const void *payload, uint32_t len);

/* Looks up key in a payload of "key=value\n" lines (the last newline is
 * optional) and copies the value of the first line that starts with "key=",
 * without its newline, into out[size], NUL-terminated.  Never reads past
 * payload[len]; payload need not be NUL-terminated.  key must be non-empty
 * and hold neither '=' nor '\n'.  Returns 0 (the value may be empty);
 * -ENOENT when no line has the key; -E2BIG when the value does not fit in size
 * bytes with its NUL; -EINVAL when the value holds a NUL byte (it would be
 * cut short without notice).  On failure out is "" (when size > 0). */
int wire_kv_get(const uint8_t *payload, size_t len, const char *key, char *out, size_t size);

/* Splits "host:port", "[v6addr]:port" or "host" into host[hsize] and
 * port[psize].  A missing port is default_port (an error when NULL); an
 * empty host ("" or ":port") is accepted only with allow_any_host (a
 * listener's "all addresses").  A bare IPv6 address needs brackets.
 * Returns 0 or -EINVAL (also for a port outside 1..65535 or too long). */
int wire_split_address(const char *addr, char *host, size_t hsize, char *port, size_t psize, const char *default_port,
                       bool allow_any_host);

/* An agent address "unix:PATH" names a UNIX stream socket (docs/protocol.md,
 * "Access").  The longest PATH: what a sockaddr_un holds, less its NUL. */
#define LP_WIRE_UNIX_PREFIX "unix:"
#define LP_WIRE_UNIX_PATH_MAX 107u
/* The agent's default socket: in a directory of its own user's, made
 * private (0700) by the agent; %u is the uid. */
#define LP_WIRE_UNIX_DIR_FMT "/tmp/layerprofd-%u"
#define LP_WIRE_UNIX_NAME "agent.sock"

/* The PATH of "unix:PATH" (a pointer into addr), or NULL for any other
 * address. */
const char *wire_unix_path(const char *addr);
/* Writes the default socket's directory (with name NULL) or the path of
 * name in it, for the user uid, into out[size].  Returns 0 or -ENAMETOOLONG. */
int wire_unix_default(char *out, size_t size, unsigned uid, const char *name);

#endif
