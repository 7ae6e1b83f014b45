#include "rill/protocol/flv_multitrack.h"

#include <string>

#include "rill/core/byte_order.h"
#include "rill/protocol/flv_tag.h"

namespace rill::protocol {

namespace {

constexpr uint8_t kVideoMultitrack = static_cast<uint8_t>(ExVideoPacketType::Multitrack);
constexpr uint8_t kAudioMultitrack = static_cast<uint8_t>(ExAudioPacketType::Multitrack);
constexpr uint8_t kCodedFrames = 1;  // VideoPacketType / AudioPacketType CodedFrames
constexpr size_t kMaxTrackSize = 0xFFFFFF;

// "multitrack video tag: offset 9: expected a UI24 track size, found 1 byte".
[[noreturn]] void fail(bool video, size_t offset, const std::string& what) {
  throw ProtocolError(std::string(video ? "multitrack video tag" : "multitrack audio tag") + ": offset " +
                      std::to_string(offset) + ": " + what);
}

void need(bool video, std::span<const uint8_t> body, size_t pos, size_t n, const char* what) {
  if (pos + n <= body.size()) return;
  const size_t have = body.size() - pos;
  fail(
      video, pos,
      std::string("expected ") + what + ", found " + std::to_string(have) + (have == 1 ? " byte" : " bytes"));
}

// A track's body carries the SI24 composition time of CodedFrames for these FourCCs (E-RTMP
// ExVideoTagBody: "if (videoFourCc == Avc || videoFourCc == Hevc || videoFourCc == Vvc)").
bool has_composition_time(uint32_t fourcc, uint8_t packet_type) {
  return packet_type == kCodedFrames &&
         (fourcc == kFourccAvc || fourcc == kFourccHevc || fourcc == kFourccVvc);
}

// The track list after the header (ExVideoTagBody / ExAudioTagBody "while (processVideoBody)").
void read_tracks(bool video, std::span<const uint8_t> body, size_t pos, uint32_t shared_fourcc,
                 MultitrackTag& tag) {
  const bool many_codecs = tag.type == AvMultitrackType::ManyTracksManyCodecs;
  const bool sized = tag.type != AvMultitrackType::OneTrack;
  if (pos == body.size()) need(video, body, pos, 1, "a track");
  while (pos < body.size()) {
    TrackPayload t;
    t.fourcc = shared_fourcc;
    if (many_codecs) {
      need(video, body, pos, 4, "the track's FourCC");
      t.fourcc = load_be32(body.data() + pos);
      pos += 4;
    }
    need(video, body, pos, 1, "a track id (UI8)");
    t.track_id = body[pos++];
    size_t size = body.size() - pos;  // OneTrack: the rest of the tag
    if (sized) {
      need(video, body, pos, 3, "a UI24 track size");
      size = load_be24(body.data() + pos);
      pos += 3;
      if (pos + size > body.size()) {
        fail(video, pos,
             "track " + std::to_string(t.track_id) + " size " + std::to_string(size) +
                 " runs past the end of the tag (" + std::to_string(body.size() - pos) + " bytes left)");
      }
    }
    t.body = body.subspan(pos, size);
    pos += size;
    tag.tracks.push_back(t);
  }
}

void check_header(bool video, bool is_multitrack, uint8_t multitrack_type, uint8_t packet_type,
                  size_t offset) {
  if (!is_multitrack) fail(video, 0, "expected a Multitrack packet type");
  if (multitrack_type > static_cast<uint8_t>(AvMultitrackType::ManyTracksManyCodecs))
    fail(video, offset, "reserved AvMultitrackType " + std::to_string(multitrack_type));
  // "videoPacketType = UB[4] as VideoPacketType ... must not be VideoPacketType.Multitrack".
  if (packet_type == (video ? kVideoMultitrack : kAudioMultitrack))
    fail(video, offset, "a track packet type, found Multitrack again");
}

// Where the multitrack type byte is: before the shared FourCC unless ManyTracksManyCodecs.
size_t type_byte_offset(size_t payload_offset, uint8_t multitrack_type) {
  return payload_offset -
         (multitrack_type == static_cast<uint8_t>(AvMultitrackType::ManyTracksManyCodecs) ? 1 : 5);
}

void put_u24(std::vector<uint8_t>& out, size_t v) {
  out.push_back(static_cast<uint8_t>(v >> 16));
  out.push_back(static_cast<uint8_t>(v >> 8));
  out.push_back(static_cast<uint8_t>(v));
}

void put_u32(std::vector<uint8_t>& out, uint32_t v) {
  put_u24(out, v >> 8);
  out.push_back(static_cast<uint8_t>(v));
}

void put(std::vector<uint8_t>& out, std::span<const uint8_t> b) { out.insert(out.end(), b.begin(), b.end()); }

}  // namespace

MultitrackTag parse_multitrack_video(std::span<const uint8_t> body) {
  const VideoTagInfo vi = parse_video_tag(body);
  check_header(true, vi.is_multitrack, vi.multitrack_type, vi.packet_type,
               vi.is_multitrack ? type_byte_offset(vi.payload_offset, vi.multitrack_type) : 0);
  MultitrackTag tag;
  tag.is_video = true;
  tag.frame_type = vi.frame_type;
  tag.type = static_cast<AvMultitrackType>(vi.multitrack_type);
  tag.packet_type = vi.packet_type;
  read_tracks(true, body, vi.payload_offset, vi.fourcc, tag);
  return tag;
}

MultitrackTag parse_multitrack_audio(std::span<const uint8_t> body) {
  const AudioTagInfo ai = parse_audio_tag(body);
  check_header(false, ai.is_multitrack, ai.multitrack_type, ai.packet_type,
               ai.is_multitrack ? type_byte_offset(ai.payload_offset, ai.multitrack_type) : 0);
  MultitrackTag tag;
  tag.type = static_cast<AvMultitrackType>(ai.multitrack_type);
  tag.packet_type = ai.packet_type;
  read_tracks(false, body, ai.payload_offset, ai.fourcc, tag);
  return tag;
}

std::vector<uint8_t> write_multitrack_tag(const MultitrackTag& tag) {
  const bool many_codecs = tag.type == AvMultitrackType::ManyTracksManyCodecs;
  if (tag.tracks.empty()) throw ProtocolError("multitrack tag: no track to write");
  if (tag.type == AvMultitrackType::OneTrack && tag.tracks.size() != 1)
    throw ProtocolError("multitrack tag: OneTrack with " + std::to_string(tag.tracks.size()) + " tracks");
  std::vector<uint8_t> out;
  if (tag.is_video) {
    out.push_back(static_cast<uint8_t>(0x80 | ((tag.frame_type & 0x07) << 4) | kVideoMultitrack));
  } else {
    out.push_back(static_cast<uint8_t>((kSoundFormatExHeader << 4) | kAudioMultitrack));
  }
  out.push_back(static_cast<uint8_t>((static_cast<uint8_t>(tag.type) << 4) | (tag.packet_type & 0x0F)));
  if (!many_codecs) put_u32(out, tag.tracks.front().fourcc);
  for (const TrackPayload& t : tag.tracks) {
    if (!many_codecs && t.fourcc != tag.tracks.front().fourcc)
      throw ProtocolError("multitrack tag: track " + std::to_string(t.track_id) + " has " +
                          fourcc_to_string(t.fourcc) + ", the tag's one codec is " +
                          fourcc_to_string(tag.tracks.front().fourcc));
    if (t.body.size() > kMaxTrackSize)
      throw ProtocolError("multitrack tag: track " + std::to_string(t.track_id) + " body of " +
                          std::to_string(t.body.size()) + " bytes exceeds the UI24 track size");
    if (many_codecs) put_u32(out, t.fourcc);
    out.push_back(t.track_id);
    if (tag.type != AvMultitrackType::OneTrack) put_u24(out, t.body.size());
    put(out, t.body);
  }
  return out;
}

SingleTrackPrefix single_track_prefix(const MultitrackTag& tag, const TrackPayload& track) {
  SingleTrackPrefix out;
  auto push = [&out](uint8_t b) { out.bytes[out.size++] = b; };
  const uint8_t pt = tag.packet_type;
  if (tag.is_video && track.fourcc == kFourccAvc &&
      pt <= static_cast<uint8_t>(ExVideoPacketType::CodedFramesX)) {
    // FLV E.4.3.1 VIDEODATA + AVCVIDEOPACKET: FrameType UB[4], CodecID UB[4] = 7, AVCPacketType
    // UI8 (0 sequence header, 1 NALUs, 2 end of sequence), CompositionTime SI24.
    push(static_cast<uint8_t>((tag.frame_type << 4) | kVideoCodecIdAvc));
    const bool coded = pt == kCodedFrames || pt == static_cast<uint8_t>(ExVideoPacketType::CodedFramesX);
    push(coded ? 1 : pt);  // SequenceStart 0, SequenceEnd 2: the same numbers
    if (pt == kCodedFrames) {
      if (track.body.size() < 3)
        throw ProtocolError("multitrack avc1 CodedFrames track: no composition time");
    } else {
      for (int i = 0; i < 3; ++i) push(0);  // CodedFramesX: "compositionTimeOffset is implied 0"
    }
  } else if (!tag.is_video && track.fourcc == kFourccAac && pt <= kCodedFrames) {
    // FLV E.4.2.1: SoundFormat 10, SoundRate 3, SoundSize 1, SoundType 1 ("for AAC: always 3"
    // and "always 1"), then AACPacketType: 0 AudioSpecificConfig, 1 raw frame.
    push(0xAF);
    push(pt);
  } else {
    if (tag.is_video) {
      push(static_cast<uint8_t>(0x80 | ((tag.frame_type & 0x07) << 4) | pt));
    } else {
      push(static_cast<uint8_t>((kSoundFormatExHeader << 4) | pt));
    }
    for (int shift = 24; shift >= 0; shift -= 8) push(static_cast<uint8_t>(track.fourcc >> shift));
  }
  return out;
}

std::vector<uint8_t> single_track_tag(const MultitrackTag& tag, const TrackPayload& track) {
  const SingleTrackPrefix prefix = single_track_prefix(tag, track);
  std::vector<uint8_t> out;
  out.reserve(prefix.size + track.body.size());
  out.insert(out.end(), prefix.bytes, prefix.bytes + prefix.size);
  put(out, track.body);
  return out;
}

SingleTrackParts single_track_parts(std::span<const uint8_t> body, bool is_video) {
  SingleTrackParts p;
  if (is_video) {
    const VideoTagInfo vi = parse_video_tag(body);
    if (vi.is_multitrack || vi.is_command_frame) throw ProtocolError("video tag: not a single track's media");
    p.frame_type = vi.frame_type;
    if (!vi.is_enhanced) {
      if (vi.codec != FlvVideoCodec::H264)
        throw ProtocolError("video tag: legacy codec id " + std::to_string(vi.codec_id) +
                            " has no E-RTMP FourCC");
      p.track.fourcc = kFourccAvc;
    } else {
      p.track.fourcc = vi.fourcc;
    }
    p.packet_type = vi.packet_type;  // AVCPacketType 0/1/2 = SequenceStart/CodedFrames/SequenceEnd
    const bool cts = has_composition_time(p.track.fourcc, p.packet_type);
    p.track.body = body.subspan(vi.payload_offset - (cts ? 3 : 0));
    return p;
  }
  const AudioTagInfo ai = parse_audio_tag(body);
  if (ai.is_multitrack) throw ProtocolError("audio tag: not a single track's media");
  if (ai.is_enhanced) {
    p.track.fourcc = ai.fourcc;
    p.packet_type = ai.packet_type;
  } else if (ai.codec == FlvAudioCodec::AAC || ai.codec == FlvAudioCodec::MP3) {
    p.track.fourcc = ai.codec == FlvAudioCodec::AAC ? kFourccAac : kFourccMp3;
    p.packet_type = ai.codec == FlvAudioCodec::AAC ? ai.packet_type : kCodedFrames;
  } else {
    throw ProtocolError("audio tag: legacy sound format " + std::to_string(ai.sound_format) +
                        " has no E-RTMP FourCC");
  }
  p.track.body = body.subspan(ai.payload_offset);
  return p;
}

}  // namespace rill::protocol
