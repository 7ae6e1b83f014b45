#include "rill/workers/worker_stats.h"

#include <errno.h>
#include <event2/event.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "rill/workers/hls_fetcher.h"
#include "rill/workers/worker_endpoint.h"
#include "rill/workers/worker_link_session.h"
#include "rill/workers/stream_locator.h"

namespace rill::workers {

namespace {
constexpr size_t kMaxAnswer = 4 * 1024 * 1024;
}

nlohmann::json worker_stats(net::ServerContext& ctx) {
  using nlohmann::json;
  StreamLocator* loc = ctx.locator;
  // Relay senders (connections from other workers pulling a stream of ours), per stream.
  std::map<std::string, int> senders_per_key;
  json senders = json::array();
  size_t relay_connections = 0;
  ctx.sessions->for_each([&](net::Session& s) {
    auto* r = dynamic_cast<WorkerLinkSession*>(&s);
    if (!r) return;
    ++relay_connections;
    if (!r->is_sender()) return;
    ++senders_per_key[r->stream_key()];
    senders.push_back({{"key", r->stream_key()},
                       {"frames", r->frames_out()},
                       {"bytes", r->bytes_out()},
                       {"queued_bytes", r->queued_bytes()},
                       {"dropped", r->frames_dropped()}});
  });

  json streams = json::array();
  ctx.streams->for_each([&](media::Stream& s) {
    const std::string key = s.key_text();
    const WorkerLink* link = loc ? loc->link(key) : nullptr;
    const int out = senders_per_key.count(key) ? senders_per_key[key] : 0;
    const size_t subs = s.subscriber_count();
    streams.push_back({{"key", key},
                       {"publisher", s.has_publisher()},
                       {"owner", loc && loc->owns(key)},
                       {"relayed", link != nullptr && link->attached()},
                       {"subscribers", subs},
                       {"players", subs >= static_cast<size_t>(out) ? subs - static_cast<size_t>(out) : 0},
                       {"relay_out", out},
                       {"relay_in", link != nullptr ? 1 : 0},
                       {"frames_in", s.info().frames_in},
                       {"bytes_in", s.info().bytes_in}});
  });

  json links = json::array();
  if (loc) {
    loc->for_each_link([&](const WorkerLink& l) {
      links.push_back({{"key", l.key()},
                       {"state", l.state_name()},
                       {"attached", l.attached()},
                       {"owner_slot", l.owner_slot()},
                       {"owner_pid", l.owner_pid()},
                       {"subscribers", l.local_subscribers()},
                       {"connects", l.connects()},
                       {"frames", l.frames_in()},
                       {"bytes", l.bytes_in()}});
    });
  }
  json out = {{"slot", ctx.worker_id},
              {"pid", static_cast<int>(::getpid())},
              {"sessions", ctx.sessions->size() - relay_connections},
              {"relay_connections", relay_connections},
              {"streams", streams},
              {"relay_links", links},
              {"relay_senders", senders}};
  if (const HlsFetcher* f = ctx.hls_fetcher) {
    out["hls_fetch"] = {{"playlist_requests", f->playlist_requests()},
                        {"segment_requests", f->segment_requests()},
                        {"cache_hits", f->cache_hits()},
                        {"in_flight", f->in_flight()},
                        {"cache_entries", f->cache().size()},
                        {"cache_bytes", f->cache().bytes()},
                        {"cache_max_bytes", f->cache().max_bytes()}};
  }
  if (loc) {
    out["generation"] = loc->options().generation;
    out["workers"] = loc->options().workers;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------

struct StatsGatherer::Peer {
  StatsGatherer* owner = nullptr;
  int slot = 0;
  int fd = -1;
  event* ev = nullptr;
  std::string data;
  bool done = false;
  ~Peer() {
    if (ev) event_free(ev);
    if (fd >= 0) ::close(fd);
  }
};

StatsGatherer::StatsGatherer(net::ServerContext& ctx, Done done, std::chrono::milliseconds timeout)
    : ctx_(ctx), done_(std::move(done)), timeout_(timeout) {}

StatsGatherer::~StatsGatherer() {
  if (timer_) event_free(timer_);
}

void StatsGatherer::start() {
  local_ = worker_stats(ctx_);
  timer_ = event_new(ctx_.base, -1, 0, &StatsGatherer::on_timeout, this);
  const StreamLocator* loc = ctx_.locator;
  const int workers = loc ? static_cast<int>(loc->options().workers) : 1;
  const std::string dir = loc ? loc->options().runtime_dir : ctx_.config->runtime_dir;
  for (int slot = 0; slot < workers; ++slot) {
    if (slot == ctx_.worker_id) continue;
    auto p = std::make_unique<Peer>();
    p->owner = this;
    p->slot = slot;
    const std::string path = worker_socket_path(dir, slot);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::string error;
    if (path.size() < sizeof sa.sun_path) {
      std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
      p->fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      if (p->fd < 0 || ::connect(p->fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 ||
          ::send(p->fd, "STATS\n", 6, MSG_NOSIGNAL) != 6) {
        error = std::strerror(errno);
      }
    } else {
      error = "socket path too long";
    }
    if (!error.empty()) {
      errors_.push_back("worker " + std::to_string(slot) + ": " + error);
      p->done = true;
    } else {
      p->ev = event_new(ctx_.base, p->fd, EV_READ | EV_PERSIST, &StatsGatherer::on_peer_read, p.get());
      event_add(p->ev, nullptr);
    }
    peers_.push_back(std::move(p));
  }
  const bool pending = std::any_of(peers_.begin(), peers_.end(), [](const auto& p) { return !p->done; });
  const long ms = pending ? static_cast<long>(timeout_.count()) : 0;
  timeval tv{ms / 1000, (ms % 1000) * 1000};
  event_add(timer_, &tv);
}

void StatsGatherer::on_peer_read(int, short, void* arg) {
  auto* p = static_cast<Peer*>(arg);
  char buf[16384];
  for (;;) {
    ssize_t n = ::read(p->fd, buf, sizeof buf);
    if (n > 0) {
      p->data.append(buf, static_cast<size_t>(n));
      if (p->data.size() > kMaxAnswer) return p->owner->peer_done(*p, "answer too large");
      continue;
    }
    if (n == 0) return p->owner->peer_done(*p, "");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return;
    return p->owner->peer_done(*p, std::strerror(errno));
  }
}

void StatsGatherer::peer_done(Peer& p, const std::string& error) {
  if (p.done) return;
  p.done = true;
  if (p.ev) {
    event_free(p.ev);
    p.ev = nullptr;
  }
  if (!error.empty()) errors_.push_back("worker " + std::to_string(p.slot) + ": " + error);
  maybe_finish();
}

void StatsGatherer::maybe_finish() {
  for (const auto& p : peers_) {
    if (!p->done) return;
  }
  finish();
}

void StatsGatherer::on_timeout(int, short, void* arg) {
  auto* self = static_cast<StatsGatherer*>(arg);
  for (auto& p : self->peers_) {
    if (p->done) continue;
    p->done = true;
    self->errors_.push_back("worker " + std::to_string(p->slot) + ": no answer in time");
  }
  self->finish();  // may destroy self
}

void StatsGatherer::finish() {
  if (finished_) return;
  finished_ = true;
  if (timer_) event_del(timer_);
  nlohmann::json workers = nlohmann::json::array();
  workers.push_back(local_);
  for (const auto& p : peers_) {
    if (p->data.empty()) continue;
    nlohmann::json j = nlohmann::json::parse(p->data, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) {
      errors_.push_back("worker " + std::to_string(p->slot) + ": answer is not JSON");
      continue;
    }
    workers.push_back(std::move(j));
  }
  std::sort(workers.begin(), workers.end(),
            [](const nlohmann::json& a, const nlohmann::json& b) { return a.value("slot", 0) < b.value("slot", 0); });
  nlohmann::json all = {{"workers", workers}, {"errors", errors_}};
  Done done = std::move(done_);
  done(std::move(all));  // may destroy *this
}

}  // namespace rill::workers
