"""The malformed-session corpus of test_malformed (docs/operations.md, "Malformed input"): each
case is (name, function); the function opens its own connection to a live server (RTMP port,
HTTP port or a worker's Unix socket), sends something malformed and returns the socket. The
server must close it (at once, or by a timeout) and nothing else.

Cases are grouped by what they attack: handshake, chunk stream, AMF0, FLV/AVC/AAC payloads,
HTTP requests, worker-link requests.
"""

import os
import socket
import struct

import rtmpclient as rc

HOST = '127.0.0.1'
MAX_MESSAGE = 1024 * 1024  # rtmp.max_message_size of the test server


def _tcp(port):
    s = socket.create_connection((HOST, port), timeout=5)
    return s


def _raw_rtmp(rill, data):
    s = _tcp(rill.rtmp_port)
    if data:
        s.sendall(data)
    return s


def _after_handshake(rill, data):
    c = rc.RtmpConnection(HOST, rill.rtmp_port, timeout=5)
    c.handshake()
    if data:
        c.send_raw(data)
    return c.sock


def _after_connect(rill, data, app='live'):
    c = rc.RtmpConnection(HOST, rill.rtmp_port, timeout=5)
    c.connect(app)
    if callable(data):
        data(c)
    elif data:
        c.send_raw(data)
    return c.sock


def _publishing(rill, name, send):
    c = rc.RtmpConnection(HOST, rill.rtmp_port, timeout=5)
    c.connect('live')
    sid = c.create_stream()
    c.publish(name, sid)
    c.wait_status(['NetStream.Publish.Start'])
    send(c, sid)
    return c.sock


def _cmd(name, *values, stream_id=0):
    return rc.chunk_message(rc.amf0_encode(name, *values), rc.MSG_COMMAND_AMF0, 3, stream_id)


def _raw_cmd(payload, stream_id=0, msg_type=rc.MSG_COMMAND_AMF0):
    return rc.chunk_message(payload, msg_type, 3, stream_id)


def _http(rill, data):
    s = _tcp(rill.http_port)
    s.sendall(data)
    return s


def _link(rill, data):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(os.path.join(rill.runtime_dir, 'worker-%d.sock' % (len(data) % 2)))
    if data:
        s.sendall(data)
    return s


def _connect_payload(props):
    return _raw_cmd(rc.amf0_encode('connect', 1) + props)


def _many_props(n):
    out = bytearray(b'\x03')
    for i in range(n):
        k = ('k%d' % i).encode()
        out += struct.pack('>H', len(k)) + k + b'\x05'  # null values
    return bytes(out + b'\x00\x00\x09')


def _video(c, sid, payload, ts=0):
    c.send_video(payload, ts, stream_id=sid)


def _avc_seq(body):
    return b'\x17\x00\x00\x00\x00' + body


def handshake_cases():
    return [
        ('handshake: version 6 (RTMPE)', lambda r: _raw_rtmp(r, b'\x06' + os.urandom(1536))),
        ('handshake: version 0xff', lambda r: _raw_rtmp(r, b'\xff' + bytes(1536))),
        ('handshake: version 0', lambda r: _raw_rtmp(r, b'\x00' + bytes(1536))),
        ('handshake: C0 only, then silence', lambda r: _raw_rtmp(r, b'\x03')),
        ('handshake: half of C1, then silence', lambda r: _raw_rtmp(r, b'\x03' + bytes(700))),
        ('handshake: nothing at all', lambda r: _raw_rtmp(r, b'')),
        ('handshake: HTTP request on the RTMP port', lambda r: _raw_rtmp(r, b'GET / HTTP/1.1\r\nHost: x\r\n\r\n')),
        ('handshake: TLS ClientHello on the RTMP port', lambda r: _raw_rtmp(r, bytes.fromhex('16030100') + os.urandom(300))),
        ('handshake: 64 KiB of random bytes', lambda r: _raw_rtmp(r, b'\x03' + os.urandom(65536))),
        ('handshake: silence right after the handshake', lambda r: _after_handshake(r, b'')),
    ]


