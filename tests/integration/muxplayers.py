"""Many lightweight players in one thread (Python standard library only): RTMP and HTTP-FLV
players multiplexed with `selectors`, for tests that need hundreds of them at once.

    players = MuxPlayers('127.0.0.1', rtmp_port, http_port)
    players.add_rtmp('live', 'cam', 200)
    players.add_flv('live', 'cam', 50)
    players.start()                      # the reader thread
    ... players.snapshot() ...           # [PlayerState] copies
    players.stop()

Each player records the SHA-1 of every video frame (sequence headers excepted, at most
`max_frames`), whether it was a keyframe, the onStatus codes (RTMP), and whether the server
closed it. RTMP players answer pings and acknowledge, so the server never times them out. The
RTMP side reuses rtmpclient's AMF0 encoder and chunk writer; the readers here are incremental.
"""

import hashlib
import selectors
import socket
import struct
import threading
import time

from rtmpclient import (MSG_ACK, MSG_AUDIO, MSG_COMMAND_AMF0, MSG_SET_CHUNK_SIZE, MSG_USER_CONTROL,
                        MSG_VIDEO, MSG_WINDOW_ACK_SIZE, AmfError, amf0_decode, amf0_encode,
                        chunk_message, is_video_keyframe, is_video_seq_header, status_info)

_C1 = struct.pack('>II', 0, 0) + bytes(1528)


class PlayerState:
    """What one player saw (a copy: safe to read while the reader thread runs)."""
    __slots__ = ('kind', 'local_port', 'frames', 'statuses', 'closed', 'error', 'audio', 'last_media', 'max_gap', 'video')

    def __init__(self, kind, local_port):
        self.kind = kind
        self.local_port = local_port
        self.frames = []       # (sha1 hex, keyframe) of video frames, sequence headers excluded
        self.statuses = []     # onStatus codes (RTMP)
        self.closed = False
        self.error = None
        self.audio = 0
        self.last_media = None
        self.max_gap = 0.0     # longest time between two media messages (s)
        self.video = []        # (monotonic arrival, timestamp ms) of video frames, headers excluded

    def copy(self):
        c = PlayerState(self.kind, self.local_port)
        c.frames = list(self.frames)
        c.statuses = list(self.statuses)
        c.closed, c.error, c.audio, c.last_media = self.closed, self.error, self.audio, self.last_media
        c.max_gap = self.max_gap
        c.video = list(self.video)
        return c


class _Player:
    def __init__(self, kind, sock, max_frames):
        self.sock = sock
        self.buf = bytearray()
        self.pos = 0
        self.state = PlayerState(kind, sock.getsockname()[1])
        self.max_frames = max_frames
        self.out = bytearray()

    def media(self, payload, video, ts=None):
        st = self.state
        now = time.monotonic()
        if st.last_media is not None:
            st.max_gap = max(st.max_gap, now - st.last_media)
        st.last_media = now
        if not video:
            st.audio += 1
        elif not is_video_seq_header(payload) and len(st.frames) < self.max_frames:
            st.frames.append((hashlib.sha1(payload).hexdigest(), is_video_keyframe(payload)))
            st.video.append((st.last_media, ts))

    def avail(self):
        return len(self.buf) - self.pos

    def compact(self):
        if self.pos > 65536:
            del self.buf[:self.pos]
            self.pos = 0


