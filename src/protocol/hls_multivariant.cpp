#include "rill/protocol/hls_multivariant.h"

#include <cstdio>

namespace rill::protocol {

namespace {

// §4.2: a quoted-string "MUST NOT contain the characters double quote (0x22), carriage return
// (0xD) or line feed (0xA)".
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c != '"' && c != '\r' && c != '\n') out += c;
  }
  return out + '"';
}

std::string without_breaks(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c != '\r' && c != '\n') out += c;
  }
  return out;
}

}  // namespace

std::string render_variant_stream(const HlsVariantStream& v) {
  // §4.3.4.2: "Every EXT-X-STREAM-INF tag MUST include the BANDWIDTH attribute."
  std::string out = "#EXT-X-STREAM-INF:BANDWIDTH=" + std::to_string(v.bandwidth);
  if (v.average_bandwidth) out += ",AVERAGE-BANDWIDTH=" + std::to_string(v.average_bandwidth);
  if (!v.codecs.empty()) out += ",CODECS=" + quoted(v.codecs);
  if (v.width && v.height) out += ",RESOLUTION=" + std::to_string(v.width) + "x" + std::to_string(v.height);
  if (v.frame_rate > 0) {
    char rate[32];
    std::snprintf(rate, sizeof rate, ",FRAME-RATE=%.3f", v.frame_rate);  // "rounded to three decimal places"
    out += rate;
  }
  if (!v.audio_group.empty()) out += ",AUDIO=" + quoted(v.audio_group);
  // "The URI line that follows the EXT-X-STREAM-INF tag specifies a Media Playlist."
  return out + "\n" + without_breaks(v.uri) + "\n";
}

std::string render_audio_rendition(const HlsAudioRendition& a) {
  std::string out = "#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=" + quoted(a.group_id) + ",NAME=" + quoted(a.name);
  if (!a.language.empty()) out += ",LANGUAGE=" + quoted(a.language);
  // §4.3.4.1: "If the AUTOSELECT attribute is present, its value MUST be YES if the value of the
  // DEFAULT attribute is YES."
  if (a.is_default) out += ",DEFAULT=YES";
  if (a.autoselect || a.is_default) out += ",AUTOSELECT=YES";
  // "If the URI attribute is missing, the media data for this Rendition is included in the Media
  // Playlist of any EXT-X-STREAM-INF tag referencing this EXT-X-MEDIA tag."
  if (!a.uri.empty()) out += ",URI=" + quoted(a.uri);
  return out + "\n";
}

std::string assemble_multivariant_playlist(const std::vector<std::string>& media_lines,
                                           const std::vector<std::string>& variant_entries) {
  // §4.3.1.2 / §7: nothing here needs more than version 3 (decimal EXTINF is in the media
  // playlists, which carry their own version).
  std::string out = "#EXTM3U\n#EXT-X-VERSION:3\n";
  for (const std::string& m : media_lines) out += m;
  for (const std::string& v : variant_entries) out += v;
  return out;
}

std::string render_multivariant_playlist(const std::vector<HlsAudioRendition>& audio,
                                         const std::vector<HlsVariantStream>& variants) {
  std::vector<std::string> media, entries;
  for (const auto& a : audio) media.push_back(render_audio_rendition(a));
  for (const auto& v : variants) entries.push_back(render_variant_stream(v));
  return assemble_multivariant_playlist(media, entries);
}

}  // namespace rill::protocol
