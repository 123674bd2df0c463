#include "core/base/error.h"

namespace replisim::core {
namespace {

std::string join_error(const std::string& file, const std::string& json_path,
                       const std::string& message) {
  std::string out;
  if (!file.empty()) out += file + ": ";
  if (!json_path.empty()) out += json_path + ": ";
  out += message;
  // The contract is one line: fold any newline a message may carry.
  for (char& c : out) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return out;
}

}  // namespace

InputError::InputError(std::string file, std::string json_path, std::string message)
    : std::runtime_error(join_error(file, json_path, message)),
      file_(std::move(file)),
      json_path_(std::move(json_path)),
      message_(std::move(message)) {}

OutputError::OutputError(std::string file, std::string reason)
    : std::runtime_error(join_error(
          "", "", "cannot write " + (file.empty() ? "an output" : file) + ": " + reason)),
      file_(std::move(file)),
      reason_(std::move(reason)) {}

void fail_invariant(const char* condition, const char* file, int line, const std::string& message) {
  throw InternalError(std::string("internal error: ") + message + " (" + condition + " at " + file +
                      ":" + std::to_string(line) + ")");
}

}  // namespace replisim::core
