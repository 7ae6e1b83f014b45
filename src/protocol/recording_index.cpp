#include "rill/protocol/recording_index.h"

#include <algorithm>
#include <cstring>
#include <functional>

#include "rill/protocol/amf0.h"
#include "rill/protocol/error.h"

namespace rill::protocol {

namespace {

constexpr uint32_t fourcc(const char (&s)[5]) {
  return uint32_t(uint8_t(s[0])) << 24 | uint32_t(uint8_t(s[1])) << 16 | uint32_t(uint8_t(s[2])) << 8 |
         uint8_t(s[3]);
}

uint32_t be24(const uint8_t* p) { return uint32_t(p[0]) << 16 | uint32_t(p[1]) << 8 | p[2]; }
uint32_t be32(const uint8_t* p) { return uint32_t(p[0]) << 24 | be24(p + 1); }
uint64_t be64(const uint8_t* p) { return uint64_t(be32(p)) << 32 | be32(p + 4); }

constexpr size_t kMaxTracks = 16;
constexpr uint32_t kMaxFlvDataOffset = 1u << 20;
// §8.8.3.1: sample_is_non_sync_sample, bit 16 of the sample flags.
constexpr uint32_t kNonSyncSample = 0x00010000;

// A full box's body (§4.2): version and flags, then `need` more bytes at least.
struct FullBox {
  uint8_t version;
  uint32_t flags;
};

// The child boxes of a container body; `at` is the body's offset in the file.
void for_each_box(std::span<const uint8_t> body, uint64_t at,
                  const std::function<void(uint32_t, std::span<const uint8_t>, uint64_t)>& fn,
                  const std::function<void(uint64_t, const std::string&)>& fail) {
  size_t off = 0;
  while (off < body.size()) {
    if (body.size() - off < 8)
      fail(at + off, "a box header of 8 bytes, found " + std::to_string(body.size() - off));
    uint64_t size = be32(&body[off]);
    const uint32_t type = be32(&body[off + 4]);
    size_t hdr = 8;
    if (size == 1) {
      if (body.size() - off < 16) fail(at + off, "a 64-bit box size");
      size = be64(&body[off + 8]);
      hdr = 16;
    } else if (size == 0) {
      size = body.size() - off;  // §4.2: to the end of the enclosing box
    }
    if (size < hdr || size > body.size() - off)
      fail(at + off, "box size " + std::to_string(size) + " outside its parent (" +
                         std::to_string(body.size() - off) + " bytes left)");
    fn(type, body.subspan(off + hdr, size - hdr), at + off + hdr);
    off += size;
  }
}

}  // namespace

RecordingIndex::RecordingIndex(RecordingIndexLimits limits) : lim_(limits) { expect(State::Detect, 8); }

void RecordingIndex::fail(uint64_t at, const std::string& what) {
  error_ = "recording index: at offset " + std::to_string(at) + ": " + what;
  state_ = State::Failed;
  throw ProtocolError(error_);
}

void RecordingIndex::expect(State s, size_t bytes) {
  state_ = s;
  buf_.clear();
  want_ = bytes;
}

void RecordingIndex::skip(uint64_t bytes, AfterSkip then) {
  state_ = State::Skip;
  skip_ = bytes;
  after_skip_ = then;
  if (skip_ == 0) skip_done();
}

bool RecordingIndex::take(std::span<const uint8_t>& in) {
  const size_t n = std::min(want_ - buf_.size(), in.size());
  buf_.insert(buf_.end(), in.begin(), in.begin() + static_cast<ptrdiff_t>(n));
  in = in.subspan(n);
  pos_ += n;
  return buf_.size() == want_;
}

void RecordingIndex::feed(std::span<const uint8_t> in) {
  if (state_ == State::Failed) throw ProtocolError(error_);
  while (!in.empty()) {
    if (state_ == State::Skip) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(skip_, in.size()));
      in = in.subspan(n);
      advance(n);
      continue;
    }
    if (!take(in)) return;
    step();
  }
}

