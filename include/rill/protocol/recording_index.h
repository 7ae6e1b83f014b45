#pragma once
// RecordingIndex: reads a recording file back (the files media::Recorder writes, and other
// fragmented MP4 / FLV files of the same shape) and lists what it holds, without keeping the
// media bytes. Pure bytes: the caller feeds the file in pieces of any size, in order, and reads
// the index at any point; nothing here opens a file.
//
// fMP4 (ISO/IEC 14496-12): `ftyp` + `moov` are the init part (init_offset/init_size: what a VOD
// playlist's EXT-X-MAP names, RFC 8216 §4.3.2.5); the timescale of each track comes from its
// `mdhd` (§8.4.2), its kind from `hdlr` (§8.4.3), its defaults from `mvex/trex` (§8.8.3). Then
// each `moof` + `mdat` pair is one Fmp4Fragment (offset/size: an EXT-X-BYTERANGE), with per track
// the base media decode time of `tfdt` (§8.8.12), the sum of the `trun` sample durations (or the
// default duration of `tfhd`, else of `trex`, §8.8.7/§8.8.8) and the sample count; `keyframe`
// says the fragment starts with a video sync sample (the first sample's flags have
// sample_is_non_sync_sample clear, §8.8.3.1), or that the file has no video. Top-level boxes
// other than ftyp/moov/moof/mdat (free, skip, styp, sidx...) are skipped.
//
// FLV (FLV 10.1 Annex E): the header, then tags, each followed by its PreviousTagSize (checked:
// it must be 11 + DataSize, E.3). Every tag is listed with its offset, type, timestamp and
// whether it is a video keyframe (FrameType 1, E.4.3.1, not a sequence header); the first
// onMetaData script tag is decoded for its `duration`.
//
// complete_end() is where the last whole fragment (moof + mdat) or tag (with its
// PreviousTagSize) ends: cutting the file there leaves only whole units. A malformed file throws
// ProtocolError naming the offset and what was expected; what was indexed before it stays
// readable (complete_end() included), so a caller may still cut the file at the last good unit.
// Every size and count is bounded (RecordingIndexLimits): no input makes it allocate more than
// max_box_bytes for one box plus max_entries entries (and max_samples samples with keep_samples).
//
// With keep_samples, each track run also lists its samples (Fmp4SampleEntry: the file offset of its
// bytes, §8.8.7.1/§8.8.8.1 data offsets resolved; size, duration, flags, composition offset) and
// each track keeps its `stsd` body, its tkhd size and mdhd language: what a progressive MP4 cut
// (protocol/progressive_mp4.h) needs. Every sample must then lie inside its fragment's mdat.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace rill::protocol {

enum class RecordingFormat : uint8_t { Unknown, Fmp4, Flv };

struct RecordingIndexLimits {
  size_t max_box_bytes = 16u << 20;  // ftyp, moov, moof, or an FLV script tag body, kept whole to parse
  size_t max_entries = 1u << 22;     // fragments or tags listed (past it: ProtocolError)
  bool keep_entries = true;          // false: only the totals (a listing that wants durations)
  bool keep_samples = false;         // list every sample of every track run (Fmp4TrackRun::sample_list)
  size_t max_samples = 1u << 22;     // samples listed in all (past it: ProtocolError)
};

struct Fmp4Track {
  uint32_t track_id = 0;
  uint32_t timescale = 0;                // mdhd
  bool video = false;                    // hdlr 'vide'
  bool audio = false;                    // hdlr 'soun'
  uint32_t default_sample_duration = 0;  // trex
  uint32_t default_sample_flags = 0;     // trex
  uint32_t default_sample_size = 0;      // trex
  // keep_samples: the body of the track's stsd (§8.5.2: version, flags, entry_count, entries),
  // the presentation size of its tkhd (16.16 fixed point, §8.3.2) and its mdhd language.
  std::vector<uint8_t> stsd;
  uint32_t width = 0, height = 0;
  uint16_t language = 0x55C4;  // "und"
};