def chunk_cases():
    big_len = rc.chunk_header(0, 3, 0, MAX_MESSAGE + 1, rc.MSG_COMMAND_AMF0, 0)
    return [
        ('chunk: fmt 3 on a new chunk stream', lambda r: _after_handshake(r, rc.chunk_header(3, 9) + bytes(200))),
        ('chunk: fmt 1 on a new chunk stream', lambda r: _after_handshake(r, rc.chunk_header(1, 9, 0, 10, 20) + bytes(10))),
        ('chunk: fmt 2 on a new chunk stream', lambda r: _after_handshake(r, rc.chunk_header(2, 9, 5) + bytes(10))),
        ('chunk: Set Chunk Size 0', lambda r: _after_handshake(r, rc.chunk_message(struct.pack('>I', 0), rc.MSG_SET_CHUNK_SIZE, 2))),
        ('chunk: Set Chunk Size 2^31', lambda r: _after_handshake(r, rc.chunk_message(struct.pack('>I', 0x80000000), rc.MSG_SET_CHUNK_SIZE, 2))),
        ('chunk: Set Chunk Size above the limit', lambda r: _after_handshake(r, rc.chunk_message(struct.pack('>I', 0x7FFFFFFF), rc.MSG_SET_CHUNK_SIZE, 2))),
        ('chunk: Set Chunk Size of 2 bytes', lambda r: _after_handshake(r, rc.chunk_message(b'\x00\x01', rc.MSG_SET_CHUNK_SIZE, 2))),
        ('chunk: message above max_message_size', lambda r: _after_handshake(r, big_len + bytes(128))),
        ('chunk: 3-byte csid 65599, then garbage', lambda r: _after_handshake(r, rc.chunk_header(0, 65599, 0, 4, 1, 0) + b'\xff' * 300)),
        ('chunk: 20000 chunk streams opened', lambda r: _after_handshake(r, b''.join(
            rc.chunk_header(0, 64 + i, 0, 1000, 9, 1) + bytes(128) for i in range(20000)))),
        ('chunk: message type 0', lambda r: _after_handshake(r, rc.chunk_message(b'xx', 0, 3))),
        ('chunk: message type 255', lambda r: _after_handshake(r, rc.chunk_message(b'x' * 50, 255, 3))),
        ('chunk: Abort of an unknown chunk stream', lambda r: _after_handshake(r, rc.chunk_message(struct.pack('>I', 77), rc.MSG_ABORT, 2) + bytes(500))),
        ('chunk: Window Ack Size 0 and truncated user control', lambda r: _after_handshake(
            r, rc.chunk_message(struct.pack('>I', 0), rc.MSG_WINDOW_ACK_SIZE, 2) + rc.chunk_message(b'\x00', rc.MSG_USER_CONTROL, 2))),
        ('chunk: extended timestamp 0xffffffff', lambda r: _after_handshake(r, rc.chunk_header(0, 3, 0xFFFFFFFF, 3000, 20, 0) + bytes(128) + rc.chunk_header(3, 3) + bytes(128))),
        ('chunk: aggregate message with lying sizes', lambda r: _publishing(r, 'agg', lambda c, sid: c.send_message(
            rc.MSG_AGGREGATE, b'\x09\xff\xff\xff' + bytes(20), rc.CSID_VIDEO, sid))),
    ]


