#include "core/base/units.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <utility>
#include <vector>

namespace replisim::core {
namespace {

struct Prefix {
  const char* symbol;
  double factor;
};

// Binary prefixes first so "Ki" is not read as "K" + "i".
const std::vector<Prefix>& prefixes() {
  static const std::vector<Prefix> kPrefixes = {{"Ki", 1024.0},
                                                {"Mi", 1048576.0},
                                                {"Gi", 1073741824.0},
                                                {"Ti", 1099511627776.0},
                                                {"Pi", 1125899906842624.0},
                                                {"k", 1e3},
                                                {"M", 1e6},
                                                {"G", 1e9},
                                                {"T", 1e12},
                                                {"P", 1e15},
                                                {"", 1.0}};
  return kPrefixes;
}

struct UnitSymbol {
  const char* symbol;
  double factor;  // multiplies the prefixed number into the SI base unit
  bool takes_prefix;
  bool binary_prefixes;  // Ki Mi ... make sense for bytes and bits, not for FLOP
};

std::vector<UnitSymbol> units_for(Dimension dimension) {
  switch (dimension) {
    case Dimension::kBandwidth:
      return {{"bps", 1.0 / 8.0, true, true}, {"Bps", 1.0, true, true}};
    case Dimension::kTime:
      // "us", the micro sign U+00B5 and the Greek mu U+03BC.
      return {{"s", 1.0, false, false},          {"ms", 1e-3, false, false},
              {"us", 1e-6, false, false},        {"\xC2\xB5s", 1e-6, false, false},
              {"\xCE\xBCs", 1e-6, false, false}, {"ns", 1e-9, false, false}};
    case Dimension::kFlop:
      return {{"FLOP", 1.0, true, false}};
    case Dimension::kFlopRate:
      return {{"FLOPS", 1.0, true, false}};
    case Dimension::kBytes:
      return {{"B", 1.0, true, true}};
  }
  return {};
}

const char* accepted_units(Dimension dimension) {
  switch (dimension) {
    case Dimension::kBandwidth:
      return "bps (bits/s) or Bps (bytes/s) with an optional k M G T or Ki Mi Gi Ti prefix";
    case Dimension::kTime:
      return "s, ms, us or ns";
    case Dimension::kFlop:
      return "FLOP with an optional k M G T P prefix";
    case Dimension::kFlopRate:
      return "FLOPS with an optional k M G T P prefix";
    case Dimension::kBytes:
      return "B with an optional k M G T or Ki Mi Gi Ti prefix";
  }
  return "";
}

// Returns the factor for `unit_text` (prefix + symbol), or NaN when it is not a valid unit.
double unit_factor(const std::string& unit_text, Dimension dimension) {
  for (const UnitSymbol& unit : units_for(dimension)) {
    const std::string symbol = unit.symbol;
    if (unit_text.size() < symbol.size()) continue;
    if (unit_text.compare(unit_text.size() - symbol.size(), symbol.size(), symbol) != 0) continue;
    const std::string prefix = unit_text.substr(0, unit_text.size() - symbol.size());
    if (prefix.empty()) return unit.factor;
    if (!unit.takes_prefix) continue;
    for (const Prefix& p : prefixes()) {
      const bool binary = p.symbol[0] != '\0' && p.symbol[1] == 'i';
      if (binary && !unit.binary_prefixes) continue;
      if (prefix == p.symbol) return p.factor * unit.factor;
    }
  }
  return std::nan("");
}

}  // namespace

const char* quantity_example(Dimension dimension) {
  switch (dimension) {
    case Dimension::kBandwidth:
      return "\"10 Gbps\"";
    case Dimension::kTime:
      return "\"50 us\"";
    case Dimension::kFlop:
      return "\"4.1 GFLOP\"";
    case Dimension::kFlopRate:
      return "\"14 TFLOPS\"";
    case Dimension::kBytes:
      return "\"95 MiB\"";
  }
  return "";
}

double parse_quantity(const std::string& text, Dimension dimension) {
  const std::string expected = std::string("expected a quantity such as ") +
                               quantity_example(dimension) +
                               " (units: " + accepted_units(dimension) + ")";
  if (text.find('\0') != std::string::npos) {
    throw UnitError(expected + ", got a string containing a NUL character");
  }
  const char* begin = text.c_str();
  char* end = nullptr;
  // strtod accepts "inf", "nan" and hex floats; the finiteness and digit checks reject them.
  errno = 0;
  const double number = std::strtod(begin, &end);
  if (end == begin || !std::isfinite(number) || text.find_first_of("xXpP") < size_t(end - begin)) {
    throw UnitError(expected + ", got \"" + text + "\"");
  }
  std::string unit_text(end);
  const size_t first = unit_text.find_first_not_of(" \t");
  unit_text = first == std::string::npos ? "" : unit_text.substr(first);
  if (unit_text.empty()) {
    throw UnitError(expected + ", got \"" + text + "\" with no unit");
  }
  const double factor = unit_factor(unit_text, dimension);
  if (std::isnan(factor)) {
    throw UnitError(expected + ", got unknown unit \"" + unit_text + "\" in \"" + text + "\"");
  }
  // ERANGE: the digits overflow or underflow a double ("1e-400" would read as 0).
  const bool digits_out_of_range = errno == ERANGE;
  const double value = number * factor;
  // Out of a double's normal range once in base units (a non-zero amount that would read as 0).
  if (digits_out_of_range || !std::isfinite(value) || (number != 0 && !std::isnormal(value))) {
    throw UnitError("\"" + text + "\" is out of range");
  }
  return value;
}

namespace {

struct Scale {
  double factor;
  const char* suffix;
};

const std::vector<Scale>& scales_for(Dimension dimension) {
  static const std::vector<Scale> kBandwidth = {
      {1e12, " TB/s"}, {1e9, " GB/s"}, {1e6, " MB/s"}, {1e3, " kB/s"}, {1, " B/s"}};
  static const std::vector<Scale> kTime = {{1, " s"}, {1e-3, " ms"}, {1e-6, " us"}, {1e-9, " ns"}};
  static const std::vector<Scale> kFlop = {{1e15, " PFLOP"}, {1e12, " TFLOP"}, {1e9, " GFLOP"},
                                           {1e6, " MFLOP"},  {1e3, " kFLOP"},  {1, " FLOP"}};
  static const std::vector<Scale> kFlopRate = {{1e15, " PFLOPS"}, {1e12, " TFLOPS"},
                                               {1e9, " GFLOPS"},  {1e6, " MFLOPS"},
                                               {1e3, " kFLOPS"},  {1, " FLOPS"}};
  static const std::vector<Scale> kBytes = {
      {1e12, " TB"}, {1e9, " GB"}, {1e6, " MB"}, {1e3, " kB"}, {1, " B"}};
  switch (dimension) {
    case Dimension::kBandwidth:
      return kBandwidth;
    case Dimension::kTime:
      return kTime;
    case Dimension::kFlop:
      return kFlop;
    case Dimension::kFlopRate:
      return kFlopRate;
    case Dimension::kBytes:
      return kBytes;
  }
  return kBytes;
}

}  // namespace

std::string format_quantity(double value, Dimension dimension, int significant) {
  const std::vector<Scale>& scales = scales_for(dimension);
  // Zero reads best in the base unit ("0 s", "0 B").
  Scale chosen = dimension == Dimension::kTime ? scales.front() : scales.back();
  for (const Scale& s : scales) {
    if (value != 0 && std::fabs(value) >= s.factor) {
      chosen = s;
      break;
    }
  }
  if (value != 0 && std::fabs(value) < scales.back().factor) chosen = scales.back();
  std::ostringstream out;
  out.precision(significant);
  out << value / chosen.factor << chosen.suffix;
  return out.str();
}

}  // namespace replisim::core
