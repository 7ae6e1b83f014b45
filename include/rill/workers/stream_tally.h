#pragma once
// StreamTally: what one worker did for each stream since it last published, as the deltas it adds
// to the shared StreamTotals (stream_totals.h). A worker counts its own part: bytes sent to its
// players of the stream (those gone included, HLS responses too), frames dropped for them, and
// where it owns the stream its publisher's bytes in and its HLS segments.
//
// The worker does it in rounds (once a second and before each statistics answer): it tells the
// tally each playing session's totals and each local stream's counters, ends the round, then
// publishes the pending deltas.
//  - A player session is followed by its id: what it sent since it was last seen counts for the
//    stream it was seen playing, and when it is gone, what it sent after that too (so a session
//    that stops playing before it closes is counted exactly once).
//  - A stream's own counters (bytes in, malformed frames dropped, HLS segments) are running
//    totals of an object that may be replaced (a stream released and created again): a total
//    below the last one counts from zero; a counter absent from a round is forgotten and counts
//    from zero when it comes back.
// Deltas that could not be published (a cell busy) wait for the next round; those of a stream
// without a live owner are dropped (nobody reports it). Memory: one entry per stream with a
// counter or pending deltas, one per live player session.
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>

#include "rill/workers/stream_totals.h"

namespace rill::workers {

class StreamTally {
 public:
  using Values = StreamTotals::Values;
  // A local stream's own counters.
  enum Source : size_t {
    StreamBytesIn,   // bytes in (counted only where this worker owns the stream)
    StreamDrops,     // malformed frames dropped
    StreamSegments,  // HLS segments produced
    kSources,
  };

  // A player session `id` of `key`, with its running totals (each round it plays).
  void player(uint64_t id, const std::string& key, uint64_t bytes_out, uint64_t dropped);
  // The session is gone with these last totals; `key` counts them if the session was never seen.
  void player_gone(uint64_t id, const std::string& key, uint64_t bytes_out, uint64_t dropped);
  // A delta counted by the caller (HLS bytes sent).
  void add(const std::string& key, StreamTotals::Field f, uint64_t delta);
  // A stream's counter as it is now. `counts` false: remembered, its growth not counted (a
  // relayed copy's bytes in, which are the owner's publisher's).
  void observe(const std::string& key, Source s, uint64_t total, bool counts = true);
  // Turns the counters' growth into pending deltas; forgets the counters not observed in this
  // round, and the streams with no counter and nothing pending.
  void end_round();
  // Offers each stream's pending deltas to `publish`: true when taken (added, or nowhere to add
  // them), false to keep them for the next round.
  void publish(const std::function<bool(const std::string& key, const Values& deltas)>& publish);

  Values pending(const std::string& key) const;  // for tests
  size_t streams() const { return streams_.size(); }
  size_t players() const { return players_.size(); }

 private:
  struct Counter {
    uint64_t last = 0, now = 0;
    bool known = false, seen = false, counts = true;
  };
  struct Entry {
    std::array<Counter, kSources> counters{};
    Values pending{};
  };
  struct Player {
    std::string key;
    uint64_t bytes_out = 0, dropped = 0;
  };
  void count(Player& p, uint64_t bytes_out, uint64_t dropped);

  std::unordered_map<std::string, Entry> streams_;
  std::unordered_map<uint64_t, Player> players_;
};

}  // namespace rill::workers