def amf_cases():
    deep = rc.amf0_nested_objects(100000)
    return [
        ('amf0: object nested 100,000 deep in connect', lambda r: _after_handshake(r, _connect_payload(deep))),
        ('amf0: object nested 100,000 deep, unterminated', lambda r: _after_handshake(r, _connect_payload(rc.amf0_nested_objects(100000, terminated=False)))),
        ('amf0: strict arrays nested 50,000 deep', lambda r: _after_handshake(r, _connect_payload(b'\x0a\x00\x00\x00\x01' * 50000))),
        ('amf0: object with 60,000 properties', lambda r: _after_handshake(r, _connect_payload(_many_props(60000)))),
        ('amf0: ECMA array claiming 4 billion entries', lambda r: _after_handshake(r, _connect_payload(b'\x08\xff\xff\xff\xff\x00\x00\x09'))),
        ('amf0: strict array claiming 4 billion entries', lambda r: _after_handshake(r, _connect_payload(b'\x0a\xff\xff\xff\xff'))),
        ('amf0: long string longer than the message', lambda r: _after_handshake(r, _connect_payload(b'\x0c\x7f\xff\xff\xff' + b'a' * 10))),
        ('amf0: string longer than the message', lambda r: _after_handshake(r, _connect_payload(b'\x02\xff\xff' + b'a' * 10))),
        ('amf0: unknown marker 0x42', lambda r: _after_handshake(r, _connect_payload(b'\x42\x00'))),
        ('amf0: reference marker', lambda r: _after_handshake(r, _connect_payload(b'\x07\x00\x01'))),
        ('amf0: truncated date', lambda r: _after_handshake(r, _connect_payload(b'\x0b\x00\x00'))),
        ('amf0: command name is a number', lambda r: _after_handshake(r, _raw_cmd(rc.amf0_encode(5.0, 1, None)))),
        ('amf0: empty command message', lambda r: _after_handshake(r, _raw_cmd(b''))),
        ('amf0: AMF3 command with garbage', lambda r: _after_handshake(r, _raw_cmd(b'\x00\x11\xff\xff\xff', msg_type=rc.MSG_COMMAND_AMF3))),
        ('amf0: connect without app', lambda r: _after_handshake(r, _raw_cmd(rc.amf0_encode('connect', 1, {'tcUrl': 'x'})))),
        ('amf0: connect to app "../etc"', lambda r: _after_connect(r, b'', app='../etc')),
        ('amf0: publish "../../x"', lambda r: _after_connect(r, lambda c: (c.create_stream(), c.send_raw(_cmd('publish', 0, None, '../../x', 'live', stream_id=1))))),
        ('amf0: publish a 300-byte name', lambda r: _after_connect(r, lambda c: (c.create_stream(), c.send_raw(_cmd('publish', 0, None, 'n' * 300, 'live', stream_id=1))))),
        ('amf0: play before connect', lambda r: _after_handshake(r, _cmd('play', 0, None, 'cam', stream_id=1))),
        ('amf0: 5000 createStream', lambda r: _after_connect(r, b''.join(_cmd('createStream', i + 2, None) for i in range(5000)))),
        ('amf0: metadata nested 100,000 deep', lambda r: _publishing(r, 'meta', lambda c, sid: c.send_message(
            rc.MSG_DATA_AMF0, rc.amf0_encode('@setDataFrame', 'onMetaData') + deep, rc.CSID_DATA, sid))),
    ]


def media_cases():
    return [
        ('flv: video codec id 15', lambda r: _publishing(r, 'v15', lambda c, s: _video(c, s, b'\x1f' + bytes(100)))),
        ('flv: empty video message', lambda r: _publishing(r, 'v0', lambda c, s: _video(c, s, b''))),
        ('flv: empty audio message', lambda r: _publishing(r, 'a0', lambda c, s: c.send_audio(b'', 0, stream_id=s))),
        ('avc: truncated sequence header', lambda r: _publishing(r, 'avc1', lambda c, s: _video(c, s, _avc_seq(b'\x01\x64')))),
        ('avc: sequence header with 31 SPS of lying length', lambda r: _publishing(r, 'avc2', lambda c, s: _video(
            c, s, _avc_seq(b'\x01\x64\x00\x1f\xff\xff' + b'\xff\xff' * 4)))),
        ('avc: NALU length past the payload', lambda r: _publishing(r, 'avc3', lambda c, s: _video(
            c, s, b'\x17\x01\x00\x00\x00' + struct.pack('>I', 0x7fffffff) + b'\x65' * 20))),
        ('avc: NAL units of length 0, many', lambda r: _publishing(r, 'avc4', lambda c, s: _video(
            c, s, b'\x17\x01\x00\x00\x00' + bytes(4) * 20000))),
        ('aac: empty sequence header', lambda r: _publishing(r, 'aac1', lambda c, s: c.send_audio(b'\xaf\x00', 0, stream_id=s))),
        ('aac: sample rate index 15', lambda r: _publishing(r, 'aac2', lambda c, s: c.send_audio(b'\xaf\x00\x17\x80', 0, stream_id=s))),
        ('aac: raw frame before any header, 64 KiB', lambda r: _publishing(r, 'aac3', lambda c, s: c.send_audio(b'\xaf\x01' + os.urandom(65536), 0, stream_id=s))),
        ('enhanced rtmp: unknown FourCC', lambda r: _publishing(r, 'ex1', lambda c, s: _video(c, s, b'\x90zzzz' + bytes(50)))),
        ('flv: timestamps jumping backwards', lambda r: _publishing(r, 'ts1', lambda c, s: [
            _video(c, s, b'\x17\x01\x00\x00\x00\x00\x00\x00\x01\x65', ts) for ts in (100000, 5, 0xFFFFFFF0, 7)])),
    ]


