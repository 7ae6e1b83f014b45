// HlsSegmenter golden output: fixed synthetic publishes (AVC + AAC, HEVC, audio only, video only)
// go through Stream::publish into the segmenter, in MPEG-TS, fMP4 and LL-HLS, and every segment,
// part, init section and playlist text the store receives is folded into one FNV-1a hash per
// case. The expected values were recorded before the segmenter was split into a segment plan
// and segment writers (media/segment_writer.h): a refactor must keep them byte for byte.
//
// A case that fails prints its actual line; with RILL_HLS_GOLDEN_DUMP=DIR each case also writes
// its event log (one line per object: kind, number, size, hash) to DIR/<case>.txt, to find the
// first object that differs between two builds, and what the server logged to DIR/<case>.log.
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "codec_test_data.h"
#include "media_test_util.h"
#include "rill/media/hls_store.h"
#include "rill/media/stream.h"
#include "rill/media/stream_output.h"
#include "rill/media/testing/fake_timer_queue.h"

namespace rill::media {
namespace {

using namespace std::chrono_literals;
using testutil::bytes;
using Bytes = std::vector<uint8_t>;

// ---- hashing -------------------------------------------------------------------------------------

constexpr uint64_t kFnvBasis = 14695981039346656037ull;
uint64_t fnv1a(const uint8_t* p, size_t n, uint64_t h = kFnvBasis) {
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

// ---- synthetic tags ------------------------------------------------------------------------------

// A fixed pseudo-random byte source (the same on every platform).
class Lcg {
 public:
  uint32_t next() {
    s_ = s_ * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>(s_ >> 33);
  }
  uint32_t below(uint32_t n) { return next() % n; }
  void fill(Bytes& v, size_t n) {
    for (size_t i = 0; i < n; ++i) v.push_back(static_cast<uint8_t>(next() >> 7));
  }

 private:
  uint64_t s_ = 0x5EED;
};

struct Step {
  enum class Kind { Tag, Stop, Start } kind = Kind::Tag;
  MediaType type = MediaType::Data;
  uint32_t ts = 0;
  BufferRef body;
};

void put_be(Bytes& v, uint32_t x, int n) {
  for (int i = n - 1; i >= 0; --i) v.push_back(static_cast<uint8_t>(x >> (8 * i)));
}
// One 4-byte-length-prefixed NAL unit of `size` bytes starting with `header`.
void put_nal(Bytes& v, Lcg& rng, std::initializer_list<uint8_t> header, size_t size) {
  put_be(v, static_cast<uint32_t>(size), 4);
  v.insert(v.end(), header);
  rng.fill(v, size - header.size());
}

Bytes hvcc_record() {  // one tiny VPS, SPS and PPS (as in hls_segmenter_test.cpp)
  Bytes r = {0x01, 0x01, 0x60, 0x00, 0x00, 0x00, 0x90, 0x00, 0x00, 0x00, 0x00, 0x00,
             0x5D, 0xF0, 0x00, 0xFC, 0xFD, 0xF8, 0xF8, 0x00, 0x00, 0x0F, 0x03};
  for (uint8_t type : {32, 33, 34}) {
    r.insert(r.end(), {static_cast<uint8_t>(0x80 | type), 0x00, 0x01, 0x00, 0x03,
                       static_cast<uint8_t>(type << 1), 0x01, 0xAA});
  }
  return r;
}

class Script {
 public:
  std::vector<Step> steps;
  Lcg rng;

  void tag(MediaType t, uint32_t ts, Bytes v) { steps.push_back({Step::Kind::Tag, t, ts, bytes(v)}); }
  void stop() { steps.push_back({Step::Kind::Stop, MediaType::Data, 0, {}}); }
  void start() { steps.push_back({Step::Kind::Start, MediaType::Data, 0, {}}); }

  void metadata(uint32_t ts) {
    steps.push_back({Step::Kind::Tag, MediaType::Data, ts, testutil::on_metadata(true)});
  }
  void avc_header(uint32_t ts, const Bytes& record) {
    Bytes v = {0x17, 0x00, 0x00, 0x00, 0x00};
    v.insert(v.end(), record.begin(), record.end());
    tag(MediaType::Video, ts, v);
  }
  void avc(uint32_t ts, bool key, size_t size, int32_t cts) {
    Bytes v = {static_cast<uint8_t>(key ? 0x17 : 0x27), 0x01};
    put_be(v, static_cast<uint32_t>(cts) & 0xFFFFFF, 3);
    if (key) put_nal(v, rng, {0x06, 0x05}, 12);  // SEI
    put_nal(v, rng, {static_cast<uint8_t>(key ? 0x65 : 0x41)}, size);
    tag(MediaType::Video, ts, v);
  }
  void aac_header(uint32_t ts) { tag(MediaType::Audio, ts, {0xAF, 0x00, 0x12, 0x10}); }
  void aac(uint32_t ts, size_t size) {
    Bytes v = {0xAF, 0x01};
    rng.fill(v, size);
    tag(MediaType::Audio, ts, v);
  }
  void mp3(uint32_t ts) {
    Bytes v = {0x2F, 0xFF, 0xFB, 0x90, 0x64};
    rng.fill(v, 413);
    tag(MediaType::Audio, ts, v);
  }
  // E-RTMP hvc1: SequenceStart, CodedFrames (with cts), CodedFramesX, or CodedFrames behind a
  // ModEx prefix (TimestampOffsetNano); legacy codec id 12 when `legacy`.
  enum class Hevc { Header, Coded, CodedX, ModEx, Legacy };
  void hevc(uint32_t ts, Hevc form, bool key, size_t size, int32_t cts = 0) {
    const uint8_t frame = key ? 0x10 : 0x20;
    Bytes v;
    switch (form) {
      case Hevc::Header:
        v = {0x90, 'h', 'v', 'c', '1'};
        break;
      case Hevc::Coded:
        v = {static_cast<uint8_t>(0x81 | frame), 'h', 'v', 'c', '1'};
        break;
      case Hevc::CodedX:
        v = {static_cast<uint8_t>(0x83 | frame), 'h', 'v', 'c', '1'};
        break;
      case Hevc::ModEx:
        v = {static_cast<uint8_t>(0x87 | frame), 0x02, 0x00, 0x01, 0x02, 0x01, 'h', 'v', 'c', '1'};
        break;
      case Hevc::Legacy:
        v = {static_cast<uint8_t>(frame | 0x0C), 0x01};
        break;
    }
    if (form == Hevc::Header) {
      const Bytes r = hvcc_record();
      v.insert(v.end(), r.begin(), r.end());
    } else {
      if (form != Hevc::CodedX) put_be(v, static_cast<uint32_t>(cts) & 0xFFFFFF, 3);
      put_nal(v, rng, {static_cast<uint8_t>((key ? 19 : 1) << 1), 0x01}, size);
    }
    tag(MediaType::Video, ts, v);
  }

  // Interleaved AVC (25 fps, keyframe every gop_ms, B-frame composition offsets) and AAC (1024
  // samples at 44.1 kHz) over [from, to).
  void av(uint32_t from, uint32_t to, uint32_t gop_ms, bool audio = true, bool video = true,
          size_t vsize = 3000) {
    uint32_t v = from;
    uint64_t a_n = 0;
    auto a_ts = [&] { return from + static_cast<uint32_t>(a_n * 1024 * 1000 / 44100); };
    while ((video && v < to) || (audio && a_ts() < to)) {
      if (video && v < to && (!audio || a_ts() >= to || v <= a_ts())) {
        const uint32_t n = (v - from) / 40;
        const bool key = (v - from) % gop_ms < 40;
        avc(v, key, key ? vsize * 4 + rng.below(2000) : vsize / 2 + rng.below(vsize),
            key ? 40 : (n % 3) * 40);
        v += 40;
      } else {
        aac(a_ts(), 150 + rng.below(300));
        ++a_n;
      }
    }
  }
};

Script avc_aac() {
  Script s;
  s.metadata(0);
  s.avc_header(0, testdata::kAvcRecord);
  s.aac_header(0);
  s.av(0, 6000, 1000);
  s.av(6000, 10000, 4000);  // GOP longer than max_fragment: forced cuts
  const Bytes other = {0x01, 0x4d, 0x00, 0x1e, 0xff, 0xe1, 0x00, 0x04, 0x67, 0x4d,
                       0x00, 0x1e, 0x01, 0x00, 0x04, 0x68, 0xee, 0x3c, 0x80};
  s.avc_header(10000, other);  // a codec change: new run, discontinuity
  s.av(10000, 13000, 1000);
  s.tag(MediaType::Video, 13000, {0x27, 0x01, 0, 0, 0, 0, 0, 0x10, 0x00, 0x41});  // AVCC length past the end
  s.tag(MediaType::Video, 13005, {0x57, 0x00});                                   // command frame
  s.tag(MediaType::Video, 13006, {0x17, 0x02, 0, 0, 0});                          // end of sequence
  s.tag(MediaType::Video, 13007, {0x91, 'a', 'v', '0', '1', 0x12, 0x00});         // AV1: not carried
  s.tag(MediaType::Audio, 13008, {0x91, 'O', 'p', 'u', 's', 0x01, 0x02});         // Opus: not carried
  s.aac(13010, 9000);                                                             // over the ADTS limit
  s.av(13040, 15000, 500);
  s.av(15000, 17000, 1000, true, true, 40000);  // big GOPs: the segment size cap cuts
  s.avc(17000, true, 400000, 0);                // alone over the cap: dropped
  s.av(17040, 19000, 1000);
  s.av(14000, 16000, 1000);  // the publisher's clock jumps back 5 s
  s.av(40000, 42000, 1000);  // and forward 24 s
  s.stop();
  s.start();  // republish: headers again, the sequence continues after a discontinuity
  s.metadata(0);
  s.avc_header(0, testdata::kAvcRecord);
  s.aac_header(0);
  s.av(0, 3000, 1000);
  s.stop();
  return s;
}

Script hevc_aac() {
  Script s;
  s.hevc(0, Script::Hevc::Header, true, 0);
  s.aac_header(0);
  uint64_t a_n = 0;
  for (uint32_t v = 0; v < 9000; v += 40) {
    for (uint32_t a; (a = static_cast<uint32_t>(a_n * 1024 * 1000 / 44100)) < v; ++a_n)
      s.aac(a, 200 + s.rng.below(200));
    const bool key = v % 1000 == 0;
    const uint32_t n = v / 40;
    const auto form = v >= 6000    ? Script::Hevc::Legacy
                      : n % 5 == 1 ? Script::Hevc::CodedX
                      : n % 5 == 3 ? Script::Hevc::ModEx
                                   : Script::Hevc::Coded;
    s.hevc(v, form, key, key ? 9000 + s.rng.below(3000) : 1000 + s.rng.below(2000), (n % 2) * 40);
  }
  s.avc_header(9000, testdata::kAvcRecord);  // HEVC -> AVC: a new run
  s.av(9000, 12000, 1000);
  s.stop();
  return s;
}

Script audio_only_aac() {
  Script s;
  s.aac_header(0);
  s.av(0, 9000, 1000, true, false);
  s.av(20000, 26000, 1000, true, false);  // a jump forward
  s.stop();
  return s;
}

Script mp3_then_aac() {
  Script s;
  for (uint32_t i = 0; i * 26 < 5000; ++i) s.mp3(i * 26);
  s.aac_header(5000);
  s.av(5000, 10000, 1000, true, false);
  for (uint32_t i = 0; i * 26 < 3000; ++i) s.mp3(10000 + i * 26);
  s.stop();
  return s;
}

Script video_only() {
  Script s;
  s.metadata(0);
  s.avc_header(0, testdata::kAvcRecord);
  s.av(0, 7000, 2000, false, true);
  s.avc_header(7000, testdata::kAvcRecord);  // repeated unchanged: no new run
  s.av(7000, 12000, 1000, false, true);
  s.stop();
  return s;
}

// ---- running a case --------------------------------------------------------------------------------

enum class Mode { Ts, Fmp4, LowLatency };

struct Outcome {
  size_t segments = 0, parts = 0, inits = 0, playlists = 0;
  uint64_t media = kFnvBasis;           // segments, parts and init sections, in the order they came
  uint64_t playlists_hash = kFnvBasis;  // every distinct playlist text, in order
  std::string log;
  std::string server_log;  // what the segmenter and the store logged
};

// Feeds `script` through a Stream with HLS on and collects what the store got after each step.
Outcome run(const Script& script, Mode mode) {
  FakeTimerQueue timers;
  std::ostringstream log_text;
  auto log =
      std::make_shared<spdlog::logger>("golden", std::make_shared<spdlog::sinks::ostream_sink_st>(log_text));
  log->set_level(spdlog::level::debug);
  StreamRegistry registry(timers, log, default_outputs);
  config::AppConfig app;
  app.name = "live";
  app.play_wait = 0ms;
  app.hls.enabled = true;
  app.hls.fragment = 1000ms;
  app.hls.window = 4;
  app.hls.max_segment_size = 300 * 1024;
  app.hls.container = mode == Mode::Ts ? config::HlsContainer::Ts : config::HlsContainer::Fmp4;
  app.hls.low_latency = mode == Mode::LowLatency;
  app.hls.part = 300ms;
  const StreamKey key{"live", "golden"};
  int owner = 0;
  // Without subscribers the stream goes away with its publisher (the store keeps the HLS state).
  Stream* stream = &registry.get_or_create(key, app);
  stream->attach_publisher(&owner, PublishOrigin::Ingest);

  Outcome out;
  uint64_t next_seg = 0, next_part = 0, next_init = 1;
  std::string last_playlist;
  const protocol::HlsSegmentForm form =
      mode == Mode::Ts ? protocol::HlsSegmentForm::Ts : protocol::HlsSegmentForm::Fmp4;
  auto fold = [&](const char* kind, uint64_t n, const BufferRef& b) {
    const uint64_t h = fnv1a(b.data(), b.size());
    std::ostringstream line;
    line << kind << ' ' << n << ' ' << b.size() << ' ' << std::hex << h << '\n';
    out.log += line.str();
    uint64_t& into = std::string_view(kind) == "playlist" ? out.playlists_hash : out.media;
    into = fnv1a(reinterpret_cast<const uint8_t*>(line.str().data()), line.str().size(), into);
  };
  auto collect = [&] {
    const HlsStreamState* st = registry.hls().find(key);
    if (!st) return;
    for (; const BufferRef* b = st->file(protocol::HlsSegmentForm::Init, next_init); ++next_init, ++out.inits)
      fold("init", next_init, *b);
    for (; const BufferRef* b = st->file(protocol::HlsSegmentForm::Part, next_part); ++next_part, ++out.parts)
      fold("part", next_part, *b);
    for (; const BufferRef* b = st->file(form, next_seg); ++next_seg, ++out.segments)
      fold("segment", next_seg, *b);
    const BufferRef text = st->playlist_text();
    if (text->view() != last_playlist) {
      last_playlist = std::string(text->view());
      fold("playlist", out.playlists++, text);
    }
  };

  uint32_t last_ts = 0;
  for (const Step& s : script.steps) {
    switch (s.kind) {
      case Step::Kind::Tag:
        // The clock follows the media (a real-time publisher), never faster than 100 ms a step.
        if (s.ts > last_ts) timers.advance(std::min<int64_t>(s.ts - last_ts, 100));
        last_ts = s.ts;
        stream->publish(s.type, s.ts, s.body);
        break;
      case Step::Kind::Stop:
        stream->detach_publisher(&owner);
        stream = nullptr;
        break;
      case Step::Kind::Start:
        stream = &registry.get_or_create(key, app);
        stream->attach_publisher(&owner, PublishOrigin::Ingest);
        break;
    }
    collect();
  }
  out.server_log = log_text.str();
  return out;
}

struct Golden {
  const char* name;
  Script (*script)();
  Mode mode;
  size_t segments, parts;
  uint64_t media, playlists;
};

// Recorded with the segmenter before the segment writers (see the comment at the top).
const Golden kGolden[] = {
    {"avc_aac_ts", avc_aac, Mode::Ts, 29, 0, 0xffaccdba59bcc74dull, 0x3c241b5c69c4237bull},
    {"avc_aac_fmp4", avc_aac, Mode::Fmp4, 28, 0, 0xf17adcf7e8ba98c4ull, 0xc294b06136cbe947ull},
    {"avc_aac_ll", avc_aac, Mode::LowLatency, 28, 107, 0xd1978600b7caec8ull, 0x869092490666eac1ull},
    {"hevc_aac_ts", hevc_aac, Mode::Ts, 12, 0, 0xed22a99c6bd7eab3ull, 0xbffd41059bac8cabull},
    {"hevc_aac_fmp4", hevc_aac, Mode::Fmp4, 12, 0, 0x2ff2c3460697a063ull, 0x2a6315720ae66fe9ull},
    {"hevc_aac_ll", hevc_aac, Mode::LowLatency, 12, 48, 0x9be00b24af936b76ull, 0x4cff3f92f4235390ull},
    {"audio_only_aac_ts", audio_only_aac, Mode::Ts, 14, 0, 0xb84d90b5c54ed1dbull, 0xa9e24ff4d5263107ull},
    {"audio_only_aac_fmp4", audio_only_aac, Mode::Fmp4, 14, 0, 0xe97e533e3ca8bdf9ull, 0xa60440b06bf7aca7ull},
    {"audio_only_aac_ll", audio_only_aac, Mode::LowLatency, 14, 55, 0x49eaa2dd89b5fa5bull,
     0xe9c9a3a204799399ull},
    {"mp3_then_aac_ts", mp3_then_aac, Mode::Ts, 12, 0, 0xab9e3a050d84b664ull, 0xe34319e4657eb9f0ull},
    {"mp3_then_aac_fmp4", mp3_then_aac, Mode::Fmp4, 4, 0, 0xc56a17789b922907ull, 0x2acc5d6001284d13ull},
    {"video_only_ts", video_only, Mode::Ts, 9, 0, 0xd0febf276282d072ull, 0x6cf34758b27df856ull},
    {"video_only_fmp4", video_only, Mode::Fmp4, 9, 0, 0xd822dc2d3f209007ull, 0x93446255483b244bull},
    {"video_only_ll", video_only, Mode::LowLatency, 9, 48, 0x3214139d7985d101ull, 0xf0eff7a0f7a9ca69ull},
};

TEST(HlsSegmenterGolden, SegmentsPartsAndPlaylistsAreUnchanged) {
  const char* dump = std::getenv("RILL_HLS_GOLDEN_DUMP");
  for (const Golden& g : kGolden) {
    SCOPED_TRACE(g.name);
    const Outcome o = run(g.script(), g.mode);
    if (dump) {
      std::ofstream(std::string(dump) + "/" + g.name + ".txt") << o.log;
      std::ofstream(std::string(dump) + "/" + g.name + ".log") << o.server_log;
    }
    EXPECT_GT(o.segments, 0u);
    EXPECT_GT(o.playlists, 0u);
    if (g.mode == Mode::LowLatency) {
      EXPECT_GT(o.parts, 0u);
    }
    std::ostringstream actual;
    actual << "actual: " << o.segments << ", " << o.parts << ", 0x" << std::hex << o.media << "ull, 0x"
           << o.playlists_hash << "ull";
    EXPECT_EQ(o.segments, g.segments) << actual.str();
    EXPECT_EQ(o.parts, g.parts) << actual.str();
    EXPECT_EQ(o.media, g.media) << actual.str();
    EXPECT_EQ(o.playlists_hash, g.playlists) << actual.str();
  }
}

}  // namespace
}  // namespace rill::media
