// record::files_past_retention: which recordings an app's retention deletes.
#include "rill/record/retention_policy.h"

#include <gtest/gtest.h>

#include <vector>

namespace rill::record {
namespace {

using std::chrono::hours;

constexpr std::time_t kNow = 1'000'000'000;
constexpr std::time_t kDay = 86400;

TEST(RetentionPolicy, NoLimitsDeleteNothing) {
  const std::vector<RetentionCandidate> files = {{kNow - 400 * kDay, 1u << 30, false}};
  EXPECT_TRUE(files_past_retention(files, {}, kNow).empty());
}

TEST(RetentionPolicy, MaxAgeDeletesWhatStartedBeforeIt) {
  const std::vector<RetentionCandidate> files = {{kNow - 1 * kDay, 10, false},
                                                 {kNow - 9 * kDay, 10, false},
                                                 {kNow - 8 * kDay, 10, true},
                                                 {kNow - 7 * kDay + 1, 10, false}};
  RetentionLimits l;
  l.max_age = hours(7 * 24);
  EXPECT_EQ(files_past_retention(files, l, kNow), (std::vector<size_t>{1}));  // the locked one stays
}

TEST(RetentionPolicy, MaxBytesDeletesOldestFirstUntilUnder) {
  const std::vector<RetentionCandidate> files = {
      {kNow - 10, 100, false}, {kNow - 40, 100, false}, {kNow - 30, 100, false}, {kNow - 20, 100, false}};
  RetentionLimits l;
  l.max_bytes = 250;
  EXPECT_EQ(files_past_retention(files, l, kNow), (std::vector<size_t>{1, 2}));
}

TEST(RetentionPolicy, LockedFilesCountButStay) {
  const std::vector<RetentionCandidate> files = {
      {kNow - 40, 500, true}, {kNow - 30, 100, false}, {kNow - 20, 100, false}};
  RetentionLimits l;
  l.max_bytes = 400;  // the locked 500 alone is over: every other file goes, the locked one stays
  EXPECT_EQ(files_past_retention(files, l, kNow), (std::vector<size_t>{1, 2}));
}

TEST(RetentionPolicy, EitherLimit) {
  const std::vector<RetentionCandidate> files = {
      {kNow - 3 * kDay, 100, false}, {kNow - 10, 100, false}, {kNow - 5, 100, false}};
  RetentionLimits l;
  l.max_age = hours(48);
  l.max_bytes = 150;
  EXPECT_EQ(files_past_retention(files, l, kNow), (std::vector<size_t>{0, 1}));
}

}  // namespace
}  // namespace rill::record