void RecordingIndex::advance(uint64_t n) {
  if (state_ != State::Skip || n > skip_) throw ProtocolError("recording index: advance past what it skips");
  skip_ -= n;
  pos_ += n;
  if (skip_ == 0) skip_done();
}

void RecordingIndex::step() {
  switch (state_) {
    case State::Detect:
      return step_detect();
    case State::BoxHeader:
      return step_box_header();
    case State::BoxBody:
      return box_done();
    case State::FlvHeader:
      return step_flv_header();
    case State::FlvTagHeader:
      return step_flv_tag_header();
    case State::FlvTagBody:
      return step_flv_tag_body();
    case State::FlvPrevSize:
      return flv_tag_done();
    case State::Skip:
    case State::Failed:
      return;
  }
}

void RecordingIndex::skip_done() {
  switch (after_skip_) {
    case AfterSkip::BoxEnd:
      if (box_type_ == fourcc("mdat") && open_fragment_) {
        fragment_done();
      } else if (init_size_ > 0 && !stray_mdat_) {
        complete_end_ = pos_;  // a whole box after the moov (free, sidx, mfra...) stays in the file
      }
      return expect(State::BoxHeader, 8);
    case AfterSkip::FlvTagHeader:
      complete_end_ = pos_;
      return expect(State::FlvTagHeader, 11);
    case AfterSkip::FlvPrevSize:
      return expect(State::FlvPrevSize, 4);
  }
}

void RecordingIndex::step_detect() {
  if (buf_[0] == 'F' && buf_[1] == 'L' && buf_[2] == 'V') {
    format_ = RecordingFormat::Flv;
    state_ = State::FlvHeader;
    want_ = 9;  // E.2: the header is 9 bytes in version 1
    return;
  }
  if (be32(&buf_[4]) != fourcc("ftyp")) fail(0, "an FLV header or an MP4 ftyp box");
  format_ = RecordingFormat::Fmp4;
  state_ = State::BoxHeader;
  step_box_header();
}

template <class Entry>
void RecordingIndex::keep(std::vector<Entry>& list, Entry e) {
  if (!lim_.keep_entries) return;
  if (list.size() >= lim_.max_entries)
    fail(unit_start_, "more than " + std::to_string(lim_.max_entries) + " fragments or tags");
  list.push_back(std::move(e));
}

void RecordingIndex::note_time(uint32_t id, uint32_t timescale, uint64_t start, uint64_t duration,
                               bool has_duration) {
  auto it = std::find_if(clocks_.begin(), clocks_.end(), [&](const TrackClock& c) { return c.id == id; });
  if (it == clocks_.end()) {
    if (clocks_.size() >= kMaxTracks) return;
    clocks_.push_back(TrackClock{id, timescale, false, 0, 0, 0, 0});
    it = clocks_.end() - 1;
  }
  TrackClock& c = *it;
  if (!c.seen) {
    c.seen = true;
    c.first = start;
    c.last_start = start;
    c.end = start + duration;
    return;
  }
  if (!has_duration && start >= c.last_start) {
    // FLV: a tag lasts as long as the interval before it (the writer's duration rule).
    if (start > c.last_start) c.last_delta = start - c.last_start;
    duration = c.last_delta;
  }
  c.first = std::min(c.first, start);
  c.last_start = std::max(c.last_start, start);
  c.end = std::max(c.end, start + duration);
}

double RecordingIndex::duration_seconds() const {
  double best = 0;
  for (const TrackClock& c : clocks_) {
    if (!c.seen || c.timescale == 0) continue;
    best = std::max(best, static_cast<double>(c.end - c.first) / c.timescale);
  }
  return best;
}

bool RecordingIndex::playable() const {
  if (format_ == RecordingFormat::Fmp4) return init_size_ > 0 && media_units_ > 0;
  return format_ == RecordingFormat::Flv && media_units_ > 0;
}

// ---- fMP4 ----