struct Fmp4SampleEntry {
  uint64_t offset = 0;  // in the file
  uint32_t size = 0;
  uint32_t duration = 0;  // in the track's timescale
  uint32_t flags = 0;     // §8.8.3.1 sample flags
  int64_t composition_offset = 0;
};

struct Fmp4TrackRun {
  uint32_t track_id = 0;
  uint64_t base_decode_time = 0;  // tfdt, in the track's timescale
  uint64_t duration = 0;          // sum of the sample durations, in the track's timescale
  uint32_t samples = 0;
  std::vector<Fmp4SampleEntry> sample_list;  // keep_samples: every sample of the traf's truns, in order
};

struct Fmp4Fragment {
  uint64_t offset = 0;               // of the moof
  uint64_t size = 0;                 // moof + mdat (and nothing between them)
  uint32_t sequence = 0;             // mfhd
  bool keyframe = false;             // starts with a video sync sample, or the file has no video track
  uint32_t samples = 0;              // all tracks
  std::vector<Fmp4TrackRun> tracks;  // one per traf, in file order
  // The reference track's (video when the file has video, else the first traf's), in seconds.
  double start_seconds = 0;
  double duration_seconds = 0;
};

struct FlvTagEntry {
  uint64_t offset = 0;  // of the tag header
  uint32_t size = 0;    // header + body + PreviousTagSize
  uint8_t type = 0;     // 8 audio, 9 video, 18 script
  uint32_t timestamp_ms = 0;
  bool keyframe = false;  // a video frame of FrameType 1 (not a sequence header)
};

class RecordingIndex {
 public:
  explicit RecordingIndex(RecordingIndexLimits limits = {});

  // The next bytes of the file. Throws ProtocolError ("recording index: at offset N: ...") on
  // malformed input; every later feed() throws the same.
  void feed(std::span<const uint8_t> bytes);

  // Bytes the index is about to pass over unread (the rest of an mdat or of an unknown box, the
  // rest of a frame's body): a caller reading a file may seek past up to that many and say so
  // with advance() instead of feeding them. 0 when the next bytes are read.
  uint64_t skippable() const { return state_ == State::Skip ? skip_ : 0; }
  void advance(uint64_t n);  // n <= skippable()

  // An mdat outside a moof + mdat pair: a plain (unfragmented) MP4, not a recording.
  bool stray_mdat() const { return stray_mdat_; }

  RecordingFormat format() const { return format_; }
  uint64_t fed() const { return pos_; }  // bytes fed so far
  // The end of the last whole fragment or tag (for fMP4, at least the end of the moov once it is
  // whole; 0 before).
  uint64_t complete_end() const { return complete_end_; }
  // Something plays: an fMP4 with its moov and a fragment, an FLV with an audio or video frame.
  bool playable() const;

  // fMP4
  uint64_t init_offset() const { return init_offset_; }
  uint64_t init_size() const { return init_size_; }  // ftyp .. end of moov; 0 until the moov is whole
  const std::vector<Fmp4Track>& tracks() const { return tracks_; }
  const std::vector<Fmp4Fragment>& fragments() const { return fragments_; }

  // FLV
  const std::vector<FlvTagEntry>& tags() const { return tags_; }
  // The entries listed so far, moved out: a caller that takes them as it feeds keeps its memory
  // bounded whatever the file's length (max_entries bounds what is kept between two takes).
  std::vector<FlvTagEntry> take_tags() { return std::exchange(tags_, {}); }
  std::vector<Fmp4Fragment> take_fragments() { return std::exchange(fragments_, {}); }
  // The `duration` of the first onMetaData tag (seconds), when there is one that says.
  std::optional<double> metadata_duration() const { return metadata_duration_; }
  // Offset and size (header + body + PreviousTagSize) of that onMetaData tag; size 0 when none.
  uint64_t metadata_offset() const { return metadata_offset_; }
  uint32_t metadata_size() const { return metadata_size_; }

