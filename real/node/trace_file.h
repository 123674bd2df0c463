// A node's trace file: written to an unnamed file in the target's directory (O_TMPFILE) and given
// its name only when the run ends well, so a node that dies by any signal, SIGKILL included,
// leaves no partial file. Where the file system has no unnamed files, a "<target>.tmp-<pid>"
// stands in (removed unless published; a SIGKILL leaves it).
#pragma once

#include <ext/stdio_filebuf.h>

#include <memory>
#include <ostream>
#include <string>

namespace replisim::real {

class TraceFile {
 public:
  // Throws core::OutputError naming the target's directory when no file can be made there.
  explicit TraceFile(std::string target);
  ~TraceFile();
  TraceFile(const TraceFile&) = delete;
  TraceFile& operator=(const TraceFile&) = delete;
  std::ostream& stream() { return *stream_; }
  // Flushes it and puts it at the target (replacing what is there: the caller asked --force).
  // Throws core::OutputError.
  void publish();

 private:
  std::string target_;
  std::string named_;  // the stand-in's path when there is no unnamed file
  int fd_ = -1;
  bool published_ = false;
  std::unique_ptr<__gnu_cxx::stdio_filebuf<char>> buffer_;
  std::unique_ptr<std::ostream> stream_;
};

}  // namespace replisim::real
