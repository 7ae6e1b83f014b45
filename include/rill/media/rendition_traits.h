#pragma once
// A rendition's traits for its multivariant playlist entry (media::HlsRenditionTraits): the
// RFC 6381 CODECS of the tracks a segmenter carries and the picture size, from the decoder
// configuration records it holds. Records are the publisher's; a record that does not parse
// leaves its part out (a playlist without CODECS still plays; one with a wrong one does not).
#include <cstdint>
#include <span>

#include "rill/media/hls_store.h"
#include "rill/protocol/ts_muxer.h"

namespace rill::media {

// `tracks`: what the segments carry. `width`/`height`: a size already known (VP9, from its
// first key frame), else 0: read from the AVC SPS or the AV1 sequence header (HEVC: unknown).
HlsRenditionTraits rendition_traits(const protocol::TsStreams& tracks, std::span<const uint8_t> video_record,
                                    std::span<const uint8_t> audio_record, uint32_t width, uint32_t height);

}  // namespace rill::media
