"""A tiny FLV file parser for integration tests (standard library only).

    f = flvutil.parse_file('out.flv')
    f.has_video, f.has_audio, f.tags[0].timestamp, f.video_tags(), f.first_video_frame() ...

Raises FlvError on a malformed file. A file cut in the middle of its last tag (rtmpdump stopped
by a timeout) is accepted with allow_truncated=True (the default): the partial tag is dropped
and .truncated is set.
"""

import struct

TAG_AUDIO = 8
TAG_VIDEO = 9
TAG_SCRIPT = 18


class FlvError(Exception):
    pass


class FlvTag:
    __slots__ = ('type', 'timestamp', 'stream_id', 'data', 'offset', 'filtered')

    def __init__(self, tag_type, timestamp, stream_id, data, offset, filtered=False):
        self.type = tag_type
        self.timestamp = timestamp
        self.stream_id = stream_id
        self.data = data
        self.offset = offset
        self.filtered = filtered

    @property
    def is_video(self):
        return self.type == TAG_VIDEO

    @property
    def is_audio(self):
        return self.type == TAG_AUDIO

    @property
    def is_script(self):
        return self.type == TAG_SCRIPT

    @property
    def codec_id(self):
        """Video codec id (7 = AVC, 12 = HEVC) or audio sound format (10 = AAC)."""
        if not self.data:
            return None
        if self.type == TAG_VIDEO:
            return self.data[0] & 0x0F
        if self.type == TAG_AUDIO:
            return self.data[0] >> 4
        return None

    @property
    def is_keyframe(self):
        """Video frame type 1 (keyframe)."""
        return self.type == TAG_VIDEO and len(self.data) >= 1 and (self.data[0] >> 4) == 1

    @property
    def is_seq_header(self):
        """AVC/HEVC sequence header (packet type 0) or AAC sequence header (packet type 0)."""
        if len(self.data) < 2:
            return False
        if self.type == TAG_VIDEO:
            if self.data[0] & 0x80:  # enhanced RTMP ex-header
                return (self.data[0] & 0x0F) == 0
            return (self.data[0] & 0x0F) in (7, 12) and self.data[1] == 0
        if self.type == TAG_AUDIO:
            return (self.data[0] >> 4) == 10 and self.data[1] == 0
        return False

    @property
    def composition_time(self):
        """AVC composition time offset (signed 24 bit) of a video tag, else 0."""
        if self.type == TAG_VIDEO and len(self.data) >= 5 and (self.data[0] & 0x0F) == 7:
            v = int.from_bytes(self.data[2:5], 'big')
            return v - (1 << 24) if v & 0x800000 else v
        return 0

    def __repr__(self):
        return 'FlvTag(type=%d ts=%d size=%d key=%s seq=%s)' % (
            self.type, self.timestamp, len(self.data), self.is_keyframe, self.is_seq_header)


class FlvFile:
    def __init__(self):
        self.version = 1
        self.flags = 0
        self.tags = []
        self.truncated = False
        self.size = 0

    @property
    def header_has_audio(self):
        return bool(self.flags & 0x04)

    @property
    def header_has_video(self):
        return bool(self.flags & 0x01)

    def video_tags(self):
        return [t for t in self.tags if t.type == TAG_VIDEO]

    def audio_tags(self):
        return [t for t in self.tags if t.type == TAG_AUDIO]

    def script_tags(self):
        return [t for t in self.tags if t.type == TAG_SCRIPT]

    @property
    def has_video(self):
        return any(t.type == TAG_VIDEO and not t.is_seq_header for t in self.tags)

    @property
    def has_audio(self):
        return any(t.type == TAG_AUDIO and not t.is_seq_header for t in self.tags)

    def video_frames(self):
        """Video tags that are not sequence headers."""
        return [t for t in self.tags if t.type == TAG_VIDEO and not t.is_seq_header]

    def keyframes(self):
        return [t for t in self.video_frames() if t.is_keyframe]

    def first_video_frame(self):
        v = self.video_frames()
        return v[0] if v else None

    def video_seq_header_first(self):
        """True if a video sequence header comes before the first video frame."""
        for t in self.tags:
            if t.type == TAG_VIDEO:
                return t.is_seq_header
        return False

    def duration_ms(self, tag_type=None):
        ts = [t.timestamp for t in self.tags if tag_type is None or t.type == tag_type]
        return (max(ts) - min(ts)) if ts else 0

    def timestamps_backwards(self, tag_type):
        ts = [t.timestamp for t in self.tags if t.type == tag_type]
        return [(a, b) for a, b in zip(ts, ts[1:]) if b < a]


def parse_bytes(data, allow_truncated=True, check_back_pointers=True):
    data = bytes(data)
    f = FlvFile()
    f.size = len(data)
    if len(data) < 9 or data[:3] != b'FLV':
        raise FlvError('not an FLV file (signature %r)' % data[:3])
    f.version = data[3]
    f.flags = data[4]
    (header_size,) = struct.unpack('>I', data[5:9])
    if header_size < 9 or header_size > len(data):
        raise FlvError('bad FLV header size %d' % header_size)
    pos = header_size
    if len(data) < pos + 4:
        if allow_truncated:
            f.truncated = True
            return f
        raise FlvError('missing PreviousTagSize0')
    (prev0,) = struct.unpack('>I', data[pos:pos + 4])
    if prev0 != 0:
        raise FlvError('PreviousTagSize0 is %d, expected 0' % prev0)
    pos += 4
    while pos < len(data):
        if pos + 11 > len(data):
            if allow_truncated:
                f.truncated = True
                break
            raise FlvError('truncated tag header at offset %d' % pos)
        b0 = data[pos]
        tag_type = b0 & 0x1F
        filtered = bool(b0 & 0x20)
        size = int.from_bytes(data[pos + 1:pos + 4], 'big')
        ts = int.from_bytes(data[pos + 4:pos + 7], 'big') | (data[pos + 7] << 24)
        sid = int.from_bytes(data[pos + 8:pos + 11], 'big')
        if tag_type not in (TAG_AUDIO, TAG_VIDEO, TAG_SCRIPT):
            raise FlvError('unknown tag type %d at offset %d' % (tag_type, pos))
        end = pos + 11 + size
        if end + 4 > len(data):
            if allow_truncated:
                f.truncated = True
                break
            raise FlvError('truncated tag at offset %d' % pos)
        (prev,) = struct.unpack('>I', data[end:end + 4])
        if check_back_pointers and prev != size + 11:
            raise FlvError('PreviousTagSize %d != %d at offset %d' % (prev, size + 11, end))
        f.tags.append(FlvTag(tag_type, ts, sid, data[pos + 11:end], pos, filtered))
        pos = end + 4
    return f


def parse_file(path, **kw):
    with open(path, 'rb') as fh:
        return parse_bytes(fh.read(), **kw)


def script_values(tag):
    """AMF0 values of a script tag (['onMetaData', {...}])."""
    from rtmpclient import amf0_decode
    return amf0_decode(tag.data)