  // Counted even when the entries are not kept.
  uint64_t units() const { return units_; }              // whole fragments or tags
  uint64_t media_units() const { return media_units_; }  // fragments, or audio/video tags
  // Seconds of media in the whole units: per track from its first decode time (first tag
  // timestamp) to the end of its last sample (last timestamp plus the interval before it), the
  // longest track.
  double duration_seconds() const;

 private:
  enum class State : uint8_t {
    Detect,
    BoxHeader,
    BoxBody,
    Skip,
    FlvHeader,
    FlvTagHeader,
    FlvTagBody,
    FlvPrevSize,
    Failed
  };
  enum class AfterSkip : uint8_t { BoxEnd, FlvTagHeader, FlvPrevSize };
  struct TrackClock {
    uint32_t id = 0;
    uint32_t timescale = 1000;
    bool seen = false;
    uint64_t first = 0, end = 0, last_start = 0, last_delta = 0;
  };

  [[noreturn]] void fail(uint64_t at, const std::string& what);
  bool take(std::span<const uint8_t>& in);  // into buf_ until it holds want_ bytes
  void expect(State s, size_t bytes);       // collect `bytes` into an empty buf_, then step s
  void skip(uint64_t bytes, AfterSkip then);
  void skip_done();
  void step();
  void step_detect();
  void step_box_header();
  void box_done();
  void fragment_done();
  void check_sample_bytes(const Fmp4Fragment& f);
  void parse_stbl_of(std::span<const uint8_t> minf, uint64_t at, Fmp4Track& t);
  void parse_moov(std::span<const uint8_t> body, uint64_t at);
  void parse_trak(std::span<const uint8_t> body, uint64_t at);
  struct TrafState;
  void parse_moof(std::span<const uint8_t> body, uint64_t at);
  void parse_tfhd(std::span<const uint8_t> x, uint64_t at, TrafState& st);
  void parse_trun(std::span<const uint8_t> x, uint64_t at, TrafState& st);
  void step_flv_header();
  void step_flv_tag_header();
  void step_flv_tag_body();
  void flv_tag_done();
  template <class Entry>
  void keep(std::vector<Entry>& list, Entry e);
  void note_time(uint32_t id, uint32_t timescale, uint64_t start, uint64_t duration, bool has_duration);

  RecordingIndexLimits lim_;
  State state_ = State::Detect;
  std::string error_;
  uint64_t pos_ = 0;         // bytes consumed
  uint64_t unit_start_ = 0;  // offset of the box / tag being read
  std::vector<uint8_t> buf_;
  size_t want_ = 0;    // bytes of buf_ to collect before the step
  uint64_t skip_ = 0;  // bytes still to skip (an mdat, an unknown box, the rest of a tag body)
  AfterSkip after_skip_ = AfterSkip::BoxEnd;
  uint32_t box_type_ = 0;
  uint64_t box_size_ = 0;
  uint64_t mdat_body_ = 0;      // where the open fragment's mdat payload starts
  uint64_t traf_data_end_ = 0;  // the end of the previous traf's data in the moof being read
  uint64_t samples_kept_ = 0;

  RecordingFormat format_ = RecordingFormat::Unknown;
  uint64_t complete_end_ = 0;
  uint64_t units_ = 0, media_units_ = 0;
  std::vector<TrackClock> clocks_;

  // fMP4
  uint64_t init_offset_ = 0, init_size_ = 0;
  bool ftyp_seen_ = false;
  bool stray_mdat_ = false;
  std::vector<Fmp4Track> tracks_;
  std::optional<Fmp4Fragment> open_fragment_;  // a moof waiting for its mdat
  std::vector<Fmp4Fragment> fragments_;

  // FLV
  uint8_t tag_type_ = 0;
  uint32_t tag_body_ = 0;
  uint32_t tag_ts_ = 0;
  uint8_t tag_head_[2] = {0, 0};  // the first body bytes (codec, frame type, packet type)
  std::vector<FlvTagEntry> tags_;
  std::optional<double> metadata_duration_;
  uint64_t metadata_offset_ = 0;
  uint32_t metadata_size_ = 0;
};

}  // namespace rill::protocol
