// Output files that are never half-written and never replace a user's file unasked. Every output
// of a run is checked before the run starts; at the end all are written to unnamed files in their
// targets' directories (core/base/unnamed_file.h) and named only when every one of them was
// written completely.
#pragma once

#include <functional>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

namespace replisim::core {

class OutputFiles {
 public:
  // `overwrite`: whether existing regular files may be replaced (the user's --force).
  // `standard_output`: where the output named "-" goes (not owned; must outlive write_all).
  explicit OutputFiles(bool overwrite, std::ostream* standard_output = nullptr)
      : overwrite_(overwrite), standard_output_(standard_output) {}

  // Marks an input (e.g. the scenario) that no output may replace, whatever its spelling
  // (./s.json, a symlink or a hard link to it).
  // `name` is how errors call it (default: the path itself).
  void protect(const std::string& input_path, const std::string& name = "");

  // Registers an output given by `flag` (for messages). The name "-" is standard output (at most
  // one output, and only when the constructor was given a stream). Throws InputError(path, ...)
  // at once when the name is empty; a second output names "-"; the file exists and overwrite is
  // off; it exists and is not a regular file (a directory, device or FIFO); it is the same file as
  // a protected input or another output; its directory is missing, not a directory, or not writable
  // (probed by creating and removing a temporary file there).
  void add(const std::string& flag, const std::string& path,
           std::function<void(std::ostream&)> writer);

  bool empty() const { return outputs_.empty() && !to_standard_output_; }
  // Polled while the outputs are written (between writes to each stream): true stops write_all,
  // which then removes its temporaries, touches no target and throws RunCancelled.
  void set_cancel(std::function<bool()> cancelled) { cancelled_ = std::move(cancelled); }
  // Whether an output goes to standard output (then the caller prints its text elsewhere).
  bool writes_standard_output() const { return bool(to_standard_output_); }

  // Writes every registered output to an unnamed file, then the standard-output one, then puts
  // the files in place (so a standard output that fails leaves every target as it was). On any
  // failure before that no target is touched and nothing is left behind; throws InputError if a
  // target appeared meanwhile (and overwrite is off), OutputError (naming the file and the
  // reason: disk full, file too large, ...) when one cannot be written. A writer signals a
  // failed stream by throwing OutputError or leaving the stream failed.
  void write_all();

 private:
  struct Output {
    std::string flag;
    std::string path;
    std::function<void(std::ostream&)> writer;
  };
  bool same_file_as_registered(const std::string& path, std::string* which) const;

  bool overwrite_;
  std::ostream* standard_output_;
  std::function<void(std::ostream&)> to_standard_output_;
  std::function<bool()> cancelled_;
  std::vector<std::pair<std::string, std::string>> protected_;  // path, name
  std::vector<Output> outputs_;
};

}  // namespace replisim::core
