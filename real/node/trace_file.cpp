#include "real/node/trace_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fcntl.h>
#include <unistd.h>

#include "core/base/error.h"

namespace replisim::real {

TraceFile::TraceFile(std::string target) : target_(std::move(target)) {
  const size_t slash = target_.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : target_.substr(0, slash + 1);
  fd_ = ::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    named_ = target_ + ".tmp-" + std::to_string(::getpid());
    fd_ = ::open(named_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) throw core::OutputError(named_, std::strerror(errno));
  }
  buffer_ = std::make_unique<__gnu_cxx::stdio_filebuf<char>>(fd_, std::ios::out | std::ios::binary,
                                                             size_t(1) << 16);
  stream_ = std::make_unique<std::ostream>(buffer_.get());
}

TraceFile::~TraceFile() {
  stream_.reset();
  buffer_.reset();  // closes fd_
  if (!published_ && !named_.empty()) std::remove(named_.c_str());
}

void TraceFile::publish() {
  stream_->flush();
  if (!*stream_ || ::fsync(fd_) != 0) {
    throw core::OutputError(target_,
                            std::string("could not write the trace: ") + std::strerror(errno));
  }
  if (named_.empty()) {
    // The unnamed file gets a temporary name beside the target, then the target's.
    named_ = target_ + ".tmp-" + std::to_string(::getpid());
    const std::string self = "/proc/self/fd/" + std::to_string(fd_);
    std::remove(named_.c_str());
    if (::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, named_.c_str(), AT_SYMLINK_FOLLOW) != 0) {
      const std::string why = std::strerror(errno);
      named_.clear();
      throw core::OutputError(target_, why);
    }
  }
  if (std::rename(named_.c_str(), target_.c_str()) != 0) {
    throw core::OutputError(target_, std::strerror(errno));
  }
  published_ = true;
}

}  // namespace replisim::real
