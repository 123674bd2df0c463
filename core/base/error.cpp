#include "core/base/error.h"

#include <algorithm>
#include <cstdint>

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

// A whole line past kMaxLineBytes keeps its start and end (whole UTF-8 characters) and says how
// much was cut: the last bound, whatever the quotes inside a value did to shorten_quoted.
std::string shorten_line(const std::string& line) {
  if (line.size() <= kMaxLineBytes) return line;
  const size_t head = kMaxLineBytes * 3 / 4, tail_bytes = kMaxLineBytes / 4;
  size_t tail = line.size() - tail_bytes;
  while (tail < line.size() && (static_cast<unsigned char>(line[tail]) & 0xC0) == 0x80) ++tail;
  const std::string start = utf8_prefix(line, head);
  return start + " ... (" + std::to_string(tail - start.size()) + " bytes cut) ... " +
         line.substr(tail);
}

std::string join_error(const std::string& file, const std::string& json_path,
                       const std::string& message) {
  std::string out;
  if (!file.empty()) out += file + ": ";
  if (!json_path.empty()) out += shorten_path(json_path) + ": ";
  out += shorten_quoted(message);
  return shorten_line(printable_line(out));
}

// The length of the UTF-8 sequence at text[at] and its code point; 0 when it is not a valid one
// (a stray continuation byte, a cut or overlong sequence, a surrogate, past U+10FFFF).
size_t utf8_at(const std::string& text, size_t at, uint32_t* code_point) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char first = byte(at);
  size_t length = 0;
  uint32_t value = 0, least = 0;
  if (first < 0x80) {
    *code_point = first;
    return 1;
  } else if ((first & 0xE0) == 0xC0) {
    length = 2, value = first & 0x1F, least = 0x80;
  } else if ((first & 0xF0) == 0xE0) {
    length = 3, value = first & 0x0F, least = 0x800;
  } else if ((first & 0xF8) == 0xF0) {
    length = 4, value = first & 0x07, least = 0x10000;
  } else {
    return 0;
  }
  if (at + length > text.size()) return 0;
  for (size_t i = 1; i < length; ++i) {
    if ((byte(at + i) & 0xC0) != 0x80) return 0;
    value = (value << 6) | (byte(at + i) & 0x3F);
  }
  if (value < least || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) return 0;
  *code_point = value;
  return length;
}

// Characters a terminal acts on rather than shows: C1 controls (U+0080..U+009F: CSI among them)
// and the bidirectional overrides and isolates (U+202A..U+202E, U+2066..U+2069), which reorder
// what follows them (Unicode's UAX #9).
bool acts_on_terminal(uint32_t c) {
  return (c >= 0x80 && c <= 0x9F) || (c >= 0x202A && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069);
}

}  // namespace

std::string printable_line(const std::string& text) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  const auto hex = [&](uint32_t value, int digits_count) {
    for (int shift = 4 * (digits_count - 1); shift >= 0; shift -= 4) {
      out += digits[(value >> shift) & 15];
    }
  };
  for (size_t at = 0; at < text.size();) {
    const auto byte = static_cast<unsigned char>(text[at]);
    uint32_t c = 0;
    const size_t length = utf8_at(text, at, &c);
    if (byte == '\n' || byte == '\r' || byte == '\t') {
      out += ' ';
    } else if (length == 0 || byte < 0x20 || byte == 0x7F) {
      out += "\\x";  // a control character, or a byte that is not UTF-8
      hex(byte, 2);
    } else if (acts_on_terminal(c)) {
      out += "\\u";
      hex(c, 4);
    } else {
      out.append(text, at, length);
    }
    at += length == 0 ? 1 : length;
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
