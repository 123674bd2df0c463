#include "core/base/units.h"

#include <string>

#include <gtest/gtest.h>

#include "core/base/error.h"

namespace replisim::core {
namespace {

TEST(Units, BitsAndBytesPerSecond) {
  EXPECT_DOUBLE_EQ(parse_quantity("10 Gbps", Dimension::kBandwidth), 1.25e9);
  EXPECT_DOUBLE_EQ(parse_quantity("1.25 GBps", Dimension::kBandwidth), 1.25e9);
  EXPECT_DOUBLE_EQ(parse_quantity("1 Mibps", Dimension::kBandwidth), 1048576.0 / 8);
  EXPECT_DOUBLE_EQ(parse_quantity("100kBps", Dimension::kBandwidth), 1e5);
}

TEST(Units, TimesFlopAndBytes) {
  EXPECT_DOUBLE_EQ(parse_quantity("50 us", Dimension::kTime), 50e-6);
  EXPECT_DOUBLE_EQ(parse_quantity("2 ms", Dimension::kTime), 2e-3);
  EXPECT_DOUBLE_EQ(parse_quantity("3 ns", Dimension::kTime), 3e-9);
  EXPECT_DOUBLE_EQ(parse_quantity("1.5 s", Dimension::kTime), 1.5);
  EXPECT_DOUBLE_EQ(parse_quantity("14 TFLOPS", Dimension::kFlopRate), 14e12);
  EXPECT_DOUBLE_EQ(parse_quantity("4.1 GFLOP", Dimension::kFlop), 4.1e9);
  EXPECT_DOUBLE_EQ(parse_quantity("95 MiB", Dimension::kBytes), 95.0 * 1048576);
  EXPECT_DOUBLE_EQ(parse_quantity("1 kB", Dimension::kBytes), 1000);
}

TEST(Units, CaseAndDimensionAreStrict) {
  EXPECT_THROW(parse_quantity("10 gbps", Dimension::kBandwidth), UnitError);
  EXPECT_THROW(parse_quantity("10 GFLOPS", Dimension::kFlop), UnitError);  // speed, not amount
  EXPECT_THROW(parse_quantity("10 GFLOP", Dimension::kFlopRate), UnitError);
  EXPECT_THROW(parse_quantity("10 kms", Dimension::kTime), UnitError);  // no prefix on times
  EXPECT_THROW(parse_quantity("10 Gbps", Dimension::kTime), UnitError);
}

TEST(Units, BareNumbersAndGarbageAreErrorsWithAnExample) {
  try {
    parse_quantity("10", Dimension::kBandwidth);
    FAIL() << "a bare number must be rejected";
  } catch (const UnitError& e) {
    EXPECT_NE(std::string(e.what()).find("\"10 Gbps\""), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_quantity("", Dimension::kTime), UnitError);
  EXPECT_THROW(parse_quantity("fast", Dimension::kTime), UnitError);
  EXPECT_THROW(parse_quantity("inf s", Dimension::kTime), UnitError);
  EXPECT_THROW(parse_quantity("nan s", Dimension::kTime), UnitError);
  EXPECT_THROW(parse_quantity("0x10 s", Dimension::kTime), UnitError);
}

TEST(Units, EdgeCases) {
  EXPECT_DOUBLE_EQ(parse_quantity("5\tus", Dimension::kTime), 5e-6);
  EXPECT_DOUBLE_EQ(parse_quantity("5 \xCE\xBCs", Dimension::kTime), 5e-6);     // Greek mu
  EXPECT_DOUBLE_EQ(parse_quantity("5 \xC2\xB5s", Dimension::kTime), 5e-6);     // micro sign
  EXPECT_THROW(parse_quantity("1 PiFLOPS", Dimension::kFlopRate), UnitError);  // no binary FLOP
  EXPECT_THROW(parse_quantity(std::string("10 Gbps\0x", 9), Dimension::kBandwidth), UnitError);
  EXPECT_THROW(parse_quantity("1e300 PBps", Dimension::kBandwidth), UnitError);  // overflows
  // Underflows: a non-zero amount that would read as 0 (or lose its precision) is out of range.
  for (const auto& [tiny, dimension] :
       {std::pair{"1e-400 Bps", Dimension::kBandwidth},
        std::pair{"1e-310 Bps", Dimension::kBandwidth}, std::pair{"1e-300 ns", Dimension::kTime}}) {
    try {
      parse_quantity(tiny, dimension);
      ADD_FAILURE() << tiny << " parsed";
    } catch (const UnitError& e) {
      EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(parse_quantity("0 Bps", Dimension::kBandwidth), 0);  // zero is still zero
  EXPECT_EQ(parse_quantity("0.0e-400 s", Dimension::kTime), 0);
}

TEST(Units, FormatsForPeople) {
  EXPECT_EQ(format_quantity(1.25e9, Dimension::kBandwidth), "1.25 GB/s");
  EXPECT_EQ(format_quantity(0.0125, Dimension::kTime), "12.5 ms");
  EXPECT_EQ(format_quantity(0, Dimension::kTime), "0 s");
  EXPECT_EQ(format_quantity(102.2e6, Dimension::kBytes), "102.2 MB");
}

// Issue 37: error lines echoed a scenario's ESC and BEL to the terminal, and whole 1 MB values.
TEST(ErrorLines, ControlCharactersAreEscapedAndLongValuesCut) {
  const std::string value(1 << 20, 'v');
  const InputError e(
      "s.json", "/cluster/machines/0/\x1b[2J" + std::string(300, 'k'),
      "unknown field \"" + value + "\"; bell \a, nul " + std::string(1, '\0') + " and\nnewline");
  const std::string line = e.what();
  EXPECT_EQ(line.find('\x1b'), std::string::npos);
  EXPECT_EQ(line.find('\a'), std::string::npos);
  EXPECT_EQ(line.find('\0'), std::string::npos);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_NE(line.find("\\x1b[2J"), std::string::npos) << line;
  EXPECT_NE(line.find("bell \\x07, nul \\x00 and newline"), std::string::npos) << line;
  EXPECT_NE(line.find("... (1048576 bytes)\""), std::string::npos);
  EXPECT_NE(line.find("... (304 bytes)"), std::string::npos) << line;  // the path's key
  EXPECT_LT(line.size(), 1000u);
  // The parts stay as given for callers that read them.
  EXPECT_GT(e.message().size(), value.size());
  // A cut never splits a UTF-8 character.
  const std::string accents(300, 'a');
  const InputError u("", "", "\"" + std::string(199, 'a') + "\xc3\xa9" + accents + "\"");
  EXPECT_NE(std::string(u.what()).find(std::string(199, 'a') + "... ("), std::string::npos)
      << u.what();
}

// A review of issue 37's change: a value that starts with a double quote closed the quoted part
// early and the rest went out whole (error lines of 1 MB); C1 controls (CSI), bidirectional
// overrides and bytes that are not UTF-8 went to the terminal as they were.
TEST(ErrorLines, QuotesInsideAValueAndTerminalCharactersDoNotGetThrough) {
  const InputError quoted("s.json", "/preset",
                          "no preset named \"\"" + std::string(1 << 20, 'A') + "\"");
  const std::string line = quoted.what();
  EXPECT_LE(line.size(), kMaxLineBytes + 100) << line.size();
  EXPECT_NE(line.find("bytes cut) ..."), std::string::npos) << line.substr(0, 300);
  EXPECT_EQ(line.rfind("s.json: /preset: no preset named ", 0), 0u) << line.substr(0, 300);
  const InputError terminal("s.json", "",
                            "name \"a\xc2\x9b"
                            "2Jb\xe2\x80\xae"
                            "cd\xff\xc3\"");
  EXPECT_EQ(std::string(terminal.what()), "s.json: name \"a\\u009b2Jb\\u202ecd\\xff\\xc3\"");
  // Other characters stay as written.
  EXPECT_EQ(printable_line("caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x99\x82"),
            "caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x99\x82");
}

}  // namespace
}  // namespace replisim::core