class _Rtmp(_Player):
    def __init__(self, sock, app, name, host, port, max_frames):
        super().__init__('rtmp', sock, max_frames)
        self.app, self.name, self.tc_url = app, name, 'rtmp://%s:%d/%s' % (host, port, app)
        self.handshaken = False
        self.chunk_size = 128
        self.cs = {}  # csid -> [timestamp, length, type, stream id, body or None, extended]
        self.received = 0
        self.acked = 0
        self.window = 0
        self.out += b'\x03' + _C1

    def feed(self):
        if not self.handshaken:
            if self.avail() < 1 + 1536 * 2:
                return
            s1 = bytes(self.buf[self.pos + 1:self.pos + 1537])
            self.pos += 1 + 1536 * 2
            self.handshaken = True
            self.out += s1[0:4] + b'\0\0\0\0' + s1[8:]  # C2 echoes S1
            connect = {'app': self.app, 'flashVer': 'LNX 9,0,124,2', 'tcUrl': self.tc_url, 'fpad': False,
                       'capabilities': 15, 'audioCodecs': 4071, 'videoCodecs': 252, 'videoFunction': 1,
                       'objectEncoding': 0}
            self.out += chunk_message(amf0_encode('connect', 1, connect), MSG_COMMAND_AMF0, 3)
            self.out += chunk_message(amf0_encode('createStream', 2, None), MSG_COMMAND_AMF0, 3)
            self.out += chunk_message(struct.pack('>HII', 3, 1, 1000), MSG_USER_CONTROL, 2)
            self.out += chunk_message(amf0_encode('play', 0, None, self.name, -2), MSG_COMMAND_AMF0, 8, stream_id=1)
        while self.chunk():
            pass
        self.compact()

    def chunk(self):
        b, p = self.buf, self.pos
        n = len(b) - p
        if n < 1:
            return False
        fmt, csid, h = b[p] >> 6, b[p] & 0x3F, 1
        if csid == 0:
            if n < 2:
                return False
            csid, h = b[p + 1] + 64, 2
        elif csid == 1:
            if n < 3:
                return False
            csid, h = b[p + 1] + b[p + 2] * 256 + 64, 3
        mlen = (11, 7, 3, 0)[fmt]
        if n < h + mlen:
            return False
        st = self.cs.get(csid)
        if st is None:
            if fmt != 0:
                raise ValueError('csid %d starts with fmt %d' % (csid, fmt))
            st = self.cs[csid] = [0, 0, 0, 0, None, False]
        q = p + h
        if fmt <= 2:
            ts = int.from_bytes(b[q:q + 3], 'big')
            ext = ts == 0xFFFFFF
        else:
            ext = st[5]
        hl = h + mlen + (4 if ext else 0)
        length = int.from_bytes(b[q + 3:q + 6], 'big') if fmt <= 1 else st[1]
        have = len(st[4]) if (fmt == 3 and st[4] is not None) else 0
        take = min(self.chunk_size, length - have)
        if n < hl + take:
            return False
        if fmt <= 2:
            if ext:
                ts = int.from_bytes(b[p + h + mlen:p + hl], 'big')
            if fmt == 0:
                st[0] = ts
                st[3] = int.from_bytes(b[q + 7:q + 11], 'little')
            else:
                st[0] = (st[0] + ts) & 0xFFFFFFFF
            if fmt <= 1:
                st[1], st[2] = length, b[q + 6]
            st[5] = ext
            st[4] = bytearray()
        elif st[4] is None:
            st[4] = bytearray()
        st[4] += b[p + hl:p + hl + take]
        self.pos = p + hl + take
        self.received += hl + take
        if len(st[4]) >= st[1]:
            body, st[4] = bytes(st[4]), None
            self.message(st[2], body, st[0])
        if self.window and self.received - self.acked >= self.window // 2:
            self.acked = self.received
            self.out += chunk_message(struct.pack('>I', self.received & 0xFFFFFFFF), MSG_ACK, 2)
        return True

    def message(self, mtype, body, ts=None):
        if mtype == MSG_VIDEO or mtype == MSG_AUDIO:
            self.media(body, mtype == MSG_VIDEO, ts)
        elif mtype == MSG_SET_CHUNK_SIZE:
            self.chunk_size = struct.unpack('>I', body[:4])[0] & 0x7FFFFFFF
        elif mtype == MSG_WINDOW_ACK_SIZE:
            self.window = struct.unpack('>I', body[:4])[0]
        elif mtype == MSG_USER_CONTROL and len(body) >= 6 and body[:2] == b'\x00\x06':
            self.out += chunk_message(b'\x00\x07' + body[2:6], MSG_USER_CONTROL, 2)
        elif mtype == MSG_COMMAND_AMF0:
            try:
                v = amf0_decode(body)
            except AmfError:
                return
            if v and v[0] == 'onStatus':
                self.state.statuses.append(status_info(v).get('code'))


