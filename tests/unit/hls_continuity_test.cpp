// HLS media sequence continuity across workers: HlsPlaylist::continue_from, the shared-memory
// HlsSequenceMemo, and an HlsStore that recalls where another store stopped.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include "rill/media/hls_store.h"
#include "rill/media/testing/fake_timer_queue.h"
#include "rill/protocol/hls_playlist.h"
#include "rill/workers/hls_sequence_memo.h"
#include "rill/workers/ownership_table.h"

namespace rill {
namespace {

TEST(HlsContinuity, PlaylistContinuesFromAnotherProducer) {
  protocol::HlsPlaylist p(3, 1.0);
  p.continue_from(42, 5);
  auto r = p.add_segment(1.0, false, "a/42.ts");
  EXPECT_EQ(r.sequence, 42u);
  EXPECT_TRUE(p.state().segments.front().discontinuity);
  EXPECT_EQ(p.state().media_sequence, 42u);
  EXPECT_EQ(p.state().discontinuity_sequence, 5u);
  EXPECT_EQ(p.discontinuities_so_far(), 6u);
  p.continue_from(0, 0);  // ignored: the playlist has segments
  EXPECT_EQ(p.next_sequence(), 43u);
}

TEST(HlsContinuity, DiscontinuitiesSoFarCountsRemovedAndListedTags) {
  protocol::HlsPlaylist p(1, 1.0);
  for (int i = 0; i < 6; ++i) p.add_segment(1.0, i == 1 || i == 5, "x.ts");
  EXPECT_EQ(p.discontinuities_so_far(), 2u);
}

TEST(HlsContinuity, MemoIsSharedWithChildProcesses) {
  workers::HlsSequenceMemo memo;
  EXPECT_FALSE(memo.recall("live/cam"));
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    memo.remember("live/cam", {17, 2});
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  auto at = memo.recall("live/cam");
  ASSERT_TRUE(at);
  EXPECT_EQ(at->next_sequence, 17u);
  EXPECT_EQ(at->discontinuities, 2u);
  EXPECT_FALSE(memo.recall("live/other"));
}

TEST(HlsContinuity, SecondStoreContinuesWhereTheFirstStopped) {
  FakeTimerQueue timers{1000000};
  auto log = std::make_shared<spdlog::logger>("t", std::make_shared<spdlog::sinks::null_sink_mt>());
  workers::OwnershipTable table;
  config::HlsConfig cfg;
  cfg.enabled = true;
  auto key = *media::StreamKey::parse("live/cam");
  {
    media::HlsStore first(timers, *log);
    first.set_continuity(&table.hls_memo());
    first.open(key, cfg);
    for (int i = 0; i < 4; ++i) first.add_segment(key, SharedBuffer::copy_of(std::string_view("ts")), 1.0, false);
    first.close(key);
  }
  media::HlsStore second(timers, *log);
  second.set_continuity(&table.hls_memo());
  second.open(key, cfg);
  auto seq = second.add_segment(key, SharedBuffer::copy_of(std::string_view("ts")), 1.0, false);
  ASSERT_TRUE(seq);
  EXPECT_EQ(*seq, 4u);
  const auto* st = second.find(key);
  ASSERT_NE(st, nullptr);
  EXPECT_TRUE(st->playlist().state().segments.front().discontinuity);
  EXPECT_EQ(st->playlist().state().discontinuity_sequence, 0u);
}

// The holder: the worker that segmented a stream last and keeps its (ended) state, recorded with
// each position and cleared when that worker drops the state — not when another worker, which
// segmented it since, drops an older one.
TEST(HlsContinuity, MemoNamesTheWorkerThatHoldsTheState) {
  FakeTimerQueue timers{1000000};
  auto log = std::make_shared<spdlog::logger>("t", std::make_shared<spdlog::sinks::null_sink_mt>());
  workers::HlsSequenceMemo memo;
  config::HlsConfig cfg;
  cfg.enabled = true;
  auto key = *media::StreamKey::parse("live/cam");
  media::HlsStore store(timers, *log);
  store.set_continuity(&memo);
  store.open(key, cfg);
  store.add_segment(key, SharedBuffer::copy_of(std::string_view("ts")), 1.0, false);
  EXPECT_FALSE(memo.holder("live/cam"));  // no worker identity set: nobody named
  memo.set_holder(3, 4242);
  store.add_segment(key, SharedBuffer::copy_of(std::string_view("ts")), 1.0, false);
  auto h = memo.holder("live/cam");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->slot, 3);
  EXPECT_EQ(h->pid, 4242);
  EXPECT_FALSE(memo.holder("live/other"));
  // Ended: still held (the grace); dropped after it: nobody holds it any more.
  store.close(key);
  EXPECT_TRUE(memo.holder("live/cam"));
  timers.advance(std::chrono::milliseconds(media::HlsStore::grace_ms(*store.find(key))));
  EXPECT_EQ(store.find(key), nullptr);
  EXPECT_FALSE(memo.holder("live/cam"));
  // The position stays for the next publisher.
  ASSERT_TRUE(memo.recall("live/cam"));
  EXPECT_EQ(memo.recall("live/cam")->next_sequence, 2u);
  // Another worker segmented the stream since: this one's drop leaves it named.
  memo.remember("live/cam", {5, 0});
  memo.set_holder(1, 77);
  memo.remember("live/cam", {6, 0});
  memo.set_holder(3, 4242);
  memo.dropped("live/cam");
  h = memo.holder("live/cam");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->slot, 1);
  EXPECT_EQ(h->pid, 77);
}

}  // namespace
}  // namespace rill
