// Private scratch directories under $TMPDIR (or /tmp): the seeds' children, a validation's
// checkpoints, calibration's runs and a real run's working files each get one of their own.
#pragma once

#include <string>

namespace replisim::core {

// Creates a new directory "<prefix>-XXXXXX" under $TMPDIR (/tmp when unset or empty) with
// mkdtemp(3) (mode 0700, a name no other process has) and returns its path. Throws OutputError
// naming the pattern and the system's reason when it cannot.
std::string make_temp_dir(const std::string& prefix);

// Owns a directory made by make_temp_dir: removed with everything in it when destroyed (errors
// ignored: a scratch directory left behind is harmless), unless keep() was called (a failed run
// keeps its logs for the user).
class ScopedTempDir {
 public:
  explicit ScopedTempDir(const std::string& prefix) : path_(make_temp_dir(prefix)) {}
  ~ScopedTempDir();
  ScopedTempDir(const ScopedTempDir&) = delete;
  ScopedTempDir& operator=(const ScopedTempDir&) = delete;

  const std::string& path() const { return path_; }
  void keep() { keep_ = true; }

 private:
  std::string path_;
  bool keep_ = false;
};

}  // namespace replisim::core
