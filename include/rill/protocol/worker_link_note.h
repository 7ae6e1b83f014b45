#pragma once
// Notes from the asking worker to the owner on a PLAY link (docs/workers.md). After its request
// line, the asking side of a PLAY link may send notes, one ASCII line each ('\n'-terminated, at
// most kLinkMaxRequestLine bytes, a trailing '\r' tolerated):
//
//   WATCHING 1    a player of the asking worker watches the stream (the state a link starts in)
//   WATCHING 0    none does now; the link stays open for its idle grace
//
// Why: the owner counts the link as a viewer of the stream. An edge pull lingers `idle_close`
// after its last viewer; without the note the far side's link would count for its own idle grace
// (5 s by default) after the far side's last player left, and the two waits would add up.
// An owner of an older build ignores the notes (it reads nothing after the request line).
#include <string>
#include <string_view>

namespace rill::protocol {

std::string format_link_watching(bool watching);  // with the trailing '\n'
// Parses one note line (without the '\n'). Throws ProtocolError naming what is wrong.
bool parse_link_watching(std::string_view line);

}  // namespace rill::protocol
