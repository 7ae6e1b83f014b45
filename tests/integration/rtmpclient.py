"""A small RTMP client for integration tests (Python standard library only).

What it does:
  * the simple RTMP handshake (C0 C1 with a zero version field; S0 S1 S2 read, C2 sent);
  * a chunk stream reader (fmt 0-3, extended timestamps including their repetition on fmt 3
    chunks, Set Chunk Size / Abort from the peer, interleaved chunk streams) and a writer;
  * AMF0 encode/decode (number, boolean, string, long string, object, null, undefined, ECMA array,
    strict array, date, object end);
  * commands: connect(app, tcUrl), create_stream(), play(name), publish(name), delete_stream();
  * raw-byte helpers (send_raw, chunk_header, wait_closed, ...) so tests can send malformed input;
  * Player: a background thread that plays a stream and records every media message.

It is deliberately simple and synchronous: one socket, blocking reads with timeouts.
"""

import hashlib
import os
import select
import socket
import struct
import threading
import time

# ---------------------------------------------------------------------------------------------
# Message types
MSG_SET_CHUNK_SIZE = 1
MSG_ABORT = 2
MSG_ACK = 3
MSG_USER_CONTROL = 4
MSG_WINDOW_ACK_SIZE = 5
MSG_SET_PEER_BW = 6
MSG_AUDIO = 8
MSG_VIDEO = 9
MSG_DATA_AMF3 = 15
MSG_SHARED_OBJECT_AMF3 = 16
MSG_COMMAND_AMF3 = 17
MSG_DATA_AMF0 = 18
MSG_SHARED_OBJECT_AMF0 = 19
MSG_COMMAND_AMF0 = 20
MSG_AGGREGATE = 22

PROTOCOL_CONTROL_TYPES = (MSG_SET_CHUNK_SIZE, MSG_ABORT, MSG_ACK, MSG_USER_CONTROL,
                          MSG_WINDOW_ACK_SIZE, MSG_SET_PEER_BW)

# User control events
UC_STREAM_BEGIN = 0
UC_STREAM_EOF = 1
UC_STREAM_DRY = 2
UC_SET_BUFFER_LENGTH = 3
UC_STREAM_IS_RECORDED = 4
UC_PING_REQUEST = 6
UC_PING_RESPONSE = 7

# Chunk stream ids this client uses for what it sends.
CSID_CONTROL = 2
CSID_COMMAND = 3
CSID_AUDIO = 4
CSID_STREAM_COMMAND = 8
CSID_VIDEO = 6
CSID_DATA = 5


class RtmpError(Exception):
    pass


class ConnectionClosed(RtmpError):
    """The peer closed the connection (recv returned b'' or the connection was reset)."""


# ---------------------------------------------------------------------------------------------
# AMF0

AMF0_NUMBER = 0x00
AMF0_BOOLEAN = 0x01
AMF0_STRING = 0x02
AMF0_OBJECT = 0x03
AMF0_NULL = 0x05
AMF0_UNDEFINED = 0x06
AMF0_REFERENCE = 0x07
AMF0_ECMA_ARRAY = 0x08
AMF0_OBJECT_END = 0x09
AMF0_STRICT_ARRAY = 0x0A
AMF0_DATE = 0x0B
AMF0_LONG_STRING = 0x0C
AMF0_UNSUPPORTED = 0x0D
AMF0_XML_DOCUMENT = 0x0F
AMF0_TYPED_OBJECT = 0x10
AMF0_AVMPLUS = 0x11


