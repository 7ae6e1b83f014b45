// HlsStore's held requests (LL-HLS blocking reload and preload-hinted parts): answered when the
// stream gets there, on timeout, or when the stream ends; never twice; cancel stops them.
#include <gtest/gtest.h>
#include <spdlog/sinks/null_sink.h>

#include <memory>
#include <vector>

#include "rill/media/hls_store.h"
#include "rill/media/testing/fake_timer_queue.h"

namespace rill::media {
namespace {

using namespace std::chrono_literals;

class HlsStoreWaitsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    log_ = std::make_shared<spdlog::logger>("waits", std::make_shared<spdlog::sinks::null_sink_st>());
    store_ = std::make_unique<HlsStore>(timers_, *log_);
    cfg_.enabled = true;
    cfg_.fragment = 1000ms;
    cfg_.low_latency = true;
    cfg_.container = config::HlsContainer::Fmp4;
    store_->open(key_, cfg_);
  }
  void part() { store_->add_part(key_, SharedBuffer::copy_of(std::string_view("part")), 0.2, false); }
  void segment() { store_->add_segment(key_, SharedBuffer::copy_of(std::string_view("seg")), 1.0, false); }
  uint64_t wait(uint64_t msn, std::optional<uint64_t> p, bool part_file = false) {
    return store_->wait(key_, HlsStore::WaitTarget{part_file, msn, p}, 3000,
                        [this](bool ok) { answers_.push_back(ok); });
  }

  FakeTimerQueue timers_;
  std::shared_ptr<spdlog::logger> log_;
  std::unique_ptr<HlsStore> store_;
  config::HlsConfig cfg_;
  StreamKey key_{"live", "cam"};
  std::vector<bool> answers_;
};

TEST_F(HlsStoreWaitsTest, PlaylistWaitAnsweredWhenThePartExists) {
  wait(0, 1);  // part 1 of segment 0
  part();
  EXPECT_TRUE(answers_.empty());
  part();
  EXPECT_EQ(answers_, std::vector<bool>{true});
  EXPECT_EQ(store_->waiting(), 0u);
  EXPECT_EQ(store_->find(key_)->progress().open_parts, 2u);
}

TEST_F(HlsStoreWaitsTest, SegmentWaitAnsweredWhenTheSegmentCompletes) {
  wait(0, std::nullopt);
  part();
  EXPECT_TRUE(answers_.empty());
  segment();
  EXPECT_EQ(answers_, std::vector<bool>{true});
}

TEST_F(HlsStoreWaitsTest, PreloadHintedPartWait) {
  EXPECT_EQ(store_->find(key_)->next_part(), 0u);
  wait(0, std::nullopt, /*part_file=*/true);
  part();
  EXPECT_EQ(answers_, std::vector<bool>{true});
  EXPECT_NE(store_->find(key_)->file(protocol::HlsSegmentForm::Part, 0), nullptr);
  EXPECT_EQ(store_->find(key_)->file(protocol::HlsSegmentForm::Part, 1), nullptr);
}

TEST_F(HlsStoreWaitsTest, TimeoutAnswersFalseOnce) {
  wait(5, std::nullopt);
  timers_.advance(2999ms);
  EXPECT_TRUE(answers_.empty());
  timers_.advance(1ms);
  EXPECT_EQ(answers_, std::vector<bool>{false});
  for (int i = 0; i < 6; ++i) segment();
  EXPECT_EQ(answers_.size(), 1u);  // never twice
}

TEST_F(HlsStoreWaitsTest, CancelledWaitIsNeverAnswered) {
  const uint64_t id = wait(0, 0);
  store_->cancel_wait(id);
  part();
  timers_.advance(5000ms);
  EXPECT_TRUE(answers_.empty());
}

TEST_F(HlsStoreWaitsTest, PublisherLeavingAnswersPlaylistWaitsAndGivesUpOnParts) {
  wait(3, std::nullopt);                        // the playlist: answered with the ended one
  wait(0, std::nullopt, /*part_file=*/true);    // the hinted part: will not come
  store_->close(key_);
  EXPECT_EQ(answers_, (std::vector<bool>{true, false}));
}

TEST_F(HlsStoreWaitsTest, ManyWaitersOfOnePositionAllAnswered) {
  for (int i = 0; i < 200; ++i) wait(0, 0);
  EXPECT_EQ(store_->waiting(), 200u);
  part();
  EXPECT_EQ(answers_.size(), 200u);
  EXPECT_EQ(store_->waiting(), 0u);
}

}  // namespace
}  // namespace rill::media
