#include "rill/workers/stream_tally.h"

#include <algorithm>

namespace rill::workers {

namespace {

constexpr StreamTotals::Field kFieldOf[StreamTally::kSources] = {
    StreamTotals::BytesIn, StreamTotals::DroppedFrames, StreamTotals::HlsSegments};

bool none(const StreamTally::Values& v) {
  return std::all_of(v.begin(), v.end(), [](uint64_t x) { return x == 0; });
}

// A session's totals never go down; one that did is not counted backwards.
uint64_t growth(uint64_t now, uint64_t before) { return now > before ? now - before : 0; }

}  // namespace

void StreamTally::count(Player& p, uint64_t bytes_out, uint64_t dropped) {
  Values& pending = streams_[p.key].pending;
  pending[StreamTotals::BytesOut] += growth(bytes_out, p.bytes_out);
  pending[StreamTotals::DroppedFrames] += growth(dropped, p.dropped);
  p.bytes_out = std::max(p.bytes_out, bytes_out);
  p.dropped = std::max(p.dropped, dropped);
}

void StreamTally::player(uint64_t id, const std::string& key, uint64_t bytes_out, uint64_t dropped) {
  auto [it, added] = players_.try_emplace(id);
  Player& p = it->second;
  // A new session, or one that plays another stream now: what it sent since counts for this one.
  if (added || p.key != key) p.key = key;
  count(p, bytes_out, dropped);
}

void StreamTally::player_gone(uint64_t id, const std::string& key, uint64_t bytes_out, uint64_t dropped) {
  auto it = players_.find(id);
  if (it != players_.end()) {
    count(it->second, bytes_out, dropped);
    players_.erase(it);
  } else if (!key.empty()) {
    Player p{key, 0, 0};  // gone before any round saw it
    count(p, bytes_out, dropped);
  }
}

void StreamTally::add(const std::string& key, StreamTotals::Field f, uint64_t delta) {
  if (delta) streams_[key].pending[f] += delta;
}

void StreamTally::observe(const std::string& key, Source s, uint64_t total, bool counts) {
  Counter& c = streams_[key].counters[s];
  c.now = total;
  c.seen = true;
  c.counts = counts;
}

void StreamTally::end_round() {
  for (auto it = streams_.begin(); it != streams_.end();) {
    Entry& e = it->second;
    bool any_known = false;
    for (size_t s = 0; s < kSources; ++s) {
      Counter& c = e.counters[s];
      if (!c.seen) {
        c.known = false;  // absent: it counts from zero when it comes back
        continue;
      }
      // Below the last total: the object was replaced, and the new one started from zero.
      const uint64_t grew = c.known && c.now >= c.last ? c.now - c.last : c.now;
      if (c.counts) e.pending[kFieldOf[s]] += grew;
      c.last = c.now;
      c.known = true;
      c.seen = false;
      any_known = true;
    }
    if (!any_known && none(e.pending)) {
      it = streams_.erase(it);
    } else {
      ++it;
    }
  }
}

void StreamTally::publish(const std::function<bool(const std::string&, const Values&)>& publish) {
  for (auto& [key, e] : streams_) {
    if (!none(e.pending) && publish(key, e.pending)) e.pending.fill(0);
  }
}

StreamTally::Values StreamTally::pending(const std::string& key) const {
  auto it = streams_.find(key);
  return it == streams_.end() ? Values{} : it->second.pending;
}

}  // namespace rill::workers
