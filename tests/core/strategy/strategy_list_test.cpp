// --strategy's values (core::parse_strategy_list): a name, a comma-separated list in the order
// given, "both" (TensorFlow's two replications) and "all" (the registry); bad lists name the flag.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/base/error.h"
#include "core/strategy/strategy.h"

namespace replisim::core {
namespace {

using Names = std::vector<std::string>;

TEST(StrategyList, BothKeepsMeaningTheTwoTensorFlowReplications) {
  EXPECT_EQ(parse_strategy_list("both"), (Names{"in_graph", "between_graph"}));
  EXPECT_EQ(parse_strategy_list("all"), strategy_names());
  EXPECT_EQ(parse_strategy_list("all"), (Names{"in_graph", "between_graph", "allreduce"}));
}

TEST(StrategyList, AListRunsInTheOrderGiven) {
  EXPECT_EQ(parse_strategy_list("allreduce"), (Names{"allreduce"}));
  EXPECT_EQ(parse_strategy_list("allreduce,in_graph"), (Names{"allreduce", "in_graph"}));
  EXPECT_EQ(parse_strategy_list("in_graph,between_graph,allreduce"),
            (Names{"in_graph", "between_graph", "allreduce"}));
}

std::string error_of(const std::string& text, const std::string& flag = "--strategy") {
  try {
    parse_strategy_list(text, flag);
  } catch (const InputError& e) {
    EXPECT_EQ(e.json_path(), flag);
    return e.message();
  }
  ADD_FAILURE() << "\"" << text << "\" was accepted";
  return "";
}

TEST(StrategyList, BadListsNameTheFlagAndTheValidValues) {
  EXPECT_NE(error_of("allreduce,").find("an empty strategy name in \"allreduce,\""),
            std::string::npos);
  EXPECT_NE(error_of("").find("an empty strategy name"), std::string::npos);
  const std::string typo = error_of("in_graph,all_reduce", "/strategy");
  EXPECT_NE(typo.find("unknown strategy \"all_reduce\" (did you mean allreduce?)"),
            std::string::npos)
      << typo;
  EXPECT_NE(typo.find("both (in_graph and between_graph) or all"), std::string::npos) << typo;
  EXPECT_NE(error_of("in_graph,in_graph").find("\"in_graph\" is given twice"), std::string::npos);
  // "both" and "all" are whole values, not names of a list.
  EXPECT_NE(error_of("both,allreduce").find("\"both\" stands alone"), std::string::npos);
  EXPECT_NE(error_of("all,allreduce").find("\"all\" stands alone"), std::string::npos);
}

}  // namespace
}  // namespace replisim::core
