"""A small client of layerprof's wire protocol (docs/protocol.md) for tests:
frames, CRC-32C, HMAC authentication, and a writer of received chunks as a
trace directory.  Written from the protocol document, independently of the
C code it tests."""

import hashlib
import hmac
import os
import socket
import struct
import time

MAGIC = 0x4657504C
HEADER = struct.Struct("<IBBHIII")
(HELLO, AUTH, WELCOME, ERROR, START, ATTACH, SESSION, CHUNK, CONTROL, STATUS, HEARTBEAT, BYE,
 UDPINFO, OSCAL, OSCALDATA) = range(1, 16)

_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ (0x82F63B78 if _c & 1 else 0)
    _TABLE.append(_c)


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = (c >> 8) ^ _TABLE[(c ^ b) & 0xFF]
    return c ^ 0xFFFFFFFF


def frame(ftype, seq, payload=b""):
    return HEADER.pack(MAGIC, ftype, 0, 0, seq, len(payload), crc32c(payload)) + payload


def kv(payload):
    out = {}
    for line in payload.decode(errors="replace").splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            out.setdefault(k, v)
    return out


class Closed(Exception):
    pass


def connect_when_free(host, port, token=None, wait=5.0, **kw):
    """A connection that passed the handshake with this token, or the
    agent's refusal: (client, type, payload) of its answer to AUTH.  The
    agent serves one host at a time and answers a good AUTH with ERROR
    busy while the previous host's close is not seen yet: that answer is
    tried again for a while."""
    deadline = time.time() + wait
    while True:
        c = Client(host, port, **kw)
        ftype, payload = c.handshake(token)
        if ftype == ERROR and b"busy" in payload and time.time() < deadline:
            c.close()
            time.sleep(0.05)
            continue
        return c, ftype, payload


class Client:
    """One connection to an agent.  recv() returns (type, payload)."""

    def __init__(self, host, port=None, timeout=10.0, family=socket.AF_INET):
        """host "unix:PATH" is the agent's UNIX socket (port unused)."""
        if host.startswith("unix:"):
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(timeout)
            self.sock.connect(host[5:])
        else:
            self.sock = socket.socket(family, socket.SOCK_STREAM)
            self.sock.settimeout(timeout)
            self.sock.connect((host, port))
        self.seq = 0
        self.rx_seq = 0
        self.buf = b""
        self.chunks = []  # (session, raw chunk bytes) in order received
        self.status = []  # kv dicts of STATUS frames
        self.wire_bytes = 0
        self.pending = None  # a frame read ahead, returned by the next recv()

    def send(self, ftype, payload=b""):
        self.sock.sendall(frame(ftype, self.seq, payload))
        self.seq += 1

    def send_raw(self, data):
        self.sock.sendall(data)

    def _fill(self, n):
        while len(self.buf) < n:
            d = self.sock.recv(1 << 20)
            if not d:
                raise Closed()
            self.buf += d
            self.wire_bytes += len(d)

    def recv(self):
        if self.pending is not None:
            f, self.pending = self.pending, None
            return f
        self._fill(HEADER.size)
        magic, ftype, _, _, seq, length, crc = HEADER.unpack(self.buf[:HEADER.size])
        assert magic == MAGIC, "bad magic from agent"
        assert seq == self.rx_seq, "agent sequence %d, expected %d" % (seq, self.rx_seq)
        self._fill(HEADER.size + length)
        self.rx_seq += 1
        payload = self.buf[HEADER.size:HEADER.size + length]
        self.buf = self.buf[HEADER.size + length:]
        assert crc32c(payload) == crc, "bad checksum from agent"
        if ftype == CHUNK:
            self.chunks.append((struct.unpack("<I", payload[:4])[0], payload[4:]))
        elif ftype == STATUS:
            self.status.append(kv(payload))
        return ftype, payload

    def handshake(self, token=None):
        ftype, payload = self.recv()
        assert ftype == HELLO, "first frame is not HELLO"
        hello = kv(payload)
        mac = ""
        if token is not None:
            mac = hmac.new(token.encode(), bytes.fromhex(hello["nonce"]), hashlib.sha256).hexdigest()
        self.send(AUTH, ("protocol=1\nmac=%s\n" % mac).encode())
        return self.recv()

    def wait_for(self, pred, timeout=10.0):
        """Reads frames until pred(type, payload) is true; returns that frame.
        Sends a HEARTBEAT every second of silence, as a host must."""
        end = time.time() + timeout
        self.sock.settimeout(1.0)
        try:
            while time.time() < end:
                try:
                    ftype, payload = self.recv()
                except socket.timeout:
                    self.send(HEARTBEAT)
                    continue
                if pred(ftype, payload):
                    return ftype, payload
        finally:
            self.sock.settimeout(10.0)
        raise TimeoutError("no matching frame")

    def control(self, text):
        """Sends CONTROL and waits until the agent says it is in force."""
        self.send(CONTROL, text.encode())
        self.wait_for(lambda t, p: t == STATUS and kv(p).get("event") == "control")

    def start(self, argv):
        self.send(START, b"".join(a.encode() + b"\0" for a in argv))
        ftype, payload = self.wait_for(lambda t, p: t in (SESSION, ERROR))
        return ftype, payload

    def save(self, path):
        os.makedirs(path, exist_ok=True)
        with open(os.path.join(path, "data"), "wb") as f:
            f.write(b"LPTRACE\0" + struct.pack("<HHI", 1, 0, 0))
            for _, raw in self.chunks:
                f.write(raw)

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass
