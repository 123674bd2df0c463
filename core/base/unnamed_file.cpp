#include "core/base/unnamed_file.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/base/error.h"

namespace replisim::core {
std::string directory_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

namespace {

mode_t current_umask() {
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return mask;
}

// Links the open file `fd` (unnamed) at `path`; false with errno set (EEXIST: something is there).
bool link_open_file(int fd, const std::string& path) {
  const std::string self = "/proc/self/fd/" + std::to_string(fd);
  if (::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, path.c_str(), AT_SYMLINK_FOLLOW) == 0) return true;
  if (errno != ENOENT) return false;
  // No /proc: linking by descriptor needs CAP_DAC_READ_SEARCH (root has it).
  return ::linkat(fd, "", AT_FDCWD, path.c_str(), AT_EMPTY_PATH) == 0;
}

}  // namespace

// The file's buffer: refuses further writes once `cancelled` says so (the stream then fails).
class UnnamedFile::Buffer : public __gnu_cxx::stdio_filebuf<char> {
 public:
  Buffer(int fd, std::function<bool()> cancelled)
      : __gnu_cxx::stdio_filebuf<char>(fd, std::ios::out | std::ios::binary, size_t(1) << 16),
        cancelled_(std::move(cancelled)) {}

 protected:
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    if (stopped()) return 0;
    errno = 0;
    const std::streamsize written = __gnu_cxx::stdio_filebuf<char>::xsputn(s, n);
    if (written < n) note_failure();
    return written;
  }
  int_type overflow(int_type c) override {
    if (stopped()) return traits_type::eof();
    errno = 0;
    const int_type result = __gnu_cxx::stdio_filebuf<char>::overflow(c);
    if (traits_type::eq_int_type(result, traits_type::eof())) note_failure();
    return result;
  }
  int sync() override {
    errno = 0;
    const int result = __gnu_cxx::stdio_filebuf<char>::sync();
    if (result != 0) note_failure();
    return result;
  }

 public:
  // The errno of the first write that failed (ENOSPC, EFBIG...), 0 while none has: the stream
  // goes bad at that write and later flushes do not reach the file to say why again.
  int first_failure() const { return first_failure_; }

 private:
  bool stopped() const { return cancelled_ && cancelled_(); }
  void note_failure() {
    if (first_failure_ == 0) first_failure_ = errno != 0 ? errno : EIO;
  }
  std::function<bool()> cancelled_;
  int first_failure_ = 0;
};

UnnamedFile::UnnamedFile(std::string target, std::function<bool()> cancelled)
    : target_(std::move(target)) {
  const std::string dir = directory_of(target_);
  fd_ = ::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
  if (fd_ < 0) {
    std::string pattern = dir + "/.replisim-XXXXXX";
    fd_ = ::mkostemp(pattern.data(), O_CLOEXEC);
    if (fd_ < 0) {
      throw OutputError(
          target_, std::string("cannot create a file in ") + dir + ": " + std::strerror(errno));
    }
    named_ = pattern;
    // mkostemp creates 0600: give the file the usual mode under the caller's umask.
    ::fchmod(fd_, 0666 & ~current_umask());
  }
  buffer_ = std::make_unique<Buffer>(fd_, std::move(cancelled));  // owns fd_ from here
  stream_ = std::make_unique<std::ostream>(buffer_.get());
}

UnnamedFile::UnnamedFile(std::string target, const std::string& stand_in)
    : target_(std::move(target)) {
  fd_ = ::open(stand_in.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd_ < 0) {
    throw OutputError(target_,
                      "cannot create " + stand_in + ": " + std::string(std::strerror(errno)));
  }
  named_ = stand_in;
  buffer_ = std::make_unique<Buffer>(fd_, std::function<bool()>());  // owns fd_ from here
  stream_ = std::make_unique<std::ostream>(buffer_.get());
}

UnnamedFile::~UnnamedFile() {
  stream_.reset();
  buffer_.reset();  // closes fd_
  if (!published_ && !named_.empty()) ::unlink(named_.c_str());
}

bool UnnamedFile::finish(bool durable) {
  stream_->flush();
  if (!*stream_) {
    errno = buffer_->first_failure() != 0 ? buffer_->first_failure() : EIO;
    return false;
  }
  return !durable || ::fsync(fd_) == 0;
}

std::string UnnamedFile::link_beside_target() {
  for (int attempt = 0; attempt < 16; ++attempt) {
    // A fresh name (mkstemp's), freed at once for the link: another process taking it in between
    // makes the link fail with EEXIST, and the next attempt takes another.
    std::string name = directory_of(target_) + "/.replisim-XXXXXX";
    const int probe = ::mkstemp(name.data());
    if (probe < 0) return "";
    ::close(probe);
    ::unlink(name.c_str());
    if (link_open_file(fd_, name)) return name;
    if (errno != EEXIST) return "";
  }
  errno = EEXIST;
  return "";
}

bool UnnamedFile::publish(bool replace) {
  if (published_) return true;
  if (named_.empty()) {
    if (!replace) {
      published_ = link_open_file(fd_, target_);
      return published_;
    }
    // Linked beside the target under a temporary name, then renamed over it (rename replaces
    // atomically; linkat never does).
    const std::string beside = link_beside_target();
    if (beside.empty()) return false;
    if (std::rename(beside.c_str(), target_.c_str()) != 0) {
      const int why = errno;
      ::unlink(beside.c_str());
      errno = why;
      return false;
    }
    published_ = true;
    return true;
  }
  if (replace) {
    if (std::rename(named_.c_str(), target_.c_str()) != 0) return false;
  } else {
    if (::link(named_.c_str(), target_.c_str()) != 0) return false;  // EEXIST: left alone
    ::unlink(named_.c_str());
  }
  published_ = true;
  return true;
}

}  // namespace replisim::core
