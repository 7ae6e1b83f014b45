#pragma once
// Live HLS media playlist model and writer (RFC 8216). Pure state: the segmenter tells it when
// a segment is finished; it keeps the sliding window, the sequence numbers and the target
// duration, and renders the playlist text. One object lives as long as the stream's HLS output,
// across publisher reconnects, so sequence numbers never go backwards.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rill::protocol {

// The files a stream's playlist names (relative to STREAM/): MPEG-TS segments "SEQ.ts", fMP4
// segments "SEQ.m4s", fMP4 init sections "init-ID.mp4" and LL-HLS parts "part-N.m4s" (N counts
// every part of the stream).
enum class HlsSegmentForm : uint8_t { Ts, Fmp4, Init, Part };
std::string hls_segment_file(HlsSegmentForm form, uint64_t number);
// Splits such a file name into its form and its number's text (not checked to be digits), or
// nothing when the name has none of the three shapes.
std::optional<std::pair<HlsSegmentForm, std::string_view>> split_hls_segment_file(std::string_view file);
// The Content-Type of a form: video/mp2t, or video/mp4 for fMP4 (RFC 8216 §3.2, §3.3).
const char* hls_content_type(HlsSegmentForm form);

// An LL-HLS Partial Segment (RFC 8216bis §4.4.4.9).
struct HlsPartEntry {
  double duration_s = 0;
  bool independent = false;  // starts with a sync sample: INDEPENDENT=YES
  std::string uri;
};

struct HlsSegmentEntry {
  uint64_t sequence = 0;       // Media Sequence Number (§3)
  double duration_s = 0;       // EXTINF
  bool discontinuity = false;  // preceded by EXT-X-DISCONTINUITY (§4.3.2.3)
  std::string uri;
  std::string map_uri;              // fMP4: the init section (EXT-X-MAP, §4.3.2.5); empty for MPEG-TS
  std::vector<HlsPartEntry> parts;  // LL-HLS: the parts it was made of
};

struct HlsPlaylistState {
  uint64_t media_sequence = 0;          // EXT-X-MEDIA-SEQUENCE: sequence of segments.front()
  uint64_t discontinuity_sequence = 0;  // EXT-X-DISCONTINUITY-SEQUENCE (§4.3.3.3)
  std::deque<HlsSegmentEntry> segments;
  bool ended = false;                  // EXT-X-ENDLIST (§4.3.3.4)
  uint32_t target_duration = 1;        // EXT-X-TARGETDURATION, the largest ever rendered
  bool pending_discontinuity = false;  // the next added segment gets EXT-X-DISCONTINUITY
  // LL-HLS (RFC 8216bis): off while part_target_s is 0.
  double part_target_s = 0;              // EXT-X-PART-INF:PART-TARGET
  std::vector<HlsPartEntry> open_parts;  // parts of the segment being built (next sequence)
  std::string preload_hint_uri;          // EXT-X-PRELOAD-HINT:TYPE=PART (the next part)
  std::string open_map_uri;              // the init section of the open parts
  // LL-HLS: URIs of the other renditions of the stream's group (docs/abr.md), each reported
  // with EXT-X-RENDITION-REPORT (RFC 8216bis §4.4.5.4) at this playlist's own position: the
  // group's segments and parts are cut at the same media times, so that is theirs.
  std::vector<std::string> rendition_reports;
};

// A segment of the live playlist that is now read back from a recording file (hls.rewind,
// docs/hls.md "Rewind"): an earlier segment of the live window, recorded at the same boundaries,
// so it keeps its sequence number, decodes with the live EXT-X-MAP, and keeps the URI it was
// listed with while in the window: RFC 8216 §6.2.1, "The server MUST NOT change the Media
// Playlist file, except to: append lines to it, remove Media Segment URIs from the Playlist in
// the order that they appear, ..." (hls.js treats a changed URI as a media sequence mismatch).
struct HlsRecordedSegment {
  uint64_t sequence = 0;
  double duration_s = 0;
  bool discontinuity = false;
  std::shared_ptr<const std::string> path;  // the recording file, shared by its segments
  uint64_t offset = 0, length = 0;          // the segment's bytes in it (whole moof + mdat pairs)
};