void RecordingIndex::step_box_header() {
  const uint64_t at = pos_ - buf_.size();
  uint64_t size = be32(&buf_[0]);
  const uint32_t type = be32(&buf_[4]);
  size_t hdr = 8;
  if (size == 1) {
    if (buf_.size() < 16) {
      want_ = 16;
      return;
    }
    size = be64(&buf_[8]);
    hdr = 16;
  }
  if (size == 0) fail(at, "a box size (0, to the end of the file, is not read)");
  if (size < hdr) fail(at, "box size " + std::to_string(size) + " smaller than its header");
  unit_start_ = at;
  box_type_ = type;
  box_size_ = size;
  if (open_fragment_ && type != fourcc("mdat"))
    fail(at, "the mdat of the moof at " + std::to_string(open_fragment_->offset));
  const uint64_t body = size - hdr;
  const bool parsed = type == fourcc("ftyp") || type == fourcc("moov") || type == fourcc("moof");
  if (type == fourcc("ftyp")) {
    if (ftyp_seen_) fail(at, "one ftyp box (a second one)");
    ftyp_seen_ = true;
    init_offset_ = at;
  } else if (type == fourcc("moov")) {
    if (init_size_ > 0) fail(at, "one moov box (a second one)");
  } else if (type == fourcc("moof")) {
    if (init_size_ == 0) fail(at, "a moov before the first moof");
  }
  if (type == fourcc("mdat") && !open_fragment_) stray_mdat_ = true;
  if (!parsed) return skip(body, AfterSkip::BoxEnd);
  if (body > lim_.max_box_bytes)
    fail(at,
         "a box of at most " + std::to_string(lim_.max_box_bytes) + " bytes, found " + std::to_string(body));
  expect(State::BoxBody, static_cast<size_t>(body));
  if (body == 0) box_done();
}

void RecordingIndex::box_done() {
  const uint64_t body_at = pos_ - buf_.size();
  const std::span<const uint8_t> body(buf_);
  if (box_type_ == fourcc("moov")) {
    parse_moov(body, body_at);
    init_size_ = pos_ - init_offset_;
    complete_end_ = pos_;
  } else if (box_type_ == fourcc("moof")) {
    parse_moof(body, body_at);
  }
  expect(State::BoxHeader, 8);
}

void RecordingIndex::parse_moov(std::span<const uint8_t> body, uint64_t at) {
  auto failer = [this](uint64_t a, const std::string& w) { fail(a, w); };
  for_each_box(
      body, at,
      [&](uint32_t type, std::span<const uint8_t> b, uint64_t bat) {
        if (type == fourcc("trak")) {
          parse_trak(b, bat);
        } else if (type == fourcc("mvex")) {
          for_each_box(
              b, bat,
              [&](uint32_t t, std::span<const uint8_t> trex, uint64_t tat) {
                if (t != fourcc("trex")) return;
                if (trex.size() < 24) fail(tat, "a trex of 24 bytes");  // §8.8.3.2
                const uint32_t id = be32(&trex[4]);
                for (Fmp4Track& tr : tracks_) {
                  if (tr.track_id != id) continue;
                  tr.default_sample_duration = be32(&trex[12]);
                  tr.default_sample_flags = be32(&trex[20]);
                }
              },
              failer);
        }
      },
      failer);
  if (tracks_.empty()) fail(at, "a moov with a trak");
}

