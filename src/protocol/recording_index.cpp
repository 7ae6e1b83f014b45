#include "rill/protocol/recording_index.h"

#include <algorithm>
#include <cstring>
#include <functional>

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
// The FLV half (recording_index_flv.cpp) keeps its tags through this one.
template void RecordingIndex::keep<FlvTagEntry>(std::vector<FlvTagEntry>&, FlvTagEntry);

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
  if (type == fourcc("mdat")) mdat_body_ = at + hdr;
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
                  tr.default_sample_size = be32(&trex[16]);
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
          const bool v1 = b.size() >= 1 && b[0] == 1;
          const size_t id_at = v1 ? 20 : 12;
          if (b.size() < id_at + 4) fail(bat, "a tkhd with a track_ID");
          t.track_id = be32(&b[id_at]);
          have_id = true;
          const size_t whole = v1 ? 96 : 84;  // width and height are its last 8 bytes
          if (b.size() >= whole) {
            t.width = be32(&b[whole - 8]);
            t.height = be32(&b[whole - 4]);
          }
        } else if (type == fourcc("mdia")) {
          for_each_box(
              b, bat,
              [&](uint32_t mt, std::span<const uint8_t> mb, uint64_t mat) {
                if (mt == fourcc("mdhd")) {
                  const size_t ts_at = mb.size() >= 1 && mb[0] == 1 ? 20 : 12;  // §8.4.2
                  if (mb.size() < ts_at + 4) fail(mat, "an mdhd with a timescale");
                  t.timescale = be32(&mb[ts_at]);
                  const size_t lang_at = ts_at + (mb[0] == 1 ? 12 : 8);
                  if (mb.size() >= lang_at + 2)
                    t.language = static_cast<uint16_t>(mb[lang_at] << 8 | mb[lang_at + 1]);
                } else if (mt == fourcc("hdlr")) {
                  if (mb.size() < 12) fail(mat, "an hdlr with a handler_type");  // §8.4.3
                  const uint32_t h = be32(&mb[8]);
                  t.video = h == fourcc("vide");
                  t.audio = h == fourcc("soun");
                } else if (mt == fourcc("minf") && lim_.keep_samples) {
                  parse_stbl_of(mb, mat, t);
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

// minf/stbl/stsd (§8.5.2): the sample descriptions, kept as they are.
void RecordingIndex::parse_stbl_of(std::span<const uint8_t> minf, uint64_t at, Fmp4Track& t) {
  auto failer = [this](uint64_t a, const std::string& w) { fail(a, w); };
  for_each_box(
      minf, at,
      [&](uint32_t type, std::span<const uint8_t> stbl, uint64_t sat) {
        if (type != fourcc("stbl")) return;
        for_each_box(
            stbl, sat,
            [&](uint32_t st, std::span<const uint8_t> b, uint64_t) {
              if (st == fourcc("stsd")) t.stsd.assign(b.begin(), b.end());
            },
            failer);
      },
      failer);
}

// What the boxes of one traf say, read in order.
struct RecordingIndex::TrafState {
  const Fmp4Track* track = nullptr;  // set by the tfhd
  Fmp4TrackRun run;
  uint32_t default_duration = 0, default_flags = 0, default_size = 0;
  uint64_t base = 0;  // base data offset (§8.8.7.1)
  uint64_t next = 0;  // where a trun without a data_offset starts (§8.8.8.1)
  bool first_run = true;
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
  st.default_size = st.track->default_sample_size;
  // §8.8.7.1: without base-data-offset, the moof's first byte when default-base-is-moof is set
  // (or for the first traf), else where the previous traf's data ended.
  st.base = flags & 0x020000 ? unit_start_ : traf_data_end_;
  size_t off = 8;
  auto field = [&](uint32_t bit, size_t n) -> const uint8_t* {
    if (!(flags & bit)) return nullptr;
    if (x.size() < off + n) fail(at, "a tfhd holding the fields its flags announce");
    const uint8_t* p = &x[off];
    off += n;
    return p;
  };
  if (const uint8_t* p = field(0x01, 8)) st.base = be64(p);
  field(0x02, 4);  // sample_description_index
  if (const uint8_t* p = field(0x08, 4)) st.default_duration = be32(p);
  if (const uint8_t* p = field(0x10, 4)) st.default_size = be32(p);
  if (const uint8_t* p = field(0x20, 4)) st.default_flags = be32(p);
  st.next = st.base;
}

void RecordingIndex::parse_trun(std::span<const uint8_t> x, uint64_t at, TrafState& st) {  // §8.8.8
  if (!st.track) fail(at, "a tfhd before the trun");
  if (x.size() < 8) fail(at, "a trun of 8 bytes");
  const uint32_t flags = be32(&x[0]) & 0xFFFFFF;
  const uint32_t count = be32(&x[4]);
  size_t off = 8;
  // §8.8.8.1: data_offset is added to the base data offset; without it the run follows the
  // previous run of the traf (the first starts at the base).
  uint64_t data = st.first_run ? st.base : st.next;
  st.first_run = false;
  if (flags & 0x01) {
    if (x.size() < off + 4) fail(at, "a trun with its data_offset");
    const int64_t d = static_cast<int32_t>(be32(&x[off]));
    if (d < 0 && static_cast<uint64_t>(-d) > st.base) fail(at, "a data_offset inside the file");
    data = st.base + static_cast<uint64_t>(d);
    off += 4;
  }
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
  const bool keep = lim_.keep_samples;
  if (keep && count > lim_.max_samples - samples_kept_)
    fail(at, "at most " + std::to_string(lim_.max_samples) + " samples in all");
  if (keep) samples_kept_ += count;
  for (uint32_t i = 0; i < count; ++i) {
    const uint8_t* s = per > 0 ? &x[off + i * per] : nullptr;
    uint32_t duration = st.default_duration;
    uint32_t size = st.default_size;
    uint32_t sflags = i == 0 && first_flags ? *first_flags : st.default_flags;
    int64_t cto = 0;
    size_t k = 0;
    if (flags & 0x100) duration = be32(s + 4 * k++);
    if (flags & 0x200) size = be32(s + 4 * k++);
    if (flags & 0x400) sflags = i == 0 && first_flags ? *first_flags : be32(s + 4 * k++);
    if (flags & 0x800) cto = x[0] == 1 ? int64_t(int32_t(be32(s + 4 * k))) : int64_t(be32(s + 4 * k));
    if (keep) {
      st.run.sample_list.push_back(Fmp4SampleEntry{data, size, duration, sflags, cto});
      data += size;
    }
    if (per == 0 && i > 0 && !keep) {  // every sample alike: the rest at once
      st.run.duration += uint64_t(duration) * (count - 1);
      break;
    }
    st.run.duration += duration;
    if (!st.first_sync) st.first_sync = (sflags & kNonSyncSample) == 0;
  }
  st.run.samples += count;
  st.next = data;
}

void RecordingIndex::parse_moof(std::span<const uint8_t> body, uint64_t at) {
  auto failer = [this](uint64_t a, const std::string& w) { fail(a, w); };
  Fmp4Fragment f;
  f.offset = unit_start_;
  const bool file_has_video =
      std::any_of(tracks_.begin(), tracks_.end(), [](const Fmp4Track& t) { return t.video; });
  f.keyframe = !file_has_video;
  traf_data_end_ = unit_start_;
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
        traf_data_end_ = st.next;
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
  if (lim_.keep_samples) check_sample_bytes(f);
  ++units_;
  ++media_units_;
  complete_end_ = pos_;
  keep(fragments_, std::move(f));
}

// keep_samples: a sample outside its fragment's mdat would make a cut read other bytes.
void RecordingIndex::check_sample_bytes(const Fmp4Fragment& f) {
  for (const Fmp4TrackRun& r : f.tracks) {
    for (const Fmp4SampleEntry& s : r.sample_list) {
      if (s.offset < mdat_body_ || s.offset > pos_ || s.size > pos_ - s.offset)
        fail(f.offset, "samples inside the mdat of the fragment (track " + std::to_string(r.track_id) +
                           ", a sample at " + std::to_string(s.offset) + " of " + std::to_string(s.size) +
                           " bytes)");
    }
  }
}

}  // namespace rill::protocol