// Renders a media playlist from a state (any worker holding a copy of the state can serve it).
// `skip`: an LL-HLS Playlist Delta Update (§6.2.5.1): segments older than CAN-SKIP-UNTIL are
// replaced by EXT-X-SKIP. `recorded`: segments that left the window, in order and contiguous;
// those that end right before the window (sequence up to media_sequence - 1) come first, under
// the window's first EXT-X-MAP and named as the window's segments are (the directory of its first
// segment's URI, the segment file name of their sequence), and EXT-X-MEDIA-SEQUENCE (and the
// discontinuity sequence) start at the first of them.
std::string render_media_playlist(const HlsPlaylistState& state, bool skip = false,
                                  std::span<const HlsRecordedSegment> recorded = {});
// The recorded segments that render_media_playlist lists before the window.
std::span<const HlsRecordedSegment> hls_recorded_run(const HlsPlaylistState& state,
                                                     std::span<const HlsRecordedSegment> recorded);
// The EXT-X-TARGETDURATION the playlist renders (never below any listed segment's, §4.3.3.1).
uint32_t hls_target_duration(const HlsPlaylistState& state);
// CAN-SKIP-UNTIL: six target durations (§4.4.3.8: "at least six times the Target Duration").
inline double hls_can_skip_until_s(const HlsPlaylistState& st) { return 6.0 * st.target_duration; }

// EXTINF value rounded to the nearest integer as a client reads it: from the 3-decimal text
// written, half away from zero (§4.3.3.1).
uint32_t hls_rounded_duration(double duration_s);

class HlsPlaylist {
 public:
  // window: segments kept in the playlist (at least 1). fragment_s: the configured fragment
  // duration; the target duration is never below it rounded up.
  HlsPlaylist(size_t window, double fragment_s);

  struct Added {
    uint64_t sequence;                     // assigned to the new segment
    std::vector<HlsSegmentEntry> removed;  // slid out of the window, oldest first; keep them
                                           // fetchable for a while (§6.2.2)
  };

  // The sequence number the next add_segment will assign (to name the segment's URI).
  uint64_t next_sequence() const { return state_.media_sequence + state_.segments.size(); }

  // Appends a finished segment. `discontinuity` or a pending mark_discontinuity()/restart()
  // tags it. Adding to an ended playlist restarts it first. Then segments leave from the front
  // while more than `window` remain, except that the playlist never drops below three target
  // durations (§6.2.2); each removal advances EXT-X-MEDIA-SEQUENCE, and removing a tagged
  // segment advances EXT-X-DISCONTINUITY-SEQUENCE (§4.3.3.3).
  Added add_segment(double duration_s, bool discontinuity, std::string uri, std::string map_uri = {});

  // LL-HLS: parts of `part_target_s` (> 0) are listed (RFC 8216bis).
  void set_low_latency(double part_target_s) { state_.part_target_s = part_target_s; }
  // A part of the segment being built (its media sequence is next_sequence()). `map_uri` as for
  // add_segment.
  void add_part(double duration_s, bool independent, std::string uri, std::string map_uri = {});
  void set_preload_hint(std::string uri) { state_.preload_hint_uri = std::move(uri); }
  void set_rendition_reports(std::vector<std::string> uris) { state_.rendition_reports = std::move(uris); }

  void mark_discontinuity() { state_.pending_discontinuity = true; }
  void end() { state_.ended = true; }  // publisher left: EXT-X-ENDLIST
  void restart();                      // publisher back: no ENDLIST, discontinuity next
  // A new playlist that continues one produced elsewhere (another worker, after a republish):
  // the next segment gets `next_sequence` and a discontinuity, and the discontinuity sequence
  // counts the `discontinuities_before` tags of the earlier producer (§6.2.2: the media sequence
  // never goes backwards for a client). Ignored once the playlist has segments.
  void continue_from(uint64_t next_sequence, uint64_t discontinuities_before);
  // The next segment gets `sequence` when that is ahead of next_sequence() and the playlist has
  // no segment (a rendition aligned to its group's cut slots). Ignored otherwise.
  void start_at(uint64_t sequence) {
    if (state_.segments.empty() && sequence > state_.media_sequence) state_.media_sequence = sequence;
  }
  // EXT-X-DISCONTINUITY tags on every segment before next_sequence() (what continue_from takes).
  uint64_t discontinuities_so_far() const;
  bool ended() const { return state_.ended; }

  std::string render(bool skip = false, std::span<const HlsRecordedSegment> recorded = {}) const {
    return render_media_playlist(state_, skip, recorded);
  }
  const HlsPlaylistState& state() const { return state_; }
  size_t window() const { return window_; }

 private:
  HlsPlaylistState state_;
  size_t window_;
};

}  // namespace rill::protocol
