// Error types shared by every replisim library: bad input (with file and JSON path) and broken
// invariants. Library code throws; only main() maps errors to exit codes (conventions.md).
#pragma once

#include <stdexcept>
#include <string>

namespace replisim::core {

// `text` as one line a terminal shows as written, whatever the input put in it (issue 37: a
// scenario's ESC or BEL went to the terminal, a 1 MB value filled it): newlines, carriage returns
// and tabs become spaces, other control characters (NUL, ESC, BEL, DEL) and bytes that are not
// UTF-8 "\xNN", C1 controls and bidirectional overrides "\uNNNN". In an error's line (InputError,
// OutputError) a double-quoted part longer than kMaxQuotedBytes, and a JSON path's key as long,
// keep their first kMaxQuotedBytes bytes (whole UTF-8 characters) and say how long they were, and
// a whole line past kMaxLineBytes keeps its start and end and says how much was cut.
inline constexpr size_t kMaxQuotedBytes = 200;
inline constexpr size_t kMaxLineBytes = 1000;
std::string printable_line(const std::string& text);
// Whether `text` has a control character (below 0x20, or DEL), NUL included: names refuse them.
bool has_control_character(const std::string& text);

// Bad input from the user: a scenario, plan, trace, flag or network frame.
// `file` is the path as given by the user ("" when there is none, e.g. a flag);
// `json_path` is a JSON pointer such as "/training/ps/2" ("" when not applicable).
// what() is one line: "<file>: <json_path>: <message>" with empty parts left out, made safe for a
// terminal (printable_line); file(), json_path() and message() are as given.
class InputError : public std::runtime_error {
 public:
  InputError(std::string file, std::string json_path, std::string message);

  const std::string& file() const { return file_; }
  const std::string& json_path() const { return json_path_; }
  const std::string& message() const { return message_; }

 private:
  std::string file_;
  std::string json_path_;
  std::string message_;
};

// Something outside the program kept an output from being written: the disk is full, a file is
// too large for a limit, a permission is missing. `file` is the output's path ("" while a writer
// that does not know it reports the failure; OutputFiles adds it); `reason` says why (strerror).
// what(): "cannot write <file>: <reason>". Maps to exit code 1 with that one line.
class OutputError : public std::runtime_error {
 public:
  OutputError(std::string file, std::string reason);
  const std::string& file() const { return file_; }
  const std::string& reason() const { return reason_; }

 private:
  std::string file_;
  std::string reason_;
};

// The user asked to stop (Ctrl-C, a cancel button): a run (RunOptions::cancelled) or the writing
// of its outputs (OutputFiles::write_all) stopped, leaving nothing of it behind.
class RunCancelled : public std::runtime_error {
 public:
  RunCancelled() : std::runtime_error("cancelled") {}
  // `detail`: what the user should know instead of "no output was written" (one line).
  explicit RunCancelled(std::string detail)
      : std::runtime_error("cancelled"), detail_(std::move(detail)) {}
  const std::string& detail() const { return detail_; }

 private:
  std::string detail_;
};

// A broken invariant inside replisim (a bug, not bad input). Maps to exit code 1.
class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& message) : std::logic_error(message) {}
};

[[noreturn]] void fail_invariant(const char* condition, const char* file, int line,
                                 const std::string& message);

// Called by fail_invariant with the InternalError's text before it is thrown, when set: a process
// whose exceptions cannot all reach a handler (the simulation child: an exception leaving a
// SimGrid actor aborts the process) reports the failure there, and may end itself. Not
// thread-safe: set it once, before anything can fail.
using InvariantFailureHook = void (*)(const std::string& what);
void set_invariant_failure_hook(InvariantFailureHook hook);

}  // namespace replisim::core

// Checks an invariant; throws InternalError naming the condition, source location and message.
#define REPLISIM_ASSERT(condition, message)                                                        \
  do {                                                                                             \
    if (!(condition)) ::replisim::core::fail_invariant(#condition, __FILE__, __LINE__, (message)); \
  } while (false)