void RecordingIndex::parse_trak(std::span<const uint8_t> body, uint64_t at) {
  auto failer = [this](uint64_t a, const std::string& w) { fail(a, w); };
  if (tracks_.size() >= kMaxTracks) fail(at, "at most " + std::to_string(kMaxTracks) + " tracks");
  Fmp4Track t;
  bool have_id = false;
  for_each_box(
      body, at,
      [&](uint32_t type, std::span<const uint8_t> b, uint64_t bat) {
        if (type == fourcc("tkhd")) {
          // §8.3.2: creation and modification times are 4 or 8 bytes by version.
          const size_t id_at = b.size() >= 1 && b[0] == 1 ? 20 : 12;
          if (b.size() < id_at + 4) fail(bat, "a tkhd with a track_ID");
          t.track_id = be32(&b[id_at]);
          have_id = true;
        } else if (type == fourcc("mdia")) {
          for_each_box(
              b, bat,
              [&](uint32_t mt, std::span<const uint8_t> mb, uint64_t mat) {
                if (mt == fourcc("mdhd")) {
                  const size_t ts_at = mb.size() >= 1 && mb[0] == 1 ? 20 : 12;  // §8.4.2
                  if (mb.size() < ts_at + 4) fail(mat, "an mdhd with a timescale");
                  t.timescale = be32(&mb[ts_at]);
                } else if (mt == fourcc("hdlr")) {
                  if (mb.size() < 12) fail(mat, "an hdlr with a handler_type");  // §8.4.3
                  const uint32_t h = be32(&mb[8]);
                  t.video = h == fourcc("vide");
                  t.audio = h == fourcc("soun");
                }
              },
              failer);
        }
      },
      failer);
  if (!have_id) fail(at, "a trak with a tkhd");
  if (t.timescale == 0) fail(at, "a trak with a non-zero mdhd timescale");
  tracks_.push_back(t);
}

// What the boxes of one traf say, read in order.
struct RecordingIndex::TrafState {
  const Fmp4Track* track = nullptr;  // set by the tfhd
  Fmp4TrackRun run;
  uint32_t default_duration = 0, default_flags = 0;
  std::optional<bool> first_sync;  // the first sample is a sync sample
};

void RecordingIndex::parse_tfhd(std::span<const uint8_t> x, uint64_t at, TrafState& st) {  // §8.8.7
  if (x.size() < 8) fail(at, "a tfhd of 8 bytes");
  const uint32_t flags = be32(&x[0]) & 0xFFFFFF;
  st.run.track_id = be32(&x[4]);
  for (const Fmp4Track& tr : tracks_) {
    if (tr.track_id == st.run.track_id) st.track = &tr;
  }
  if (!st.track) fail(at, "a tfhd of a track the moov has (track " + std::to_string(st.run.track_id) + ")");
  st.default_duration = st.track->default_sample_duration;
  st.default_flags = st.track->default_sample_flags;
  size_t off = 8;
  auto field = [&](uint32_t bit, size_t n) -> const uint8_t* {
    if (!(flags & bit)) return nullptr;
    if (x.size() < off + n) fail(at, "a tfhd holding the fields its flags announce");
    const uint8_t* p = &x[off];
    off += n;
    return p;
  };
  field(0x01, 8);  // base_data_offset
  field(0x02, 4);  // sample_description_index
  if (const uint8_t* p = field(0x08, 4)) st.default_duration = be32(p);
  field(0x10, 4);  // default_sample_size
  if (const uint8_t* p = field(0x20, 4)) st.default_flags = be32(p);
}

void RecordingIndex::parse_trun(std::span<const uint8_t> x, uint64_t at, TrafState& st) {  // §8.8.8
  if (!st.track) fail(at, "a tfhd before the trun");
  if (x.size() < 8) fail(at, "a trun of 8 bytes");
  const uint32_t flags = be32(&x[0]) & 0xFFFFFF;
  const uint32_t count = be32(&x[4]);
  size_t off = 8;
  if (flags & 0x01) off += 4;  // data_offset
  std::optional<uint32_t> first_flags;
  if (flags & 0x04) {
    if (x.size() < off + 4) fail(at, "a trun with its first_sample_flags");
    first_flags = be32(&x[off]);
    off += 4;
  }
  const size_t per = 4 * ((flags & 0x100 ? 1 : 0) + (flags & 0x200 ? 1 : 0) + (flags & 0x400 ? 1 : 0) +
                          (flags & 0x800 ? 1 : 0));
  if (x.size() < off || (per > 0 && (x.size() - off) / per < count))
    fail(at, "a trun holding its " + std::to_string(count) + " samples");
  for (uint32_t i = 0; i < count; ++i) {
    const uint8_t* s = per > 0 ? &x[off + i * per] : nullptr;
    uint32_t duration = st.default_duration;
    uint32_t sflags = i == 0 && first_flags ? *first_flags : st.default_flags;
    size_t k = 0;
    if (flags & 0x100) duration = be32(s + 4 * k++);
    if (flags & 0x200) ++k;
    if (flags & 0x400) sflags = i == 0 && first_flags ? *first_flags : be32(s + 4 * k);
    if (per == 0 && i > 0) {  // every sample alike: the rest at once
      st.run.duration += uint64_t(duration) * (count - 1);
      break;
    }
    st.run.duration += duration;
    if (!st.first_sync) st.first_sync = (sflags & kNonSyncSample) == 0;
  }
  st.run.samples += count;
}

