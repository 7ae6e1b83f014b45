#include "rill/workers/hls_fetcher.h"

#include <errno.h>
#include <event2/event.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "rill/workers/worker_endpoint.h"
#include "rill/protocol/error.h"

namespace rill::workers {

namespace {
constexpr std::chrono::milliseconds kSweepInterval{5000};

std::string cache_key(pid_t pid, const std::string& key, uint64_t sequence) {
  return std::to_string(pid) + " " + key + " " + std::to_string(sequence);
}
}  // namespace

struct HlsFetcher::Fetch {
  HlsFetcher* self = nullptr;
  std::string id;    // fetches_ key
  std::string what;  // for logs: "live/cam 12.ts from worker 1 (pid 42)"
  std::string key;   // app/name
  protocol::HlsObjectName object;
  pid_t owner_pid = 0;
  int fd = -1;
  event* read_ev = nullptr;
  event* timer = nullptr;
  std::unique_ptr<protocol::LinkFrameReader> reader;
  std::optional<HlsFetchResult> result;
  std::vector<std::pair<Ticket, Callback>> waiters;

  ~Fetch() {
    if (read_ev) event_free(read_ev);
    if (timer) event_free(timer);
    if (fd >= 0) ::close(fd);
  }
  void fail(std::string why) {
    if (result) return;
    result = HlsFetchResult{};
    result->status = HlsFetchResult::Status::Unavailable;
    result->reason = std::move(why);
  }
};

HlsFetcher::HlsFetcher(net::ServerContext& ctx, HlsFetcherOptions opts)
    : ctx_(ctx), opts_(std::move(opts)), cache_(opts_.cache_bytes) {}

HlsFetcher::~HlsFetcher() {
  if (sweep_timer_) ctx_.timers->cancel(*sweep_timer_);
  fetches_.clear();
}

const HlsSegmentCache::Entry* HlsFetcher::cached(const OwnershipTable::Owner& owner, const std::string& key,
                                                 uint64_t sequence) {
  const HlsSegmentCache::Entry* e = cache_.find(cache_key(owner.pid, key, sequence), ctx_.timers->now_ms());
  if (e) ++cache_hits_;
  return e;
}

HlsFetcher::Ticket HlsFetcher::fetch(const OwnershipTable::Owner& owner, const std::string& app,
                                     const std::string& name, const protocol::HlsObjectName& object, Callback cb) {
  const std::string key = app + "/" + name;
  const std::string obj = protocol::format_hls_object(object);
  const std::string id = std::to_string(owner.pid) + " " + key + " " + obj;
  const Ticket t = next_ticket_++;
  tickets_[t] = id;
  auto it = fetches_.find(id);
  if (it != fetches_.end()) {  // one request in flight: wait for its answer
    it->second->waiters.emplace_back(t, std::move(cb));
    return t;
  }
  auto f = std::make_unique<Fetch>();
  f->self = this;
  f->id = id;
  f->key = key;
  f->object = object;
  f->owner_pid = owner.pid;
  f->what = key + " " + obj + " from worker " + std::to_string(owner.slot) + " (pid " + std::to_string(owner.pid) + ")";
  f->waiters.emplace_back(t, std::move(cb));
  Fetch& ref = *f;
  fetches_.emplace(id, std::move(f));
  protocol::LinkRequest req;
  req.kind = protocol::LinkRequest::Kind::Hls;
  req.app = app;
  req.name = name;
  req.object = obj;
  start(ref, owner, protocol::format_link_request(req));
  return t;
}

void HlsFetcher::start(Fetch& f, const OwnershipTable::Owner& owner, const std::string& line) {
  ++(f.object.playlist ? playlist_requests_ : segment_requests_);
  f.timer = event_new(ctx_.base, -1, 0, &HlsFetcher::on_timer, &f);
  protocol::LinkReaderLimits lim;
  lim.max_body = opts_.max_object;
  f.reader = std::make_unique<protocol::LinkFrameReader>(
      [&f](protocol::LinkFrame&& fr) {
        if (f.result) return;  // nothing is expected after the answer
        HlsFetchResult r;
        if (fr.header.type == protocol::LinkFrameType::HlsObject) {
          r.status = HlsFetchResult::Status::Ok;
          r.body = std::move(fr.body);
          r.max_age_s = fr.header.timestamp;
        } else if (fr.header.type == protocol::LinkFrameType::Error) {
          r.status = HlsFetchResult::Status::NotFound;
          r.reason = std::string(fr.body ? fr.body->view() : std::string_view());
        } else {
          r.status = HlsFetchResult::Status::Unavailable;
          r.reason = std::string("unexpected ") + protocol::link_frame_type_name(fr.header.type) + " frame";
        }
        f.result = std::move(r);
      },
      lim);

  const std::string path = worker_socket_path(opts_.runtime_dir, owner.slot);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::string error;
  if (path.size() >= sizeof sa.sun_path) {
    error = "socket path too long";
  } else {
    std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
    f.fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    // The request line is far below the socket buffer: it is written whole or not at all.
    if (f.fd < 0 || ::connect(f.fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 ||
        ::send(f.fd, line.data(), line.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(line.size())) {
      error = std::string("connect to ") + path + ": " + std::strerror(errno);
    }
  }
  long ms = static_cast<long>(opts_.timeout.count());
  if (!error.empty()) {
    f.fail(error);
    ms = 0;  // answer the waiters from the event loop, not from inside fetch()
  } else {
    f.read_ev = event_new(ctx_.base, f.fd, EV_READ | EV_PERSIST, &HlsFetcher::on_read, &f);
    event_add(f.read_ev, nullptr);
  }
  timeval tv{ms / 1000, (ms % 1000) * 1000};
  event_add(f.timer, &tv);
}

void HlsFetcher::on_read(int, short, void* arg) {
  auto& f = *static_cast<Fetch*>(arg);
  uint8_t buf[65536];
  for (int i = 0; i < 64 && !f.result; ++i) {  // at most 4 MiB per event
    ssize_t n = ::read(f.fd, buf, sizeof buf);
    if (n > 0) {
      try {
        f.reader->feed({buf, static_cast<size_t>(n)});
      } catch (const protocol::ProtocolError& e) {
        f.fail(std::string("malformed answer: ") + e.what());
      }
      continue;
    }
    if (n == 0) {
      f.fail("the owner closed the connection without an answer");
      break;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return;
    f.fail(std::string("read: ") + std::strerror(errno));
  }
  if (f.result) f.self->complete(f);  // destroys f
}

void HlsFetcher::on_timer(int, short, void* arg) {
  auto& f = *static_cast<Fetch*>(arg);
  f.fail("no answer within " + std::to_string(f.self->opts_.timeout.count()) + " ms");
  f.self->complete(f);  // destroys f
}

void HlsFetcher::complete(Fetch& f) {
  auto it = fetches_.find(f.id);
  if (it == fetches_.end() || it->second.get() != &f) return;
  std::unique_ptr<Fetch> owned = std::move(it->second);
  fetches_.erase(it);
  const HlsFetchResult& r = *f.result;
  if (r.status == HlsFetchResult::Status::Unavailable) {
    ctx_.log->warn("hls: fetching {} failed: {}", f.what, r.reason);
  } else if (r.status == HlsFetchResult::Status::NotFound) {
    ctx_.log->debug("hls: {}: not found: {}", f.what, r.reason);
  } else if (!f.object.playlist) {
    if (cache_.put(cache_key(f.owner_pid, f.key, f.object.sequence), r.body, r.max_age_s, ctx_.timers->now_ms())) {
      schedule_sweep();
    }
  }
  auto waiters = std::move(f.waiters);
  for (auto& [t, cb] : waiters) tickets_.erase(t);
  for (auto& [t, cb] : waiters) cb(r);
  // `owned` goes now; its events are freed from inside their own callback, which libevent allows.
}

void HlsFetcher::cancel(Ticket t) {
  auto tk = tickets_.find(t);
  if (tk == tickets_.end()) return;
  auto it = fetches_.find(tk->second);
  tickets_.erase(tk);
  if (it == fetches_.end()) return;
  auto& w = it->second->waiters;
  std::erase_if(w, [t](const auto& p) { return p.first == t; });
  // The request itself goes on: its answer still fills the cache for the next client.
}

void HlsFetcher::schedule_sweep() {
  if (sweep_timer_) return;
  sweep_timer_ = ctx_.timers->schedule(kSweepInterval, [this] {
    sweep_timer_.reset();
    cache_.prune(ctx_.timers->now_ms());
    if (cache_.size() > 0) schedule_sweep();
  });
}

}  // namespace rill::workers
