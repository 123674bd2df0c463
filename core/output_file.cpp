#include "core/output_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"

namespace replisim::core {
namespace {

std::string directory_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

void check_output_path(const std::string& path, bool overwrite) {
  if (path.empty()) throw InputError("", "", "an output file name is empty");
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0) {
    if (S_ISDIR(info.st_mode)) throw InputError(path, "", "is a directory, not a file");
    if (!overwrite) {
      throw InputError(path, "", "already exists; refusing to overwrite it (pass --force)");
    }
  }
  const std::string dir = directory_of(path);
  if (::stat(dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
    throw InputError(path, "", "its directory " + dir + " does not exist");
  }
}

void write_file_atomically(const std::string& path, bool overwrite,
                           const std::function<void(std::ostream&)>& write) {
  check_output_path(path, overwrite);
  const std::string dir = directory_of(path);
  const std::string base = path.substr(path.find_last_of('/') + 1);
  std::string pattern = dir + "/." + base + ".tmp.XXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  const int fd = ::mkstemp(name.data());
  if (fd < 0) {
    throw std::runtime_error("cannot create a temporary file in " + dir + ": " +
                             std::strerror(errno));
  }
  // mkstemp creates 0600; give the file the usual mode under the caller's umask.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd, 0666 & ~mask);
  ::close(fd);
  const std::string temporary(name.data());
  try {
    {
      std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
      if (!out) throw std::runtime_error("cannot open " + temporary);
      write(out);
      out.flush();
      if (!out) throw std::runtime_error("cannot write " + path);
    }
    if (!overwrite) check_output_path(path, false);  // created meanwhile by someone else?
    if (std::rename(temporary.c_str(), path.c_str()) != 0) {
      throw std::runtime_error("cannot rename " + temporary + " to " + path + ": " +
                               std::strerror(errno));
    }
  } catch (...) {
    std::remove(temporary.c_str());
    throw;
  }
}

}  // namespace replisim::core