void RecordingIndex::parse_moof(std::span<const uint8_t> body, uint64_t at) {
  auto failer = [this](uint64_t a, const std::string& w) { fail(a, w); };
  Fmp4Fragment f;
  f.offset = unit_start_;
  const bool file_has_video =
      std::any_of(tracks_.begin(), tracks_.end(), [](const Fmp4Track& t) { return t.video; });
  f.keyframe = !file_has_video;
  for_each_box(
      body, at,
      [&](uint32_t type, std::span<const uint8_t> b, uint64_t bat) {
        if (type == fourcc("mfhd")) {
          if (b.size() < 8) fail(bat, "an mfhd of 8 bytes");
          f.sequence = be32(&b[4]);
          return;
        }
        if (type != fourcc("traf")) return;
        if (f.tracks.size() >= kMaxTracks) fail(bat, "at most " + std::to_string(kMaxTracks) + " trafs");
        TrafState st;
        for_each_box(
            b, bat,
            [&](uint32_t t, std::span<const uint8_t> x, uint64_t xat) {
              if (t == fourcc("tfhd")) {
                parse_tfhd(x, xat, st);
              } else if (t == fourcc("tfdt")) {  // §8.8.12
                if (x.size() < 8) fail(xat, "a tfdt of 8 bytes");
                if (x[0] == 1 && x.size() < 12) fail(xat, "a version 1 tfdt of 12 bytes");
                st.run.base_decode_time = x[0] == 1 ? be64(&x[4]) : be32(&x[4]);
              } else if (t == fourcc("trun")) {
                parse_trun(x, xat, st);
              }
            },
            failer);
        if (!st.track) fail(bat, "a traf with a tfhd");
        if (st.first_sync && st.track->video) f.keyframe = *st.first_sync;
        f.samples += st.run.samples;
        f.tracks.push_back(st.run);
      },
      failer);
  if (f.tracks.empty()) fail(at, "a moof with a traf");
  // The reference track: video when the file has it (in this fragment), else the first traf.
  const Fmp4TrackRun* ref = &f.tracks.front();
  for (const Fmp4TrackRun& r : f.tracks) {
    for (const Fmp4Track& t : tracks_) {
      if (t.track_id == r.track_id && t.video) ref = &r;
    }
  }
  for (const Fmp4Track& t : tracks_) {
    if (t.track_id != ref->track_id) continue;
    f.start_seconds = static_cast<double>(ref->base_decode_time) / t.timescale;
    f.duration_seconds = static_cast<double>(ref->duration) / t.timescale;
  }
  open_fragment_ = std::move(f);
}

void RecordingIndex::fragment_done() {
  Fmp4Fragment f = std::move(*open_fragment_);
  open_fragment_.reset();
  f.size = pos_ - f.offset;
  unit_start_ = f.offset;
  for (const Fmp4TrackRun& r : f.tracks) {
    for (const Fmp4Track& t : tracks_) {
      if (t.track_id == r.track_id) note_time(r.track_id, t.timescale, r.base_decode_time, r.duration, true);
    }
  }
  ++units_;
  ++media_units_;
  complete_end_ = pos_;
  keep(fragments_, std::move(f));
}

// ---- FLV ----

