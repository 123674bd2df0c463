#include "core/sweep/sweep_values.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "core/base/error.h"

namespace replisim::core {
namespace {

std::string trimmed(const std::string& text) {
  const size_t first = text.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

bool all_digits(const std::string& text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
}

long long to_integer(const std::string& flag, const std::string& digits, const std::string& item) {
  errno = 0;
  const long long value = std::strtoll(digits.c_str(), nullptr, 10);
  if (errno == ERANGE || value > 1000000000LL) {
    throw InputError("", flag, "\"" + item + "\": a range's ends must be at most 1000000000");
  }
  return value;
}

// "A..B" or "A..BxF" when `item` has that shape: appends its values and returns true.
bool expand_range(const std::string& flag, const std::string& item, std::vector<std::string>& out) {
  const size_t dots = item.find("..");
  if (dots == std::string::npos) return false;
  const std::string from = trimmed(item.substr(0, dots));
  std::string until = trimmed(item.substr(dots + 2));
  std::string factor_text = "1";
  const size_t x = until.find('x');
  if (x != std::string::npos) {
    factor_text = trimmed(until.substr(x + 1));
    until = trimmed(until.substr(0, x));
  }
  const std::string shape =
      "expected a range of integers FROM..UNTIL (every integer) or FROM..UNTILxF (FROM, then "
      "multiplied by F while at most UNTIL), got \"" +
      item + "\"";
  if (!all_digits(from) || !all_digits(until) || !all_digits(factor_text)) {
    throw InputError("", flag, shape);
  }
  const long long a = to_integer(flag, from, item);
  const long long b = to_integer(flag, until, item);
  const long long factor = to_integer(flag, factor_text, item);
  if (b < a) throw InputError("", flag, "the range \"" + item + "\" is empty (FROM > UNTIL)");
  if (x != std::string::npos && factor < 2) {
    throw InputError("", flag, "\"" + item + "\": the factor after x must be at least 2");
  }
  if (x != std::string::npos && a == 0) {
    throw InputError("", flag, "\"" + item + "\": a doubling range cannot start at 0");
  }
  for (long long v = a; v <= b; v = x == std::string::npos ? v + 1 : v * factor) {
    if (out.size() >= kMaxSweepValues) {
      throw InputError(
          "", flag,
          "\"" + item + "\" gives more than " + std::to_string(kMaxSweepValues) + " values");
    }
    out.push_back(std::to_string(v));
  }
  return true;
}

}  // namespace

std::vector<std::string> expand_sweep_values(const std::string& flag, const std::string& text) {
  std::vector<std::string> values;
  if (trimmed(text).empty()) throw InputError("", flag, "no values given");
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = trimmed(text.substr(start, comma - start));
    if (item.empty()) {
      throw InputError("", flag, "an empty value in \"" + text + "\" (values: 1,2,4 or 1..64x2)");
    }
    if (!expand_range(flag, item, values)) values.push_back(item);
    if (values.size() > kMaxSweepValues) {
      throw InputError("", flag, "more than " + std::to_string(kMaxSweepValues) + " values");
    }
    start = comma + 1;
  }
  for (size_t i = 0; i < values.size(); ++i) {
    if (std::find(values.begin(), values.begin() + long(i), values[i]) !=
        values.begin() + long(i)) {
      throw InputError("", flag, "the value " + values[i] + " is given twice");
    }
  }
  return values;
}

}  // namespace replisim::core
