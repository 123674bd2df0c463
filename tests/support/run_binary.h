// Runs the replisim executable in a child process and captures its exit code and output.
#pragma once

#include <string>
#include <vector>

namespace replisim::test {

struct BinaryResult {
  int exit_code = -1;  // -1 when killed by a signal
  std::string out;
  std::string err;
};

// Runs REPLISIM_BINARY with `args` (no shell), waiting at most `timeout_s` seconds; its standard
// input is empty, or `standard_input`.
BinaryResult run_replisim(const std::vector<std::string>& args, int timeout_s = 120);
BinaryResult run_replisim(const std::vector<std::string>& args, const std::string& standard_input,
                          int timeout_s = 120);

// A fresh temporary directory, removed with its content by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  // Writes `content` to `name` inside the directory and returns its path.
  std::string write(const std::string& name, const std::string& content) const;

 private:
  std::string path_;
};

std::string read_file(const std::string& path);
bool file_exists(const std::string& path);

}  // namespace replisim::test