void RecordingIndex::step_flv_header() {
  if (buf_[3] != 1) fail(3, "FLV version 1, found " + std::to_string(buf_[3]));
  const uint32_t data_offset = be32(&buf_[5]);
  if (data_offset < 9 || data_offset > kMaxFlvDataOffset)
    fail(5, "a DataOffset of 9 to " + std::to_string(kMaxFlvDataOffset) + ", found " +
                std::to_string(data_offset));
  // The rest of the header, then PreviousTagSize0 (E.3).
  skip(data_offset - 9 + 4, AfterSkip::FlvTagHeader);
}

void RecordingIndex::step_flv_tag_header() {
  unit_start_ = pos_ - 11;
  tag_type_ = buf_[0] & 0x1F;  // E.4.1: the top bits are Reserved and Filter
  if (tag_type_ != 8 && tag_type_ != 9 && tag_type_ != 18)
    fail(unit_start_, "an FLV tag of type 8, 9 or 18, found " + std::to_string(buf_[0]));
  tag_body_ = be24(&buf_[1]);
  tag_ts_ = be24(&buf_[4]) | uint32_t(buf_[7]) << 24;
  tag_head_[0] = tag_head_[1] = 0;
  // A script tag is read whole (for onMetaData), a frame only for its first two bytes.
  const bool whole = tag_type_ == 18 && metadata_size_ == 0 && tag_body_ <= lim_.max_box_bytes;
  expect(State::FlvTagBody, whole ? tag_body_ : std::min<uint32_t>(tag_body_, 2));
  if (want_ == 0) step_flv_tag_body();
}

void RecordingIndex::step_flv_tag_body() {
  if (!buf_.empty()) tag_head_[0] = buf_[0];
  if (buf_.size() > 1) tag_head_[1] = buf_[1];
  if (tag_type_ == 18 && metadata_size_ == 0 && buf_.size() == tag_body_) {
    try {
      Amf0Decoder d(buf_);
      const Amf0Value name = d.decode();
      if (name.type() == Amf0Value::Type::String && name.as_string() == "onMetaData") {
        metadata_offset_ = unit_start_;
        metadata_size_ = static_cast<uint32_t>(11 + tag_body_ + 4);
        metadata_duration_ = d.decode().find_number("duration");
      }
    } catch (const ProtocolError&) {
      // A script tag that does not decode is listed, not read.
    }
  }
  skip(tag_body_ - buf_.size(), AfterSkip::FlvPrevSize);
}

void RecordingIndex::flv_tag_done() {
  const uint32_t prev = be32(&buf_[0]);
  if (prev != 11 + tag_body_)
    fail(pos_ - 4, "PreviousTagSize " + std::to_string(11 + tag_body_) + ", found " + std::to_string(prev));
  FlvTagEntry e{unit_start_, 11 + tag_body_ + 4, tag_type_, tag_ts_, false};
  bool header = false;  // a sequence header or end of sequence, not a frame
  if (tag_type_ == 9 && tag_body_ > 0) {
    const uint8_t b = tag_head_[0];
    if (b & 0x80) {  // enhanced RTMP: IsExHeader, FrameType in bits 4-6, PacketType below
      const uint8_t packet = b & 0x0F;
      header = packet == 0 || packet == 2 || packet == 5;
      e.keyframe = ((b >> 4) & 7) == 1 && !header;
    } else {
      const uint8_t codec = b & 0x0F;  // E.4.3.1: AVC 7, HEVC 12 carry an AVCPacketType
      header = (codec == 7 || codec == 12) && tag_body_ >= 2 && tag_head_[1] != 1;
      e.keyframe = (b >> 4) == 1 && !header;
    }
  } else if (tag_type_ == 8 && tag_body_ > 0) {
    header =
        (tag_head_[0] >> 4) == 10 && tag_body_ >= 2 && tag_head_[1] == 0;  // E.4.2.1: AAC sequence header
  }
  ++units_;
  if ((tag_type_ == 8 || tag_type_ == 9) && tag_body_ > 0 && !header) ++media_units_;
  if (tag_type_ == 8 || tag_type_ == 9) note_time(tag_type_, 1000, tag_ts_, 0, false);
  keep(tags_, e);
  complete_end_ = pos_;
  expect(State::FlvTagHeader, 11);
}

}  // namespace rill::protocol
