// Worker-link notes (protocol/worker_link_note.h): WATCHING 0|1 from the asking worker.
#include "rill/protocol/worker_link_note.h"

#include <gtest/gtest.h>

#include "rill/protocol/error.h"

namespace rill::protocol {
namespace {

TEST(WorkerLinkNote, FormatsAndParsesBothStates) {
  EXPECT_EQ(format_link_watching(true), "WATCHING 1\n");
  EXPECT_EQ(format_link_watching(false), "WATCHING 0\n");
  for (bool w : {true, false}) {
    std::string line = format_link_watching(w);
    line.pop_back();
    EXPECT_EQ(parse_link_watching(line), w);
  }
  EXPECT_FALSE(parse_link_watching("WATCHING 0\r"));
}

TEST(WorkerLinkNote, AnythingElseIsRefusedWithWhatWasExpected) {
  for (std::string_view bad : {"", "WATCHING", "WATCHING 2", "WATCHING  1", "watching 1", "WATCHING 1 ", "PLAY live/a",
                               "WATCHING 10"}) {
    try {
      parse_link_watching(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const ProtocolError& e) {
      EXPECT_NE(std::string(e.what()).find("expected WATCHING 0|1"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(parse_link_watching(std::string(600, 'W')), ProtocolError);
  try {
    parse_link_watching(std::string("\x01\xff", 2));
  } catch (const ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find("'?" "?'"), std::string::npos) << e.what();  // bytes shown safely
  }
}

}  // namespace
}  // namespace rill::protocol