def http_cases():
    return [
        ('http: 100 KB request line', lambda r: _http(r, b'GET /' + b'a' * 100000 + b' HTTP/1.1\r\n\r\n')),
        ('http: 1 MB of headers', lambda r: _http(r, b'GET / HTTP/1.1\r\n' + b'X-A: b\r\n' * 120000 + b'\r\n')),
        ('http: invalid method', lambda r: _http(r, b'BREW /live/cam.flv HTTP/1.1\r\nHost: x\r\n\r\n')),
        ('http: HTTP/0.9 request', lambda r: _http(r, b'GET /live/cam.flv\r\n\r\n')),
        ('http: dot-dot path', lambda r: _http(r, b'GET /live/../../etc/passwd.flv HTTP/1.1\r\nHost: x\r\n\r\n')),
        ('http: percent-encoded NUL in the path', lambda r: _http(r, b'GET /live/c%00am.flv HTTP/1.1\r\nHost: x\r\n\r\n')),
        ('http: chunked body with a bad size', lambda r: _http(r, b'POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzzzz\r\n')),
        ('http: Content-Length of 10 GB', lambda r: _http(r, b'POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000000\r\n\r\nab')),
        ('http: 200 pipelined requests', lambda r: _http(r, b'GET /live/nothing.m3u8 HTTP/1.1\r\nHost: x\r\n\r\n' * 200)),
        ('http: garbage bytes', lambda r: _http(r, os.urandom(4096))),
        ('http: header line without colon', lambda r: _http(r, b'GET / HTTP/1.1\r\nnonsense\r\n\r\n')),
        ('http: HTTP/1.1 without Host', lambda r: _http(r, b'GET /live/cam.flv HTTP/1.1\r\nAccept: */*\r\n\r\n')),
        ('http: absurd HLS segment number', lambda r: _http(r, b'GET /live/cam/99999999999999999999999.ts HTTP/1.1\r\nHost: x\r\n\r\n')),
        ('http: half a request, then silence', lambda r: _http(r, b'GET /live/cam.flv HTTP/1.1\r\nHo')),
    ]


def link_cases():
    return [
        ('link: 600-byte line without newline', lambda r: _link(r, b'P' * 600)),
        ('link: PLAY without a key', lambda r: _link(r, b'PLAY\n')),
        ('link: PLAY of a dot-dot name', lambda r: _link(r, b'PLAY live/../x\n')),
        ('link: HLS with an absurd segment', lambda r: _link(r, b'HLS live/cam 99999999999999999999999.ts\n')),
        ('link: unknown verb', lambda r: _link(r, b'FROB live/cam\n')),
        ('link: binary junk', lambda r: _link(r, os.urandom(300) + b'\n')),
        ('link: a media frame sent to the endpoint', lambda r: _link(r, b'\x09\x01\x00\x00' + bytes(4) + struct.pack('>I', 0xffffffff))),
        ('link: silence', lambda r: _link(r, b'')),
    ]


def all_cases():
    return handshake_cases() + chunk_cases() + amf_cases() + media_cases() + http_cases() + link_cases()