class Undefined:
    """AMF0 undefined (None encodes as AMF0 null)."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self):
        return 'UNDEFINED'


UNDEFINED = Undefined()


class EcmaArray(dict):
    """A dict that encodes as an AMF0 ECMA array (an object encodes from a plain dict)."""


class AmfDate:
    def __init__(self, millis, tz=0):
        self.millis = millis
        self.tz = tz

    def __eq__(self, other):
        return isinstance(other, AmfDate) and (self.millis, self.tz) == (other.millis, other.tz)

    def __repr__(self):
        return 'AmfDate(%r)' % self.millis


class AmfError(RtmpError):
    pass


def _amf0_utf8(s, long=False):
    b = s.encode('utf-8') if isinstance(s, str) else bytes(s)
    if long:
        return struct.pack('>I', len(b)) + b
    if len(b) > 0xFFFF:
        raise AmfError('string too long for a short AMF0 string')
    return struct.pack('>H', len(b)) + b


def _amf0_properties(d):
    out = bytearray()
    for k, v in d.items():
        out += _amf0_utf8(str(k))
        out += amf0_encode_value(v)
    out += b'\x00\x00\x09'
    return bytes(out)


def amf0_encode_value(v):
    """Encode one Python value as AMF0.

    None -> null, UNDEFINED -> undefined, bool -> boolean, int/float -> number, str -> string
    (long string past 65535 bytes), EcmaArray -> ECMA array, dict -> object, list/tuple ->
    strict array, AmfDate -> date, bytes -> raw bytes inserted as they are (for crafted input).
    """
    if v is None:
        return bytes([AMF0_NULL])
    if v is UNDEFINED:
        return bytes([AMF0_UNDEFINED])
    if isinstance(v, bool):
        return bytes([AMF0_BOOLEAN, 1 if v else 0])
    if isinstance(v, (int, float)):
        return bytes([AMF0_NUMBER]) + struct.pack('>d', float(v))
    if isinstance(v, str):
        b = v.encode('utf-8')
        if len(b) > 0xFFFF:
            return bytes([AMF0_LONG_STRING]) + struct.pack('>I', len(b)) + b
        return bytes([AMF0_STRING]) + struct.pack('>H', len(b)) + b
    if isinstance(v, EcmaArray):
        return bytes([AMF0_ECMA_ARRAY]) + struct.pack('>I', len(v)) + _amf0_properties(v)
    if isinstance(v, dict):
        return bytes([AMF0_OBJECT]) + _amf0_properties(v)
    if isinstance(v, (list, tuple)):
        return (bytes([AMF0_STRICT_ARRAY]) + struct.pack('>I', len(v)) +
                b''.join(amf0_encode_value(x) for x in v))
    if isinstance(v, AmfDate):
        return bytes([AMF0_DATE]) + struct.pack('>dh', float(v.millis), v.tz)
    if isinstance(v, (bytes, bytearray)):
        return bytes(v)
    raise AmfError('cannot encode %r as AMF0' % (v,))


def amf0_encode(*values):
    return b''.join(amf0_encode_value(v) for v in values)


class _Amf0Reader:
    def __init__(self, data, max_depth):
        self.d = bytes(data)
        self.p = 0
        self.max_depth = max_depth

    def take(self, n):
        if self.p + n > len(self.d):
            raise AmfError('AMF0: truncated at offset %d (need %d bytes)' % (self.p, n))
        b = self.d[self.p:self.p + n]
        self.p += n
        return b

    def u8(self):
        return self.take(1)[0]

    def short_str(self):
        (n,) = struct.unpack('>H', self.take(2))
        return self.take(n).decode('utf-8', 'replace')

    def properties(self, depth):
        out = {}
        while True:
            key = self.short_str()
            if key == '' and self.p < len(self.d) and self.d[self.p] == AMF0_OBJECT_END:
                self.p += 1
                return out
            out[key] = self.value(depth + 1)

    def value(self, depth=0):
        if depth > self.max_depth:
            raise AmfError('AMF0: nesting deeper than %d' % self.max_depth)
        t = self.u8()
        if t == AMF0_NUMBER:
            v = struct.unpack('>d', self.take(8))[0]
            return int(v) if v.is_integer() and abs(v) < 2 ** 53 else v
        if t == AMF0_BOOLEAN:
            return self.u8() != 0
        if t == AMF0_STRING:
            return self.short_str()
        if t == AMF0_LONG_STRING or t == AMF0_XML_DOCUMENT:
            (n,) = struct.unpack('>I', self.take(4))
            return self.take(n).decode('utf-8', 'replace')
        if t == AMF0_OBJECT:
            return self.properties(depth)
        if t == AMF0_TYPED_OBJECT:
            self.short_str()
            return self.properties(depth)
        if t == AMF0_NULL:
            return None
        if t == AMF0_UNDEFINED or t == AMF0_UNSUPPORTED:
            return UNDEFINED
        if t == AMF0_REFERENCE:
            return ('reference', struct.unpack('>H', self.take(2))[0])
        if t == AMF0_ECMA_ARRAY:
            self.take(4)  # the count is a hint only
            return EcmaArray(self.properties(depth))
        if t == AMF0_STRICT_ARRAY:
            (n,) = struct.unpack('>I', self.take(4))
            if n > len(self.d) - self.p:
                raise AmfError('AMF0: strict array count %d exceeds the data' % n)
            return [self.value(depth + 1) for _ in range(n)]
        if t == AMF0_DATE:
            ms, tz = struct.unpack('>dh', self.take(10))
            return AmfDate(ms, tz)
        if t == AMF0_AVMPLUS:
            raise AmfError('AMF0: AMF3 values are not supported')
        raise AmfError('AMF0: unknown type marker 0x%02x at offset %d' % (t, self.p - 1))


def amf0_decode(data, max_depth=64):
    """Decode all AMF0 values in data. Raises AmfError on malformed input."""
    r = _Amf0Reader(data, max_depth)
    out = []
    while r.p < len(r.d):
        out.append(r.value())
    return out


def amf0_nested_objects(depth, key='a', terminated=True):
    """AMF0 bytes of `depth` objects nested in each other ({a: {a: {...}}}), built iteratively.

    With terminated=False the object-end markers are left off (a truncated value)."""
    k = _amf0_utf8(key)
    head = (bytes([AMF0_OBJECT]) + k) * (depth - 1) + bytes([AMF0_OBJECT])
    tail = b'\x00\x00\x09' * depth if terminated else b''
    return head + tail


# ---------------------------------------------------------------------------------------------
# Chunk headers (raw)

def basic_header(fmt, csid):
    if csid < 2:
        raise ValueError('csid must be >= 2')
    if csid <= 63:
        return bytes([(fmt << 6) | csid])
    if csid <= 319:
        return bytes([(fmt << 6) | 0, csid - 64])
    return bytes([(fmt << 6) | 1]) + struct.pack('<H', csid - 64)


def chunk_header(fmt, csid, timestamp=0, length=0, msg_type=0, stream_id=0, extended=None):
    """Raw chunk header bytes. timestamp is the absolute timestamp (fmt 0) or the delta (fmt 1/2).

    A timestamp >= 0xFFFFFF is written as 0xFFFFFF plus a 4-byte extended timestamp. For fmt 3,
    pass extended=<value> to append the repeated extended timestamp."""
    out = bytearray(basic_header(fmt, csid))
    ext = None
    if fmt <= 2:
        ts_field = timestamp
        if timestamp >= 0xFFFFFF:
            ts_field = 0xFFFFFF
            ext = timestamp
        out += struct.pack('>I', ts_field)[1:]
        if fmt <= 1:
            out += struct.pack('>I', length)[1:]
            out += bytes([msg_type])
        if fmt == 0:
            out += struct.pack('<I', stream_id)
    elif extended is not None:
        ext = extended
    if ext is not None:
        out += struct.pack('>I', ext & 0xFFFFFFFF)
    return bytes(out)


def chunk_message(payload, msg_type, csid=CSID_COMMAND, stream_id=0, timestamp=0,
                  chunk_size=128):
    """A whole message as chunks: a fmt 0 header then fmt 3 continuation chunks (with the
    extended timestamp repeated on each, as Flash, librtmp, ffmpeg and nginx-rtmp do)."""
    payload = bytes(payload)
    ext = timestamp if timestamp >= 0xFFFFFF else None
    out = bytearray(chunk_header(0, csid, timestamp, len(payload), msg_type, stream_id))
    pos = 0
    first = True
    while first or pos < len(payload):
        if not first:
            out += chunk_header(3, csid, extended=ext)
        n = min(chunk_size, len(payload) - pos)
        out += payload[pos:pos + n]
        pos += n
        first = False
    return bytes(out)


# ---------------------------------------------------------------------------------------------
# Messages

class Message:
    __slots__ = ('type', 'stream_id', 'timestamp', 'payload', 'csid', 'arrival')

    def __init__(self, msg_type, stream_id, timestamp, payload, csid=0, arrival=None):
        self.type = msg_type
        self.stream_id = stream_id
        self.timestamp = timestamp
        self.payload = payload
        self.csid = csid
        self.arrival = time.monotonic() if arrival is None else arrival

    def amf(self):
        """Decoded AMF0 values of a command/data message."""
        p = self.payload
        if self.type in (MSG_COMMAND_AMF3, MSG_DATA_AMF3) and p[:1] == b'\x00':
            p = p[1:]
        return amf0_decode(p)

    def __repr__(self):
        return 'Message(type=%d, sid=%d, ts=%d, len=%d, csid=%d)' % (
            self.type, self.stream_id, self.timestamp, len(self.payload), self.csid)


def is_video_keyframe(payload):
    return len(payload) >= 1 and (payload[0] >> 4) == 1


def is_video_seq_header(payload):
    # AVC (codec id 7) or HEVC-in-FLV (12) packet type 0; enhanced RTMP: ex-header bit + type 0.
    if len(payload) < 2:
        return False
    if payload[0] & 0x80:  # enhanced RTMP (IsExHeader)
        return (payload[0] & 0x0F) == 0
    return (payload[0] & 0x0F) in (7, 12) and payload[1] == 0


def is_audio_seq_header(payload):
    return len(payload) >= 2 and (payload[0] >> 4) == 10 and payload[1] == 0


def split_aggregate(msg):
    """Sub-messages of an aggregate message (type 22): FLV tags with back pointers."""
    out = []
    p = msg.payload
    pos = 0
    base = None
    while pos + 11 <= len(p):
        t = p[pos] & 0x1F
        size = int.from_bytes(p[pos + 1:pos + 4], 'big')
        ts = int.from_bytes(p[pos + 4:pos + 7], 'big') | (p[pos + 7] << 24)
        if pos + 11 + size > len(p):
            break
        if base is None:
            base = ts
        out.append(Message(t, msg.stream_id, msg.timestamp + (ts - base),
                           p[pos + 11:pos + 11 + size], msg.csid, msg.arrival))
        pos += 11 + size + 4
    return out


class _InChunkStream:
    __slots__ = ('timestamp', 'ts_field', 'extended', 'length', 'type', 'stream_id', 'buf',
                 'has_header', 'msg_ts')

    def __init__(self):
        self.timestamp = 0
        self.ts_field = 0
        self.extended = False
        self.length = 0
        self.type = 0
        self.stream_id = 0
        self.buf = None  # bytearray while a message is being assembled
        self.has_header = False
        self.msg_ts = 0


# ---------------------------------------------------------------------------------------------
# Connection

class RtmpConnection:
    """One RTMP connection. Not thread-safe: use it from one thread (Player does)."""

    def __init__(self, host='127.0.0.1', port=1935, timeout=5.0, rcvbuf=None, connect=True):
        self.host = host
        self.port = port
        self.timeout = timeout
        self.sock = None
        self._rbuf = bytearray()
        self.in_chunk_size = 128
        self.out_chunk_size = 128
        self._in = {}
        self._out_last = {}  # csid -> (stream_id, type, length, timestamp) for the writer
        self.window_ack_size = None  # peer's Window Acknowledgement Size
        self.peer_bw = None
        self.bytes_received = 0
        self._last_ack_sent = 0
        self.auto_ack = True
        self.auto_pong = True
        self.txn = 0
        self.user_events = []  # (event, data bytes)
        self.closed = False
        self.server_version = None
        self._local = ('?', 0)
        if connect:
            self.open(rcvbuf)

    # -- socket ---------------------------------------------------------------------------------
    def open(self, rcvbuf=None):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf is not None:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        s.settimeout(self.timeout)
        s.connect((self.host, self.port))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = s
        self._local = s.getsockname()[:2]
        return s

    @property
    def local_port(self):
        return self._local[1]

    @property
    def peer_name(self):
        """'127.0.0.1:PORT': this client as the server sees it (and names it in its log)."""
        return '%s:%d' % self._local

    def close(self):
        if self.sock is not None:
            try:
                self.sock.close()
            except OSError:
                pass
        self.closed = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send_raw(self, data):
        self.sock.sendall(bytes(data))

    def _fill(self, n, deadline):
        """Read until at least n bytes are buffered. Raises socket.timeout / ConnectionClosed."""
        while len(self._rbuf) < n:
            remaining = None
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise socket.timeout('timed out waiting for %d bytes' % n)
            self.sock.settimeout(remaining)
            try:
                data = self.sock.recv(max(65536, n - len(self._rbuf)))
            except (ConnectionResetError, BrokenPipeError) as e:
                self.closed = True
                raise ConnectionClosed(str(e))
            if not data:
                self.closed = True
                raise ConnectionClosed('connection closed by peer')
            self._rbuf += data
            self.bytes_received += len(data)

    def recv_exact(self, n, timeout=None):
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        self._fill(n, deadline)
        out = bytes(self._rbuf[:n])
        del self._rbuf[:n]
        return out

    def recv_raw(self, timeout=1.0, max_bytes=65536):
        """Whatever arrives within timeout (b'' if the peer closed; None if nothing came)."""
        if self._rbuf:
            out = bytes(self._rbuf[:max_bytes])
            del self._rbuf[:max_bytes]
            return out
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(max_bytes)
        except socket.timeout:
            return None
        except (ConnectionResetError, BrokenPipeError):
            self.closed = True
            return b''
        if not data:
            self.closed = True
        self.bytes_received += len(data)
        return data

    def wait_closed(self, timeout=5.0):
        """Drain incoming bytes until the peer closes. True if it closed within timeout."""
        deadline = time.monotonic() + timeout
        self._rbuf.clear()
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            self.sock.settimeout(remaining)
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                return False
            except (ConnectionResetError, BrokenPipeError):
                self.closed = True
                return True
            except OSError:
                self.closed = True
                return True
            if not data:
                self.closed = True
                return True

    # -- handshake ------------------------------------------------------------------------------
    def handshake(self, timeout=None):
        """The simple handshake: C0+C1 (time, zero version, random), read S0 S1 S2, send C2."""
        c1 = struct.pack('>II', 0, 0) + os.urandom(1528)
        self.send_raw(b'\x03' + c1)
        s0 = self.recv_exact(1, timeout)
        if s0[0] != 3:
            raise RtmpError('S0 version %d' % s0[0])
        s1 = self.recv_exact(1536, timeout)
        s2 = self.recv_exact(1536, timeout)
        self.server_version = s1[4:8]
        self.s2_echoes_c1 = s2[8:] == c1[8:]
        # C2 echoes S1 (time, time2 = our read time, random).
        self.send_raw(s1[0:4] + struct.pack('>I', 0) + s1[8:])
        return s1, s2

    # -- chunk reader ---------------------------------------------------------------------------
    def read_chunk(self, deadline):
        """Read one chunk; return a completed Message or None.

        Nothing is consumed until the whole chunk is buffered, so a timeout leaves the reader
        in a consistent state."""
        self._fill(1, deadline)
        b0 = self._rbuf[0]
        fmt = b0 >> 6
        csid = b0 & 0x3F
        hlen = 1
        if csid == 0:
            self._fill(2, deadline)
            csid = self._rbuf[1] + 64
            hlen = 2
        elif csid == 1:
            self._fill(3, deadline)
            csid = self._rbuf[1] + self._rbuf[2] * 256 + 64
            hlen = 3
        mlen = (11, 7, 3, 0)[fmt]
        self._fill(hlen + mlen, deadline)
        mh = bytes(self._rbuf[hlen:hlen + mlen])
        cs = self._in.get(csid)
        if cs is None and fmt >= 2:
            raise RtmpError('csid %d: fmt %d with no previous header' % (csid, fmt))
        if fmt <= 2:
            ts_field = int.from_bytes(mh[0:3], 'big')
            extended = ts_field == 0xFFFFFF
        else:
            extended = cs.extended
        hdr_total = hlen + mlen + (4 if extended else 0)
        if fmt <= 1:
            length = int.from_bytes(mh[3:6], 'big')
        else:
            length = cs.length
        starting = fmt <= 2 or cs.buf is None
        have = 0 if starting else len(cs.buf)
        n = min(self.in_chunk_size, length - have)
        self._fill(hdr_total + n, deadline)
        ext_val = None
        if extended:
            ext_val = int.from_bytes(self._rbuf[hlen + mlen:hdr_total], 'big')
        body = bytes(self._rbuf[hdr_total:hdr_total + n])
        del self._rbuf[:hdr_total + n]

        if cs is None:
            cs = self._in[csid] = _InChunkStream()
        if fmt <= 2:
            # A new header in the middle of a message abandons the partial one.
            cs.ts_field = ext_val if extended else ts_field
            cs.extended = extended
            if fmt <= 1:
                cs.length = length
                cs.type = mh[6]
            if fmt == 0:
                cs.stream_id = int.from_bytes(mh[7:11], 'little')
                cs.timestamp = cs.ts_field
            else:
                cs.timestamp = (cs.timestamp + cs.ts_field) & 0xFFFFFFFF
            cs.has_header = True
        elif starting:
            # fmt 3 starting a new message: the previous delta (or fmt 0 timestamp) repeats,
            # as in ffmpeg and librtmp.
            if extended:
                cs.ts_field = ext_val
            cs.timestamp = (cs.timestamp + cs.ts_field) & 0xFFFFFFFF
        if starting:
            cs.buf = bytearray()
            cs.msg_ts = cs.timestamp
        cs.buf += body
        if len(cs.buf) >= cs.length:
            msg = Message(cs.type, cs.stream_id, cs.msg_ts, bytes(cs.buf), csid)
            cs.buf = None
            return msg
        return None

    def _handle_control(self, msg):
        p = msg.payload
        if msg.type == MSG_SET_CHUNK_SIZE and len(p) >= 4:
            size = struct.unpack('>I', p[:4])[0] & 0x7FFFFFFF
            if size < 1:
                raise RtmpError('peer set chunk size %d' % size)
            self.in_chunk_size = size
        elif msg.type == MSG_ABORT and len(p) >= 4:
            cs = self._in.get(struct.unpack('>I', p[:4])[0])
            if cs is not None:
                cs.buf = None
        elif msg.type == MSG_WINDOW_ACK_SIZE and len(p) >= 4:
            self.window_ack_size = struct.unpack('>I', p[:4])[0]
        elif msg.type == MSG_SET_PEER_BW and len(p) >= 4:
            self.peer_bw = struct.unpack('>I', p[:4])[0]
        elif msg.type == MSG_USER_CONTROL and len(p) >= 2:
            ev = struct.unpack('>H', p[:2])[0]
            self.user_events.append((ev, p[2:]))
            if ev == UC_PING_REQUEST and self.auto_pong:
                self.send_user_control(UC_PING_RESPONSE, p[2:6])

    def _maybe_ack(self):
        if (self.auto_ack and self.window_ack_size and
                self.bytes_received - self._last_ack_sent >= self.window_ack_size // 2):
            self._last_ack_sent = self.bytes_received
            self.send_message(MSG_ACK, struct.pack('>I', self.bytes_received & 0xFFFFFFFF),
                              csid=CSID_CONTROL)

    def read_message(self, timeout=None):
        """Next complete message (control messages included, after acting on them).

        Raises socket.timeout when nothing complete arrives in time, ConnectionClosed on EOF."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            msg = self.read_chunk(deadline)
            if msg is None:
                continue
            if msg.type in PROTOCOL_CONTROL_TYPES:
                self._handle_control(msg)
            self._maybe_ack()
            return msg

    def read_until(self, pred, timeout=None):
        """Read messages until pred(msg) is true; return (that message, all messages read)."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        seen = []
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise socket.timeout('condition not met; read %r' % (seen[-10:],))
            msg = self.read_message(remaining)
            seen.append(msg)
            if pred(msg):
                return msg, seen

    # -- chunk writer ---------------------------------------------------------------------------
    def send_message(self, msg_type, payload, csid=CSID_COMMAND, stream_id=0, timestamp=0):
        self.send_raw(chunk_message(payload, msg_type, csid, stream_id, timestamp,
                                    self.out_chunk_size))

    def set_chunk_size(self, size, apply=True):
        """Send Set Chunk Size (any 32-bit value, for tests); use it for what we send after."""
        self.send_message(MSG_SET_CHUNK_SIZE, struct.pack('>I', size & 0xFFFFFFFF),
                          csid=CSID_CONTROL)
        if apply:
            self.out_chunk_size = size

    def send_user_control(self, event, data=b''):
        self.send_message(MSG_USER_CONTROL, struct.pack('>H', event) + bytes(data),
                          csid=CSID_CONTROL)

    def send_window_ack_size(self, size):
        self.send_message(MSG_WINDOW_ACK_SIZE, struct.pack('>I', size), csid=CSID_CONTROL)

    def send_command(self, name, txn, *args, stream_id=0, csid=None):
        payload = amf0_encode(name, txn, *args)
        if csid is None:
            csid = CSID_COMMAND if stream_id == 0 else CSID_STREAM_COMMAND
        self.send_message(MSG_COMMAND_AMF0, payload, csid=csid, stream_id=stream_id)

    def send_data(self, *values, stream_id=1, timestamp=0):
        self.send_message(MSG_DATA_AMF0, amf0_encode(*values), csid=CSID_DATA,
                          stream_id=stream_id, timestamp=timestamp)

    def send_audio(self, payload, timestamp, stream_id=1):
        self.send_message(MSG_AUDIO, payload, csid=CSID_AUDIO, stream_id=stream_id,
                          timestamp=timestamp)

    def send_video(self, payload, timestamp, stream_id=1):
        self.send_message(MSG_VIDEO, payload, csid=CSID_VIDEO, stream_id=stream_id,
                          timestamp=timestamp)

    # -- commands -------------------------------------------------------------------------------
    def next_txn(self):
        self.txn += 1
        return self.txn

    def wait_result(self, txn, timeout=None):
        """Wait for _result/_error of txn; return (name, [values after txn])."""
        def pred(m):
            if m.type not in (MSG_COMMAND_AMF0, MSG_COMMAND_AMF3):
                return False
            try:
                v = m.amf()
            except AmfError:
                return False
            return len(v) >= 2 and v[0] in ('_result', '_error') and v[1] == txn
        msg, _ = self.read_until(pred, timeout)
        v = msg.amf()
        return v[0], v[2:]

    def wait_status(self, codes=None, timeout=None, stream_id=None):
        """Wait for onStatus (optionally one whose code is in codes); return its info object."""
        if isinstance(codes, str):
            codes = (codes,)

        def pred(m):
            if m.type not in (MSG_COMMAND_AMF0, MSG_COMMAND_AMF3):
                return False
            if stream_id is not None and m.stream_id != stream_id:
                return False
            try:
                v = m.amf()
            except AmfError:
                return False
            if not v or v[0] != 'onStatus':
                return False
            info = status_info(v)
            return codes is None or info.get('code') in codes
        msg, _ = self.read_until(pred, timeout)
        return status_info(msg.amf())

    def connect(self, app, tc_url=None, extra=None, timeout=None, handshake=True):
        """Handshake (unless already done), connect; return (name, [values]) of the answer:
        ('_result', [properties, info]) or ('_error', [..., info])."""
        if handshake:
            self.handshake(timeout)
        if tc_url is None:
            tc_url = 'rtmp://%s:%d/%s' % (self.host, self.port, app)
        obj = {
            'app': app,
            'flashVer': 'LNX 9,0,124,2',
            'tcUrl': tc_url,
            'fpad': False,
            'capabilities': 15,
            'audioCodecs': 4071,
            'videoCodecs': 252,
            'videoFunction': 1,
            'objectEncoding': 0,
        }
        if extra:
            obj.update(extra)
        txn = self.next_txn()
        self.send_command('connect', txn, obj)
        return self.wait_result(txn, timeout)

    def create_stream(self, timeout=None):
        txn = self.next_txn()
        self.send_command('createStream', txn, None)
        name, vals = self.wait_result(txn, timeout)
        if name != '_result':
            raise RtmpError('createStream failed: %r' % (vals,))
        return int(vals[1])

    def play(self, name, stream_id, start=-2, buffer_ms=1000):
        self.send_user_control(UC_SET_BUFFER_LENGTH, struct.pack('>II', stream_id, buffer_ms))
        self.send_command('play', 0, None, name, start, stream_id=stream_id)

    def publish(self, name, stream_id, kind='live'):
        self.send_command('publish', 0, None, name, kind, stream_id=stream_id)

    def delete_stream(self, stream_id):
        self.send_command('deleteStream', 0, None, stream_id)

    def release_stream(self, name):
        self.send_command('releaseStream', self.next_txn(), None, name)

    def fc_publish(self, name):
        self.send_command('FCPublish', self.next_txn(), None, name)


def status_info(amf_values):
    """The info object of an onStatus command (['onStatus', txn, null, {info}])."""
    for v in amf_values[2:]:
        if isinstance(v, dict):
            return v
    return {}


def connect_and_play(host, port, app, name, timeout=5.0, rcvbuf=None, connect_extra=None):
    """Connect (with `connect_extra` fields in the command object), createStream and play; return
    (connection, stream id)."""
    c = RtmpConnection(host, port, timeout=timeout, rcvbuf=rcvbuf)
    try:
        res, vals = c.connect(app, extra=connect_extra)
        if res != '_result':
            raise RtmpError('connect rejected: %r' % (vals,))
        sid = c.create_stream()
        c.play(name, sid)
        return c, sid
    except Exception:
        c.close()
        raise


def connect_and_publish(host, port, app, name, timeout=5.0, wait=True):
    """Connect, createStream and publish; return (connection, stream id, status info or None)."""
    c = RtmpConnection(host, port, timeout=timeout)
    try:
        res, vals = c.connect(app)
        if res != '_result':
            raise RtmpError('connect rejected: %r' % (vals,))
        c.release_stream(name)
        c.fc_publish(name)
        sid = c.create_stream()
        c.publish(name, sid)
        info = None
        if wait:
            info = c.wait_status(timeout=timeout, stream_id=None)
        return c, sid, info
    except Exception:
        c.close()
        raise


# ---------------------------------------------------------------------------------------------
# Player

class MediaRecord:
    __slots__ = ('type', 'timestamp', 'digest', 'arrival', 'size', 'keyframe', 'seq_header')

    def __init__(self, msg):
        self.type = msg.type
        self.timestamp = msg.timestamp
        self.digest = hashlib.sha1(msg.payload).hexdigest()
        self.arrival = msg.arrival
        self.size = len(msg.payload)
        self.keyframe = msg.type == MSG_VIDEO and is_video_keyframe(msg.payload)
        if msg.type == MSG_VIDEO:
            self.seq_header = is_video_seq_header(msg.payload)
        elif msg.type == MSG_AUDIO:
            self.seq_header = is_audio_seq_header(msg.payload)
        else:
            self.seq_header = False

    def __repr__(self):
        return 'Media(type=%d ts=%d size=%d key=%s seq=%s t=%.3f)' % (
            self.type, self.timestamp, self.size, self.keyframe, self.seq_header, self.arrival)


class Player:
    """Plays rtmp://host:port/app/name in a background thread and records what arrives.

    Attributes (read them after stop(), or under .lock while running):
      media     list of MediaRecord for every audio/video message
      data      list of (timestamp, amf values) of data messages (onMetaData, ...)
      statuses  list of onStatus codes in arrival order
      status_infos  the onStatus info objects
      play_sent monotonic time the play command was sent
      error     exception that ended the reader (None on a clean stop)
      closed    True once the server closed the connection
    """

    def __init__(self, host, port, app, name, timeout=5.0, rcvbuf=None, connect_timeout=5.0, connect_extra=None):
        self.host, self.port, self.app, self.name = host, port, app, name
        self.connect_extra = connect_extra
        self.timeout = timeout
        self.rcvbuf = rcvbuf
        self.connect_timeout = connect_timeout
        self.lock = threading.Lock()
        self.media = []
        self.data = []
        self.statuses = []
        self.status_infos = []
        self.play_sent = None
        self.error = None
        self.closed = False
        self.conn = None
        self.stream_id = None
        self._stop = threading.Event()
        self._started = threading.Event()
        self._status_cv = threading.Condition(self.lock)
        self.thread = threading.Thread(target=self._run, name='Player-%s' % name, daemon=True)

    @classmethod
    def from_url(cls, url, **kw):
        # rtmp://host:port/app/name
        rest = url.split('://', 1)[1]
        hostport, app, name = rest.split('/', 2)
        host, _, port = hostport.partition(':')
        return cls(host, int(port or 1935), app, name, **kw)

    def start(self, wait=True):
        self.thread.start()
        if wait:
            if not self._started.wait(self.connect_timeout + 1):
                raise RtmpError('player did not start in time')
            if self.error is not None and self.play_sent is None:
                raise self.error
        return self

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def _run(self):
        try:
            self.conn, self.stream_id = connect_and_play(self.host, self.port, self.app,
                                                         self.name, self.connect_timeout,
                                                         self.rcvbuf, self.connect_extra)
            self.play_sent = time.monotonic()
        except Exception as e:  # noqa: BLE001 - reported through .error
            self.error = e
            self._started.set()
            return
        self._started.set()
        try:
            while not self._stop.is_set():
                try:
                    msg = self.conn.read_message(timeout=0.2)
                except socket.timeout:
                    continue
                self._record(msg)
        except ConnectionClosed:
            self.closed = True
        except OSError as e:
            if not self._stop.is_set():
                self.error = e
                self.closed = True
        except Exception as e:  # noqa: BLE001
            self.error = e
        finally:
            with self._status_cv:
                self._status_cv.notify_all()

    def _record(self, msg):
        with self.lock:
            if msg.type in (MSG_AUDIO, MSG_VIDEO):
                self.media.append(MediaRecord(msg))
            elif msg.type == MSG_AGGREGATE:
                for sub in split_aggregate(msg):
                    if sub.type in (MSG_AUDIO, MSG_VIDEO):
                        self.media.append(MediaRecord(sub))
            elif msg.type in (MSG_DATA_AMF0, MSG_DATA_AMF3):
                try:
                    self.data.append((msg.timestamp, msg.amf()))
                except AmfError:
                    pass
            elif msg.type in (MSG_COMMAND_AMF0, MSG_COMMAND_AMF3):
                try:
                    v = msg.amf()
                except AmfError:
                    return
                if v and v[0] == 'onStatus':
                    info = status_info(v)
                    self.statuses.append(info.get('code'))
                    self.status_infos.append(info)
                    self._status_cv.notify_all()

    def stop(self):
        self._stop.set()
        if self.thread.is_alive():
            self.thread.join(2.0)
        if self.conn is not None:
            self.conn.close()

    @property
    def alive(self):
        return self.thread.is_alive()

    # -- queries ---------------------------------------------------------------------------------
    def wait_status(self, code, timeout=5.0, after_index=0):
        """Wait until onStatus `code` arrives (at index >= after_index); True if it did."""
        deadline = time.monotonic() + timeout
        with self._status_cv:
            while True:
                if code in self.statuses[after_index:]:
                    return True
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self.thread.is_alive():
                    return code in self.statuses[after_index:]
                self._status_cv.wait(min(remaining, 0.2))

    def snapshot(self):
        with self.lock:
            return list(self.media)

    def video_frames(self, include_seq_header=False):
        return [m for m in self.snapshot()
                if m.type == MSG_VIDEO and (include_seq_header or not m.seq_header)]

    def video_frame_count(self):
        return len(self.video_frames())

    def audio_count(self):
        return sum(1 for m in self.snapshot() if m.type == MSG_AUDIO and not m.seq_header)

    def first_video_after_seq_header(self):
        """The first video frame after the (first) AVC sequence header, or None."""
        seen_seq = False
        for m in self.snapshot():
            if m.type != MSG_VIDEO:
                continue
            if m.seq_header:
                seen_seq = True
            elif seen_seq:
                return m
        return None

    def first_video_is_keyframe(self):
        m = self.first_video_after_seq_header()
        return m is not None and m.keyframe

    def media_gaps(self, start=None, end=None):
        """Inter-arrival gaps of media messages arriving in [start, end] (monotonic seconds)."""
        times = [m.arrival for m in self.snapshot()
                 if (start is None or m.arrival >= start) and (end is None or m.arrival <= end)]
        return [b - a for a, b in zip(times, times[1:])]

    def max_gap(self, start=None, end=None):
        """Largest inter-arrival gap of media messages over the window [start, end]; the edges
        of the window count too (the time from start to the first message, and from the last
        one to end), so a player that stalled at the end of the window is caught."""
        if end is None:
            end = time.monotonic()
        snap = self.snapshot()
        times = [m.arrival for m in snap if (start is None or m.arrival >= start) and
                 m.arrival <= end]
        if start is None:
            start = times[0] if times else (self.play_sent or end)
        if not times:
            return end - start
        points = [start] + times + [end]
        return max(b - a for a, b in zip(points, points[1:]))

    def timestamps_backwards(self, msg_type=None):
        """Pairs (previous, current) of records of one type whose timestamp went backwards."""
        out = []
        last = {}
        for m in self.snapshot():
            if msg_type is not None and m.type != msg_type:
                continue
            prev = last.get(m.type)
            if prev is not None and m.timestamp < prev.timestamp:
                out.append((prev, m))
            last[m.type] = m
        return out
