// rill-microbench: Google Benchmark micro-benchmarks of the fan-out hot path, no sockets
// (docs/benchmarks.md). What one published frame costs per player on the RTMP path: the hub's
// fan-out (media::Stream -> Subscriber::on_frame), the frame's RTMP chunks serialized once and
// shared (MediaFrame::rtmp_chunks), the push onto each player's OutputQueue, and filling the
// iovec array a flush hands to sendmsg, then consuming what "went out". FanoutHttpFlv is the same
// path for chunked HTTP-FLV players (the frame's shared chunk, MediaFrame::flv_chunk).
//
//   build/release/rill-microbench                          # every benchmark
//   build/release/rill-microbench --benchmark_filter=Fanout/1000
//
// Per-player figures: items_per_second counts player-frames (N per published frame).
#include <benchmark/benchmark.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>
#include <sys/uio.h>

#include <memory>
#include <vector>

#include "rill/config/config.h"
#include "rill/core/buffer.h"
#include "rill/media/media_frame.h"
#include "rill/media/output_queue.h"
#include "rill/media/stream.h"
#include "rill/media/stream_output.h"
#include "rill/media/subscriber.h"
#include "rill/media/testing/fake_timer_queue.h"

namespace {

using namespace rill;
using namespace rill::media;

constexpr uint32_t kChunkSize = 4096;  // rtmp.chunk_size's default
constexpr size_t kFrameBytes = 3125;   // 750 kbps at 30 fps
constexpr size_t kMaxIov = 64;

BufferRef video_frame(bool key, size_t size) {
  std::vector<uint8_t> v{static_cast<uint8_t>(key ? 0x17 : 0x27), 0x01, 0, 0, 0};
  const auto n = static_cast<uint32_t>(size);
  v.insert(v.end(), {uint8_t(n >> 24), uint8_t(n >> 16), uint8_t(n >> 8), uint8_t(n)});
  v.push_back(key ? 0x65 : 0x41);
  v.resize(v.size() + size - 1, 0x9a);
  return SharedBuffer::copy_of(std::span<const uint8_t>(v));
}

BufferRef avc_seq_header() {
  const std::vector<uint8_t> v{0x17, 0x00, 0x00, 0x00, 0x00, 0x01, 0x64, 0x00, 0x1f, 0xff, 0xe1, 0x00,
                               0x04, 0x67, 0x64, 0x00, 0x1f, 0x01, 0x00, 0x04, 0x68, 0xee, 0x3c, 0x80};
  return SharedBuffer::copy_of(std::span<const uint8_t>(v));
}

enum class Format { Rtmp, HttpFlv };

// What a player of `format` is sent for a frame: its shared RTMP chunks or its shared HTTP-FLV chunk.
const BufferRef& wire_bytes(const MediaFrame& f, Format format) {
  return format == Format::Rtmp ? f.rtmp_chunks(kChunkSize) : f.flv_chunk();
}

// A player as RtmpSession (or HttpFlvSession, chunked) plays: the frame's shared bytes onto its
// queue; the flush fills iovecs and consumes everything (a socket that takes it all).
struct Player final : Subscriber {
  explicit Player(Format f = Format::Rtmp) : format(f) {}
  Format format;
  OutputQueue queue{QueueLimits{}};
  void on_frame(const FramePtr& f) override { queue.push_frame(*f, wire_bytes(*f, format)); }
  void flush() {
    iovec iov[kMaxIov];
    while (!queue.empty()) {
      const size_t n = queue.fill_iov(iov, kMaxIov);
      size_t bytes = 0;
      for (size_t i = 0; i < n; ++i) bytes += iov[i].iov_len;
      benchmark::DoNotOptimize(iov);
      queue.consume(bytes);
    }
  }
};

// One publisher, N players: publish a frame (a keyframe every 60), flush every player.
void fanout(benchmark::State& state, Format format) {
  const auto n = static_cast<size_t>(state.range(0));
  FakeTimerQueue timers;
  auto log = std::make_shared<spdlog::logger>("microbench", std::make_shared<spdlog::sinks::null_sink_st>());
  StreamRegistry registry(timers, log, default_outputs);
  config::AppConfig app;
  app.name = "live";
  Stream& s = registry.get_or_create(StreamKey{"live", "bench"}, app);
  int owner = 0;
  s.attach_publisher(&owner, PublishOrigin::Ingest);
  s.publish(MediaType::Video, 0, avc_seq_header());
  std::vector<std::unique_ptr<Player>> players(n);
  for (auto& p : players) {
    p = std::make_unique<Player>(format);
    s.add_subscriber(p.get());
    p->flush();
  }
  const BufferRef key = video_frame(true, kFrameBytes * 4);
  const BufferRef inter = video_frame(false, kFrameBytes);
  uint32_t ts = 0, frame = 0;
  for (auto _ : state) {
    ts += 33;
    s.publish(MediaType::Video, ts, ++frame % 60 == 0 ? key : inter);
    for (auto& p : players) p->flush();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(n));
  for (auto& p : players) s.remove_subscriber(p.get());
}
void BM_Fanout(benchmark::State& state) { fanout(state, Format::Rtmp); }
BENCHMARK(BM_Fanout)->Arg(1)->Arg(100)->Arg(1000)->Arg(5000);
void BM_FanoutHttpFlv(benchmark::State& state) { fanout(state, Format::HttpFlv); }
BENCHMARK(BM_FanoutHttpFlv)->Arg(1000)->Arg(5000);

// The queue alone: push one shared buffer, fill the iovecs, consume — per player.
void BM_QueuePushFlush(benchmark::State& state) {
  const auto n = static_cast<size_t>(state.range(0));
  std::vector<Player> players(n);
  MediaFrame f;
  f.type = MediaType::Video;
  f.payload = video_frame(false, kFrameBytes);
  const BufferRef chunks = f.rtmp_chunks(kChunkSize);
  for (auto _ : state) {
    f.timestamp += 33;
    for (auto& p : players) {
      p.queue.push_frame(f, chunks);
      p.flush();
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(n));
}
BENCHMARK(BM_QueuePushFlush)->Arg(1000);

// Serializing one frame for the wire: paid once per frame (and chunk size), not per player —
// RTMP chunks, or the FLV tag framed as one HTTP/1.1 chunk.
void serialize(benchmark::State& state, Format format) {
  const BufferRef payload = video_frame(false, static_cast<size_t>(state.range(0)));
  for (auto _ : state) {
    MediaFrame f;
    f.type = MediaType::Video;
    f.payload = payload;
    benchmark::DoNotOptimize(wire_bytes(f, format).size());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}
void BM_ChunkSerialize(benchmark::State& state) { serialize(state, Format::Rtmp); }
BENCHMARK(BM_ChunkSerialize)->Arg(static_cast<int64_t>(kFrameBytes))->Arg(64 * 1024);
void BM_FlvChunkSerialize(benchmark::State& state) { serialize(state, Format::HttpFlv); }
BENCHMARK(BM_FlvChunkSerialize)->Arg(static_cast<int64_t>(kFrameBytes))->Arg(64 * 1024);

}  // namespace

BENCHMARK_MAIN();
