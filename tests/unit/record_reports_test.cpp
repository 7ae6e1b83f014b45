// The on_record_done form (server/record_reports.h): nginx-rtmp's fields and Rill's, escaped.
#include "rill/server/record_reports.h"

#include <gtest/gtest.h>

namespace rill::server {
namespace {

TEST(RecordReports, FormCarriesTheNoteOfTheClosedFile) {
  record::RecordFile file("/rec/live/cam 1.mp4");
  record::RecordCloseNote note;
  note.app = "live";
  note.name = "cam";
  note.started = 1'764'888'600;  // 2025-12-04T22:50:00Z
  note.duration_ms = 10'040;
  note.reason = "failed: /rec/live/cam 1.mp4: write: No space left on device";
  file.set_note(note);
  EXPECT_EQ(record_done_form(file),
            "call=record_done&app=live&name=cam&path=%2Frec%2Flive%2Fcam%201.mp4&start=2025-12-04T22%3A50%3A00Z"
            "&duration=10.040&bytes=0&reason=failed%3A%20%2Frec%2Flive%2Fcam%201.mp4%3A%20write%3A%20No%20space%"
            "20left%20on%20device");
}

}  // namespace
}  // namespace rill::server