class _Flv(_Player):
    def __init__(self, sock, app, name, host, port, max_frames):
        super().__init__('flv', sock, max_frames)
        self.status = None
        self.header_done = False
        self.out += ('GET /%s/%s.flv HTTP/1.0\r\nHost: %s:%d\r\n\r\n' % (app, name, host, port)).encode()

    def feed(self):
        b = self.buf
        if self.status is None:
            end = b.find(b'\r\n\r\n', self.pos)
            if end < 0:
                return
            line = bytes(b[self.pos:b.find(b'\r\n', self.pos)]).decode('latin-1')
            self.status = int(line.split()[1])
            self.pos = end + 4
            if self.status != 200:
                raise ValueError('HTTP status %d' % self.status)
        if not self.header_done:
            if self.avail() < 13:
                return
            if b[self.pos:self.pos + 3] != b'FLV':
                raise ValueError('not an FLV stream')
            self.pos += 13
            self.header_done = True
        while self.avail() >= 11:
            p = self.pos
            size = int.from_bytes(b[p + 1:p + 4], 'big')
            if self.avail() < 11 + size + 4:
                break
            t = b[p] & 0x1F
            if t in (8, 9):
                ts = int.from_bytes(b[p + 4:p + 7], 'big') | (b[p + 7] << 24)
                self.media(bytes(b[p + 11:p + 11 + size]), t == 9, ts)
            self.pos = p + 11 + size + 4
        self.compact()


class MuxPlayers:
    def __init__(self, host, rtmp_port, http_port, max_frames=400):
        self.host, self.rtmp_port, self.http_port = host, rtmp_port, http_port
        self.max_frames = max_frames
        self.sel = selectors.DefaultSelector()
        self.players = []
        self.lock = threading.Lock()
        self._stop = threading.Event()
        self.thread = None

    def _add(self, cls, port, app, name, count):
        for _ in range(count):
            s = socket.create_connection((self.host, port), timeout=5)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            s.setblocking(False)
            p = cls(s, app, name, self.host, port, self.max_frames)
            with self.lock:
                self.players.append(p)
                self.sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE, p)

    def add_rtmp(self, app, name, count):
        self._add(_Rtmp, self.rtmp_port, app, name, count)

    def add_flv(self, app, name, count):
        self._add(_Flv, self.http_port, app, name, count)

    def start(self):
        self.thread = threading.Thread(target=self._run, name='MuxPlayers', daemon=True)
        self.thread.start()
        return self

    def _close(self, p, error=None):
        if p.state.closed:
            return
        p.state.closed = True
        p.state.error = error
        try:
            self.sel.unregister(p.sock)
        except (KeyError, ValueError):
            pass
        p.sock.close()

    def _run(self):
        while not self._stop.is_set():
            with self.lock:
                events = self.sel.select(0.05) if self.sel.get_map() else []
                for key, mask in events:
                    p = key.data
                    try:
                        if mask & selectors.EVENT_READ:
                            data = p.sock.recv(262144)
                            if not data:
                                self._close(p)
                                continue
                            p.buf += data
                            p.feed()
                        if p.out:
                            n = p.sock.send(p.out)
                            del p.out[:n]
                        want = selectors.EVENT_READ | (selectors.EVENT_WRITE if p.out else 0)
                        if key.events != want:
                            self.sel.modify(p.sock, want, p)
                    except (BlockingIOError, InterruptedError):
                        pass
                    except (OSError, ValueError) as e:
                        self._close(p, e)
            if not events:
                time.sleep(0.005)

    def snapshot(self):
        with self.lock:
            return [p.state.copy() for p in self.players]

    def close_all(self):
        with self.lock:
            for p in self.players:
                self._close(p)

    def stop(self):
        self._stop.set()
        if self.thread:
            self.thread.join(5)
        self.close_all()
