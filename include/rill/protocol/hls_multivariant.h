#pragma once
// The multivariant playlist of a rendition group (docs/abr.md): RFC 8216 §4.3.4.2 EXT-X-STREAM-INF
// for each variant stream and §4.3.4.1 EXT-X-MEDIA for alternative renditions. Pure text.
//
// A group's renditions can live on different workers: each rendition's owner renders its own
// variant entry (render_variant_stream, asked over the worker link), and the worker answering
// NAME.m3u8 puts the entries it got under one header (assemble_multivariant_playlist).
// render_multivariant_playlist does both for a list known in one place (the renditions of a
// multitrack publish, later). The CODECS of a variant name all its codecs, muxed audio included
// (§4.3.4.2: "every media format in any of the renditions").
#include <cstdint>
#include <string>
#include <vector>

namespace rill::protocol {

// One EXT-X-STREAM-INF (§4.3.4.2). Attributes that are 0 or empty are left out.
struct HlsVariantStream {
  std::string uri;                 // the media playlist, relative to the multivariant playlist
  uint64_t bandwidth = 0;          // BANDWIDTH: peak segment bit rate, bits/s (required; 0 writes 0)
  uint64_t average_bandwidth = 0;  // AVERAGE-BANDWIDTH: average segment bit rate, bits/s
  std::string codecs;              // CODECS: RFC 6381 list, "avc1.64001F,mp4a.40.2"
  uint32_t width = 0, height = 0;  // RESOLUTION
  double frame_rate = 0;           // FRAME-RATE, three decimals
  std::string audio_group;         // AUDIO: the GROUP-ID of its EXT-X-MEDIA TYPE=AUDIO renditions
};

// One EXT-X-MEDIA (§4.3.4.1) of TYPE=AUDIO.
struct HlsAudioRendition {
  std::string group_id;     // GROUP-ID
  std::string name;         // NAME
  std::string uri;          // URI: its media playlist; "" when it is muxed in the variants
  std::string language;     // LANGUAGE, "" to leave out
  bool is_default = false;  // DEFAULT=YES
  bool autoselect = true;   // AUTOSELECT=YES
};

// "#EXT-X-STREAM-INF:...\nURI\n". Quoted-string attributes may not hold '"' or a line break
// (§4.2); such characters are dropped.
std::string render_variant_stream(const HlsVariantStream& v);
// "#EXT-X-MEDIA:TYPE=AUDIO,...\n".
std::string render_audio_rendition(const HlsAudioRendition& a);
// "#EXTM3U", the version, then the EXT-X-MEDIA lines and the variant entries as given.
std::string assemble_multivariant_playlist(const std::vector<std::string>& media_lines,
                                           const std::vector<std::string>& variant_entries);
std::string render_multivariant_playlist(const std::vector<HlsAudioRendition>& audio,
                                         const std::vector<HlsVariantStream>& variants);

}  // namespace rill::protocol
