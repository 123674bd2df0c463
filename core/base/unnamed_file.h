// A file written without a name in its target's directory (Linux's O_TMPFILE) and given its name
// only once it is complete, so that a process killed by any signal, SIGKILL included, leaves no
// partial file and no temporary behind. Where the file system has no unnamed files, a named
// temporary ".replisim-XXXXXX" beside the target stands in (removed unless published; a SIGKILL
// leaves that one). Used by every output of the command line (OutputFiles) and by the real
// backend's node traces.
#pragma once

#include <ext/stdio_filebuf.h>

#include <functional>
#include <memory>
#include <ostream>
#include <string>

namespace replisim::core {

// The directory part of `path` ("." when it has none, "/" for a file at the root).
std::string directory_of(const std::string& path);

class UnnamedFile {
 public:
  // Makes the file in `target`'s directory, with mode 0666 under the process's umask.
  // `cancelled` (may be empty) is polled on each write to the buffer: once it says true, writes
  // fail (the stream goes bad) so that a long output stops early. Throws OutputError(target, why)
  // when no file can be made there.
  explicit UnnamedFile(std::string target, std::function<bool()> cancelled = {});
  // The same, but the file is made under the name `stand_in` (created new: OutputError when
  // something is there) rather than unnamed, so that another process can read it while it is
  // written, and what was written survives a crash (a launcher reads a killed task's trace part
  // from it); publish() renames it to `target`, the destructor removes it unless published.
  UnnamedFile(std::string target, const std::string& stand_in);
  ~UnnamedFile();  // removes the stand-in unless published; the unnamed file vanishes by itself
  UnnamedFile(const UnnamedFile&) = delete;
  UnnamedFile& operator=(const UnnamedFile&) = delete;

  std::ostream& stream() { return *stream_; }
  // Flushes the stream and, with `durable`, the file to the disk (fsync). Returns false with
  // errno set when either fails (a full disk: ENOSPC, a file-size limit: EFBIG): the errno of the
  // first write that failed, however long before (the stream stays bad from that write on).
  bool finish(bool durable);
  // Gives the finished file its target's name. `replace`: an existing file there may be replaced
  // (the user's --force); otherwise an existing one is left alone and this returns false with
  // errno EEXIST. Returns false with errno set on any other failure.
  bool publish(bool replace);

 private:
  class Buffer;
  // A name beside the target for a link that a rename then moves into place; "" with errno set.
  std::string link_beside_target();

  std::string target_;
  std::string named_;  // the stand-in's path where there is no unnamed file
  int fd_ = -1;
  bool published_ = false;
  std::unique_ptr<Buffer> buffer_;
  std::unique_ptr<std::ostream> stream_;
};

}  // namespace replisim::core
