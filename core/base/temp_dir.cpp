#include "core/base/temp_dir.h"

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/base/error.h"

namespace replisim::core {

std::string make_temp_dir(const std::string& prefix) {
  const char* tmp = std::getenv("TMPDIR");
  const std::string pattern =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/" + prefix + "-XXXXXX";
  std::string path = pattern;  // mkdtemp fills in the X's (on failure too)
  if (::mkdtemp(path.data()) == nullptr) {
    throw OutputError(pattern,
                      std::string("cannot create a scratch directory: ") + std::strerror(errno));
  }
  return path;
}

ScopedTempDir::~ScopedTempDir() {
  if (keep_) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace replisim::core
