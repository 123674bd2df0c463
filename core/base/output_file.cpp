#include "core/base/output_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <ostream>

#include <sys/stat.h>
#include <unistd.h>

#include "core/base/error.h"
#include "core/base/unnamed_file.h"

namespace replisim::core {
namespace {

namespace fs = std::filesystem;

// Two names for one file: the same inode when both exist, else the same canonical path.
bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {
  }, sb{};
  const bool ea = ::stat(a.c_str(), &sa) == 0, eb = ::stat(b.c_str(), &sb) == 0;
  if (ea && eb) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  if (ea != eb) return false;
  std::error_code ignored;
  return fs::weakly_canonical(fs::absolute(a), ignored) ==
         fs::weakly_canonical(fs::absolute(b), ignored);
}

// A new temporary file in `dir` (short name: the target's own name may be near NAME_MAX).
// Returns its path, or "" with errno set.
std::string make_temporary(const std::string& dir) {
  std::string pattern = dir + "/.replisim-XXXXXX";
  const int fd = ::mkstemp(pattern.data());
  if (fd < 0) return "";
  // mkstemp creates 0600; give the file the usual mode under the caller's umask.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd, 0666 & ~mask);
  ::close(fd);
  return pattern;
}

}  // namespace

void OutputFiles::protect(const std::string& input_path, const std::string& name) {
  protected_.emplace_back(input_path, name.empty() ? input_path : name);
}

bool OutputFiles::same_file_as_registered(const std::string& path, std::string* which) const {
  for (const auto& [p, name] : protected_) {
    if (same_file(path, p)) {
      *which = "the input " + name;
      return true;
    }
  }
  for (const Output& o : outputs_) {
    if (same_file(path, o.path)) {
      *which = "the " + o.flag + " output";
      return true;
    }
  }
  return false;
}

void OutputFiles::add(const std::string& flag, const std::string& path,
                      std::function<void(std::ostream&)> writer) {
  if (path.empty()) throw InputError("", flag, "needs a file name, got an empty one");
  if (path == "-" && standard_output_ != nullptr) {
    if (to_standard_output_) {
      throw InputError("", flag, "only one output can go to standard output (\"-\")");
    }
    to_standard_output_ = std::move(writer);
    return;
  }
  std::string which;
  if (same_file_as_registered(path, &which)) {
    throw InputError(path, "", "is the same file as " + which);
  }
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0) {
    if (S_ISDIR(info.st_mode)) throw InputError(path, "", "is a directory, not a file");
    if (!S_ISREG(info.st_mode)) {
      throw InputError(path, "", "exists and is not a regular file; refusing to replace it");
    }
    if (!overwrite_) {
      throw InputError(path, "", "already exists; refusing to overwrite it (pass --force)");
    }
  }
  const std::string dir = directory_of(path);
  if (::stat(dir.c_str(), &info) != 0) {
    throw InputError(path, "", "its directory " + dir + " does not exist");
  }
  if (!S_ISDIR(info.st_mode)) throw InputError(path, "", dir + " is not a directory");
  const std::string probe = make_temporary(dir);
  if (probe.empty()) {
    throw InputError(path, "", "cannot write in " + dir + ": " + std::strerror(errno));
  }
  std::remove(probe.c_str());
  outputs_.push_back({flag, path, std::move(writer)});
}

namespace {

// Why the last write failed, as strerror says it ("No space left on device").
std::string last_error() {
  return errno != 0 ? std::strerror(errno) : "the write failed";
}

// Runs `writer` into `out`; any failure of the stream becomes an OutputError naming `name`, or
// RunCancelled when `cancelled` says so.
void write_output(const std::function<void(std::ostream&)>& writer, std::ostream& out,
                  const std::string& name, const std::function<bool()>& cancelled) {
  errno = 0;
  try {
    writer(out);
    out.flush();
  } catch (const OutputError&) {
    if (cancelled && cancelled()) throw RunCancelled();
    throw OutputError(name, last_error());
  }
  if (cancelled && cancelled()) throw RunCancelled();
  if (!out) throw OutputError(name, last_error());
}

}  // namespace

void OutputFiles::write_all() {
  // Unnamed files until every output is written (core/base/unnamed_file.h): a failure, a cancel
  // or a SIGKILL before the renames leaves nothing behind.
  std::vector<std::unique_ptr<UnnamedFile>> files;
  for (const Output& o : outputs_) {
    if (cancelled_ && cancelled_()) throw RunCancelled();
    files.push_back(std::make_unique<UnnamedFile>(o.path, cancelled_));
    write_output(o.writer, files.back()->stream(), o.path, cancelled_);
    if (!files.back()->finish(false)) throw OutputError(o.path, last_error());
  }
  if (!overwrite_) {
    for (const Output& o : outputs_) {
      struct stat info {};
      if (::stat(o.path.c_str(), &info) == 0) {
        throw InputError(o.path, "", "appeared during the run; refusing to overwrite it");
      }
    }
  }
  // Standard output before the files are put in place: if it fails, no target has changed. Once
  // it is written, a cancel no longer undoes the outputs.
  if (cancelled_ && cancelled_()) throw RunCancelled();
  if (to_standard_output_) {
    write_output(to_standard_output_, *standard_output_, "standard output", nullptr);
  }
  for (size_t i = 0; i < outputs_.size(); ++i) {
    if (files[i]->publish(overwrite_)) continue;
    if (errno == EEXIST) {
      throw InputError(outputs_[i].path, "", "appeared during the run; refusing to overwrite it");
    }
    throw OutputError(outputs_[i].path,
                      std::string("cannot put it in place: ") + std::strerror(errno));
  }
}

}  // namespace replisim::core
