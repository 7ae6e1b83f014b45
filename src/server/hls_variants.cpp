#include "rill/server/hls_variants.h"

#include <memory>

#include "rill/http/http_server.h"
#include "rill/media/hls_store.h"
#include "rill/media/rendition_group.h"
#include "rill/protocol/hls_multivariant.h"
#include "rill/server/hls_handler.h"
#include "rill/workers/hls_fetcher.h"
#include "rill/workers/stream_locator.h"

namespace rill::server {

media::HlsAnswer multivariant_answer(const media::StreamKey& group, const std::vector<std::string>& entries) {
  media::HlsAnswer a;
  std::vector<std::string> listed;
  for (const std::string& e : entries) {
    if (!e.empty()) listed.push_back(e);
  }
  if (listed.empty()) {
    a.head.status = 404;
    a.reason = "stream " + group.str() + " has no rendition with HLS segments";
    return a;
  }
  // Renditions come and go and their measured bandwidth changes: not cached.
  a.head.cache = protocol::HlsCachePolicy::no_cache();
  a.body = SharedBuffer::copy_of(std::string_view(protocol::assemble_multivariant_playlist({}, listed)));
  return a;
}

// One multivariant request waiting for the entries other workers hold, owned by its exchange.
struct HlsVariants::Gather final : HttpHeldState {
  Gather(HlsVariants& v, HlsHandler& h, HlsRequest r, size_t n)
      : variants(v), hls(h), req(std::move(r)), entries(n) {}
  void abandoned(const HttpExchange&) override {
    for (auto t : tickets) variants.fetcher_->cancel(t);
  }
  void arrived(size_t i, const workers::HlsFetchResult& r) {
    if (r.answered && r.answer.ok()) {
      entries[i].assign(reinterpret_cast<const char*>(r.answer.body.data()), r.answer.body.size());
    }
    if (--pending > 0) return;
    tickets.clear();
    if (HttpExchange* e = ex.get()) hls.reply(*e, req, multivariant_answer(req.key, entries));
  }

  HlsVariants& variants;
  HlsHandler& hls;
  HttpHeld ex;
  HlsRequest req;
  std::vector<std::string> entries;
  std::vector<workers::HlsFetcher::Ticket> tickets;
  size_t pending = 0;
};

bool HlsVariants::held_elsewhere(const std::string& key) const {
  return locator_ && fetcher_ && locator_->hls_source(key).has_value();
}

bool HlsVariants::serve(HlsHandler& hls, HttpExchange& ex, const HlsRequest& req,
                        const media::HlsStreamState* local) {
  if (!req.app || !req.app->hls.enabled || !req.object.playlist) return false;
  const std::vector<std::string>& suffixes = req.app->hls.variant_suffixes;
  if (suffixes.empty() || media::is_rendition(req.key.name, suffixes)) return false;
  // NAME published itself: NAME.m3u8 stays its media playlist (docs/abr.md).
  if (local || held_elsewhere(req.key.str())) return false;
  const media::HlsStore& store = core_.streams->hls();

  const std::vector<std::string> names = media::rendition_names(req.key.name, suffixes);
  std::vector<std::string> entries(names.size());
  std::vector<size_t> remote;
  for (size_t i = 0; i < names.size(); ++i) {
    const media::StreamKey key{req.key.app, names[i]};
    if (held_elsewhere(key.str())) {
      remote.push_back(i);
    } else if (const media::HlsStreamState* st = store.find(key)) {
      entries[i] = st->variant_entry();
    }
  }
  if (remote.empty()) {
    hls.reply(ex, req, multivariant_answer(req.key, entries));
    return true;
  }
  auto owned = std::make_unique<Gather>(*this, hls, req, names.size());
  Gather* g = owned.get();
  g->entries = std::move(entries);
  g->pending = remote.size();
  g->ex = ex.hold(std::move(owned));
  protocol::HlsObjectName object;
  object.playlist = false;
  object.variant = true;
  for (size_t i : remote) {
    const std::string key = req.key.app + "/" + names[i];
    const auto owner = locator_->hls_source(key);
    if (!owner) {  // gone since it was asked a moment ago
      g->arrived(i, workers::HlsFetchResult{});
      continue;
    }
    g->tickets.push_back(fetcher_->fetch(*owner, req.key.app, names[i], object,
                                         [g, i](const workers::HlsFetchResult& r) { g->arrived(i, r); }));
  }
  return true;
}

}  // namespace rill::server
