#pragma once
// E-RTMP v2 multitrack tags: one video (VideoPacketType.Multitrack = 6) or audio
// (AudioPacketType.Multitrack = 5) tag body that carries the data of several tracks. Parsing gives
// a view per track (id, FourCC, body: spans into the tag, nothing copied); the writers build a
// multitrack tag from track payloads and re-frame one track as a plain single-track tag (what a
// player that knows nothing of tracks can read).
//
// Enhanced RTMP v2, ExVideoTagHeader / ExAudioTagHeader: "if (videoPacketType ==
// VideoPacketType.Multitrack) { isVideoMultitrack = true; videoMultitrackType = UB[4] as
// AvMultitrackType; ... videoPacketType = UB[4] as VideoPacketType (must not be Multitrack);
// if (videoMultitrackType != AvMultitrackType.ManyTracksManyCodecs) { videoFourCc = FOURCC } }".
// ExVideoTagBody / ExAudioTagBody, per track: "if (videoMultitrackType ==
// ManyTracksManyCodecs) { videoFourCc = FOURCC }; videoTrackId = UI8; if (videoMultitrackType !=
// OneTrack) { sizeOfVideoTrack = UI24 }" then the track's body. "The sizeOfVideoTrack specifies
// the size in bytes of the current track that is being processed. This size starts counting
// immediately after the position where the sizeOfVideoTrack value is located. ... Depending on the
// MultiTrack type, the offset points to either a fourCc or a trackId." (so a track's FourCC comes
// before its id). Audio is the same with audio names.
#include <cstdint>
#include <span>
#include <vector>

#include "rill/protocol/error.h"

namespace rill::protocol {

// E-RTMP v2 AvMultitrackType (used by audio and video).
enum class AvMultitrackType : uint8_t { OneTrack = 0, ManyTracks = 1, ManyTracksManyCodecs = 2 };

// One track's part of a multitrack tag. For avc1/hvc1 (and vvc1) CodedFrames the body begins
// with the SI24 composition time offset, as in a single-track E-RTMP tag.
struct TrackPayload {
  uint8_t track_id = 0;
  uint32_t fourcc = 0;
  std::span<const uint8_t> body;
};

struct MultitrackTag {
  bool is_video = false;
  uint8_t frame_type = 0;  // video: VideoFrameType, shared by every track of the tag; audio: 0
  AvMultitrackType type = AvMultitrackType::OneTrack;
  uint8_t packet_type = 0;           // VideoPacketType / AudioPacketType of every track
  std::vector<TrackPayload> tracks;  // in tag order; never empty after a parse
};

// Parses a video/audio tag body whose header says Multitrack. Throws ProtocolError naming the
// offset and what was expected ("multitrack video tag: offset 9: expected a UI24 track size,
// found 1 byte") on a body that is not a multitrack tag, a reserved multitrack type, a nested
// Multitrack packet type, or a track that runs past the body.
MultitrackTag parse_multitrack_video(std::span<const uint8_t> body);
MultitrackTag parse_multitrack_audio(std::span<const uint8_t> body);

// A multitrack tag body for `tag` (its tracks' bodies are copied). OneTrack needs exactly one
// track, ManyTracks one FourCC for all; a track body over 2^24 - 1 bytes cannot be framed.
std::vector<uint8_t> write_multitrack_tag(const MultitrackTag& tag);

// One track of `tag` as a single-track tag body: the legacy FLV form for H.264 ("avc1":
// CodecID 7, AVCPacketType, CompositionTime) and AAC ("mp4a": SoundFormat 10, AACPacketType)
// where the packet type has one, the E-RTMP single-track form otherwise (ExHeader, packet type,
// FourCC, body). A ModEx prefix of the multitrack tag is not carried over.
std::vector<uint8_t> single_track_tag(const MultitrackTag& tag, const TrackPayload& track);
// The bytes single_track_tag puts before the track's body (at most 5), for a caller that writes
// the tag into a buffer of its own (the stream re-frames every multitrack tag: no vector there).
struct SingleTrackPrefix {
  uint8_t bytes[8] = {};
  uint8_t size = 0;
};
SingleTrackPrefix single_track_prefix(const MultitrackTag& tag, const TrackPayload& track);

// The reverse, for building multitrack tags: a single-track video/audio tag body (legacy or
// E-RTMP) as its frame type, packet type (E-RTMP numbering) and track payload (FourCC, body;
// track id 0). Throws ProtocolError for a tag that has no E-RTMP equivalent (legacy codecs other
// than H.264/AAC/MP3, a multitrack or command tag).
struct SingleTrackParts {
  uint8_t frame_type = 0;
  uint8_t packet_type = 0;
  TrackPayload track;
};
SingleTrackParts single_track_parts(std::span<const uint8_t> body, bool is_video);

}  // namespace rill::protocol
