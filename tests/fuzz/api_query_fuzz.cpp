// Fuzz target: what the control plane reads from a request (api/api_views.h) and the stream
// summaries it shows (protocol/stream_summary.h).
// Invariants: no crash; a parsed query has at most 32 keys; paging either fails with a reason or
// gives a limit of 1..1000; page() never returns more than `limit` items nor claims a total other
// than the input's size; the summaries never throw, and a video summary names a codec.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "rill/api/api_views.h"
#include "rill/protocol/stream_summary.h"

namespace {
void check(bool ok) {
  if (!ok) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (const auto q = rill::api::parse_api_query(text)) {
    check(q->size() <= 32);
    std::string error;
    const rill::api::Paging p = rill::api::parse_paging(*q, error);
    if (error.empty()) {
      check(p.limit >= 1 && p.limit <= rill::api::kMaxPageLimit);
      nlohmann::json all = nlohmann::json::array();
      for (size_t i = 0; i < size % 50; ++i) all.push_back(i);
      const nlohmann::json pg = rill::api::page(all, p);
      check(pg["items"].size() <= p.limit);
      check(pg["total"].get<size_t>() == all.size());
    }
  }
  const std::span<const uint8_t> bytes(data, size);
  if (const auto v = rill::protocol::summarize_video_header(bytes)) check(!v->codec.empty());
  if (const auto a = rill::protocol::summarize_audio_header(bytes)) check(!a->codec.empty());
  return 0;
}
