#include "rill/record/close_out.h"

#include <fcntl.h>
#include <spdlog/logger.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "rill/protocol/amf0.h"
#include "rill/protocol/error.h"
#include "rill/protocol/flv_file_writer.h"
#include "rill/protocol/recording_index.h"

namespace rill::record {

namespace {

using protocol::FlvFileWriter;
using protocol::RecordingFormat;
using protocol::RecordingIndex;

std::string errno_text(const char* call) { return std::string(call) + ": " + std::strerror(errno); }

// The file's bytes, mapped read-only (the close-out holds the file's lock: no writer changes it).
struct MappedFile {
  const uint8_t* data = nullptr;
  size_t size = 0;
  MappedFile(int fd, size_t n) : size(n) {
    void* p = n > 0 ? ::mmap(nullptr, n, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
    if (p != MAP_FAILED) data = static_cast<const uint8_t*>(p);
  }
  ~MappedFile() {
    if (data) ::munmap(const_cast<uint8_t*>(data), size);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
};

// The onMetaData tag the recorder would have written at close: the file's tags replayed through
// FlvFileWriter, sized as the reserved room the file has (FlvFileWriter's room grows by one
// index entry, two AMF0 numbers, per keyframe of capacity: the capacity is found from the size).
std::optional<std::vector<uint8_t>> rebuilt_flv_metadata(std::span<const uint8_t> file,
                                                         const RecordingIndex& ix, std::string& why) {
  const uint64_t meta_at = ix.metadata_offset();
  protocol::FlvFileWriterOptions o;
  o.has_audio = (file[4] & 0x04) != 0;  // E.2 TypeFlagsAudio
  o.has_video = (file[4] & 0x01) != 0;  // TypeFlagsVideo
  try {
    protocol::Amf0Decoder d(file.subspan(meta_at + 11, ix.metadata_size() - 15));
    d.decode();  // "onMetaData"
    protocol::Amf0Value source = d.decode();
    if (source.has_properties()) o.source_metadata = protocol::Amf0Value::ecma_array(source.properties());
  } catch (const protocol::ProtocolError& e) {
    why = std::string("its onMetaData does not decode: ") + e.what();
    return std::nullopt;
  }
  auto tag_size = [&](size_t capacity) {
    o.keyframe_capacity = capacity;
    FlvFileWriter w(o);
    std::vector<uint8_t> out;
    w.begin(out);
    return out.size() - FlvFileWriter::kMetadataOffset;
  };
  constexpr size_t kEntryBytes = 18;  // two AMF0 numbers
  const size_t base = tag_size(2);
  if (ix.metadata_size() < base || (ix.metadata_size() - base) % kEntryBytes != 0 ||
      tag_size(2 + (ix.metadata_size() - base) / kEntryBytes) != ix.metadata_size()) {
    why = "its onMetaData is not the size a recorder's is";
    return std::nullopt;
  }
  FlvFileWriter w(o);  // o.keyframe_capacity: the one that matched
  std::vector<uint8_t> out;
  w.begin(out);
  // The tags read again, taken as they come (memory bounded whatever the file's length).
  RecordingIndex tags;
  constexpr size_t kPiece = 1 << 20;
  for (size_t at = 0; at < ix.complete_end(); at += kPiece) {
    tags.feed(file.subspan(at, std::min<size_t>(kPiece, ix.complete_end() - at)));
    for (const protocol::FlvTagEntry& t : tags.take_tags()) {
      if (t.offset == meta_at) continue;
      out.clear();
      w.write_tag(t.type, t.timestamp_ms, file.subspan(t.offset + 11, t.size - 15), t.keyframe, out);
    }
  }
  if (w.size() != ix.complete_end()) {
    why = "its tags do not replay to its size";
    return std::nullopt;
  }
  return w.final_metadata();
}

// What to do with an unlocked file that `ix` has read (parse_error: where it stopped, if early).
CloseOutResult fix(int fd, uint64_t size, const RecordingIndex& ix, const std::string& parse_error,
                   const std::string& path) {
  if (ix.format() == RecordingFormat::Unknown && size >= 8)
    return {CloseOutAction::NotARecording, parse_error};
  if (ix.stray_mdat()) return {CloseOutAction::NotARecording, "an MP4 that is not fragmented"};
  if (!ix.playable()) {
    if (::unlink(path.c_str()) != 0) return {CloseOutAction::Failed, errno_text("unlink")};
    return {CloseOutAction::Removed, "nothing playable in it (" + std::to_string(size) + " bytes)"};
  }
  std::string done;
  const uint64_t end = ix.complete_end();
  if (end < size) {
    if (::ftruncate(fd, static_cast<off_t>(end)) != 0)
      return {CloseOutAction::Failed, errno_text("ftruncate")};
    done = "cut from " + std::to_string(size) + " to " + std::to_string(end) + " bytes" +
           (parse_error.empty() ? "" : " (" + parse_error + ")");
  }
  const bool unclosed_flv = ix.format() == RecordingFormat::Flv && ix.metadata_size() > 0 &&
                            ix.metadata_offset() == FlvFileWriter::kMetadataOffset &&
                            ix.metadata_duration().value_or(0) == 0;
  if (unclosed_flv) {
    MappedFile map(fd, static_cast<size_t>(end));
    std::string why;
    std::optional<std::vector<uint8_t>> meta;
    if (map.data) meta = rebuilt_flv_metadata({map.data, map.size}, ix, why);
    if (!map.data) why = errno_text("mmap");
    if (meta) {
      if (::pwrite(fd, meta->data(), meta->size(), FlvFileWriter::kMetadataOffset) != ssize_t(meta->size()))
        return {CloseOutAction::Failed, errno_text("pwrite")};
      done += std::string(done.empty() ? "" : ", ") + "onMetaData rewritten (duration " +
              std::to_string(ix.duration_seconds()) + " s)";
    } else {
      done += std::string(done.empty() ? "" : ", ") + "onMetaData left as it is: " + why;
    }
  }
  if (done.empty()) return {CloseOutAction::Complete, ""};
  return {CloseOutAction::Fixed, done};
}

}  // namespace

CloseOutResult close_out_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return {CloseOutAction::Failed, errno_text("open")};
  // Held while the file is examined: a writer opening it meanwhile waits, and sees it removed.
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const bool busy = errno == EWOULDBLOCK;
    ::close(fd);
    return busy ? CloseOutResult{CloseOutAction::BeingWritten, ""}
                : CloseOutResult{CloseOutAction::Failed, "flock"};
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return {CloseOutAction::Failed, errno_text("fstat")};
  }
  const auto size = static_cast<uint64_t>(st.st_size);
  protocol::RecordingIndexLimits totals;
  totals.keep_entries = false;  // where it ends and what it holds: no list (an FLV's tags are read again)
  RecordingIndex ix(totals);
  const std::string err = read_recording_index(fd, size, ix, true);
  const bool closed_flv = ix.metadata_duration().value_or(0) > 0;
  CloseOutResult r = closed_flv ? CloseOutResult{} : fix(fd, size, ix, err, path);
  if (r.action == CloseOutAction::Fixed) {
    // The mtime stays the time of the last write: the catalog's start is mtime minus duration.
    const struct timespec times[2] = {{0, UTIME_OMIT}, st.st_mtim};
    ::futimens(fd, times);
  }
  ::close(fd);
  return r;
}

void close_out_recordings(const std::vector<RecordingRoot>& roots, std::time_t modified_since,
                          spdlog::logger& log) {
  for (const RecordingRoot& root : roots) {
    std::string error;
    const std::vector<RecordingFileInfo> files = list_recording_files(root.dir, error);
    if (!error.empty()) log.warn("record {}: close-out: {}", root.app, error);
    for (const RecordingFileInfo& f : files) {
      if (f.locked || f.mtime < modified_since) continue;
      const CloseOutResult r = close_out_file(f.path);
      switch (r.action) {
        case CloseOutAction::Fixed:
          log.info("record {}: closed out leftover {}: {}", root.app, f.path, r.detail);
          break;
        case CloseOutAction::Removed:
          log.info("record {}: removed leftover {}: {}", root.app, f.path, r.detail);
          break;
        case CloseOutAction::Failed:
          log.warn("record {}: cannot close out {}: {}", root.app, f.path, r.detail);
          break;
        default:
          break;
      }
    }
  }
}

}  // namespace rill::record
