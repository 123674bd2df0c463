#include "core/base/error.h"

#include <algorithm>

namespace replisim::core {
namespace {

// The first `bytes` bytes of `text`, back to a UTF-8 character's start.
std::string utf8_prefix(const std::string& text, size_t bytes) {
  while (bytes > 0 && bytes < text.size() &&
         (static_cast<unsigned char>(text[bytes]) & 0xC0) == 0x80)
    --bytes;
  return text.substr(0, bytes);
}

std::string shortened(const std::string& part) {
  if (part.size() <= kMaxQuotedBytes) return part;
  return utf8_prefix(part, kMaxQuotedBytes) + "... (" + std::to_string(part.size()) + " bytes)";
}

// Quoted parts (between double quotes; \" does not end one) cut to kMaxQuotedBytes.
std::string shorten_quoted(const std::string& text) {
  std::string out;
  size_t at = 0;
  while (at < text.size()) {
    const size_t open = text.find('"', at);
    if (open == std::string::npos) break;
    size_t close = open + 1;
    while (close < text.size() && text[close] != '"') close += text[close] == '\\' ? 2 : 1;
    if (close >= text.size()) break;  // unbalanced: left as it is
    out +=
        text.substr(at, open + 1 - at) + shortened(text.substr(open + 1, close - open - 1)) + '"';
    at = close + 1;
  }
  return out + text.substr(std::min(at, text.size()));
}

// A JSON pointer's keys cut to kMaxQuotedBytes.
std::string shorten_path(const std::string& path) {
  std::string out;
  size_t at = 0;
  while (at <= path.size()) {
    size_t slash = path.find('/', at);
    if (slash == std::string::npos) slash = path.size();
    out += shortened(path.substr(at, slash - at));
    if (slash < path.size()) out += '/';
    at = slash + 1;
  }
  return out;
}

std::string join_error(const std::string& file, const std::string& json_path,
                       const std::string& message) {
  std::string out;
  if (!file.empty()) out += file + ": ";
  if (!json_path.empty()) out += shorten_path(json_path) + ": ";
  out += shorten_quoted(message);
  return printable_line(out);
}

}  // namespace

std::string printable_line(const std::string& text) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\n' || c == '\r' || c == '\t') {
      out += ' ';
    } else if (byte < 0x20 || byte == 0x7F) {
      out += "\\x";
      out += digits[byte >> 4];
      out += digits[byte & 15];
    } else {
      out += c;
    }
  }
  return out;
}

bool has_control_character(const std::string& text) {
  return std::any_of(text.begin(), text.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte < 0x20 || byte == 0x7F;
  });
}

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

namespace {
InvariantFailureHook invariant_failure_hook = nullptr;
}  // namespace

void set_invariant_failure_hook(InvariantFailureHook hook) {
  invariant_failure_hook = hook;
}

void fail_invariant(const char* condition, const char* file, int line, const std::string& message) {
  const std::string what = std::string("internal error: ") + message + " (" + condition + " at " +
                           file + ":" + std::to_string(line) + ")";
  if (invariant_failure_hook != nullptr) invariant_failure_hook(what);
  throw InternalError(what);
}

}  // namespace replisim::core
