// The cluster spec (TF_CONFIG's) with its token, and its map of roles onto tasks.
#include <cstdlib>

#include <sys/stat.h>

#include <gtest/gtest.h>

#include "core/base/error.h"
#include "core/strategy/strategy.h"
#include "real/cluster.h"
#include "tests/support/run_binary.h"
#include "tests/support/test_support.h"

namespace replisim::real {
namespace {

TEST(Cluster, ASpecReadsInTaskOrderAndRefusesBadAddresses) {
  const nlohmann::json good = {
      {"cluster", {{"worker", {"127.0.0.1:2001", "127.0.0.1:2002"}}, {"ps", {"[::1]:2000"}}}},
      {"token", "0123456789abcdef0123456789abcdef"}};
  const ClusterSpec spec = parse_cluster_spec(good, "c.json");
  ASSERT_EQ(spec.tasks.size(), 3u);
  EXPECT_EQ(spec.tasks[0].name(), "ps0");
  EXPECT_EQ(spec.tasks[0].host, "::1");
  EXPECT_EQ(spec.tasks[2].address(), "127.0.0.1:2002");
  EXPECT_EQ(parse_cluster_spec(cluster_spec_to_json(spec, true), "c.json").tasks[0].port, 2000);
  const std::vector<std::pair<nlohmann::json, std::string>> bad = {
      {{{"cluster", {{"ps", {"host"}}}}, {"token", "0123456789abcdef0123456789abcdef"}},
       "/cluster/ps/0"},
      {{{"cluster", {{"ps", {"h:70000"}}}}, {"token", "0123456789abcdef0123456789abcdef"}},
       "/cluster/ps/0"},
      {{{"cluster", {{"ps", {"h:1", "h:1"}}}}, {"token", "0123456789abcdef0123456789abcdef"}},
       "/cluster/ps/1"},
      {{{"cluster", {{"chief", {"h:1"}}}}, {"token", "0123456789abcdef0123456789abcdef"}}, "chief"},
      {{{"cluster", {{"ps", {"h:1"}}}}, {"token", "short"}}, "/token"},
  };
  for (const auto& [json, where] : bad) {
    try {
      parse_cluster_spec(json, "c.json");
      ADD_FAILURE() << json.dump();
    } catch (const core::InputError& e) {
      EXPECT_NE(std::string(e.what()).find(where), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("c.json"), std::string::npos) << e.what();
    }
  }
}

// Issue 37: a token must carry at least 128 bits, and a spec file holding it must be readable by
// its owner only.
TEST(Cluster, AWeakTokenOrAReadableTokenFileIsRefused) {
  EXPECT_GE(token_bits("0123456789abcdef0123456789abcdef"), 128);  // 32 hex digits
  EXPECT_LT(token_bits("0123456789abcdef0123"), 128);              // 80 bits of hex
  EXPECT_EQ(token_bits(std::string(64, 'a')), 0);                  // a placeholder
  EXPECT_GE(token_bits("kY3nQ8vR2mZ5xW1cT7bL9p"), 128);            // 22 base64 characters
  for (const char* weak : {"0123456789abcdef", "passwordpassword", "abababababababababababab"}) {
    try {
      parse_cluster_spec({{"cluster", {{"ps", {"h:1"}}}}, {"token", weak}}, "c.json");
      ADD_FAILURE() << weak;
    } catch (const core::InputError& e) {
      EXPECT_EQ(e.json_path(), "/token");
      EXPECT_NE(e.message().find("at least 128 bits"), std::string::npos) << e.what();
    }
  }
  test::TempDir dir;
  const nlohmann::json spec = {{"cluster", {{"ps", {"127.0.0.1:2000"}}}},
                               {"token", "0123456789abcdef0123456789abcdef"}};
  const std::string open_file = dir.write("open.json", spec.dump());
  ::chmod(open_file.c_str(), 0644);
  try {
    read_cluster_file(open_file);
    ADD_FAILURE() << "a readable token file was accepted";
  } catch (const core::InputError& e) {
    EXPECT_NE(e.message().find("chmod 600 " + open_file), std::string::npos) << e.what();
  }
  // Writable by others (a review: 0622 passed) is refused as well.
  ::chmod(open_file.c_str(), 0622);
  EXPECT_THROW(read_cluster_file(open_file), core::InputError);
  EXPECT_EQ(read_cluster_file(dir.write_private("private.json", spec.dump())).tasks.size(), 1u);
  // Without a token in it (the token from the environment) the file may be readable.
  ::setenv(kClusterTokenVariable, "0123456789abcdef0123456789abcdef", 1);
  const std::string no_token = dir.write("no-token.json", R"({"cluster": {"ps": ["h:1"]}})");
  ::chmod(no_token.c_str(), 0644);
  EXPECT_EQ(read_cluster_file(no_token).tasks.size(), 1u);
  ::unsetenv(kClusterTokenVariable);
}

TEST(Cluster, RolesMapOntoTasksAndAMissingOrIdleTaskIsNamed) {
  const core::Plan plan =
      core::compile_plan(test::parse(test::two_ps_scenario({})), "between_graph", {1});
  ClusterSpec spec;
  spec.tasks = tasks_of_plan(plan);
  ASSERT_EQ(spec.tasks.size(), 4u);  // ps0 ps1 worker0 worker1
  const TaskMap map = map_roles(plan, spec, "c.json");
  EXPECT_EQ(spec.tasks[size_t(map.chief_task)].name(), "worker0");
  // Job control runs where global_step lives: a fault cannot take it without failing the job.
  EXPECT_EQ(spec.tasks[size_t(map.coordinator_task)].name(),
            "ps" + std::to_string(plan.variables.front().ps));
  for (size_t t = 0; t < spec.tasks.size(); ++t) EXPECT_FALSE(map.roles_of_task[t].empty());
  ClusterSpec fewer = spec;
  fewer.tasks.pop_back();
  try {
    map_roles(plan, fewer, "c.json");
    ADD_FAILURE();
  } catch (const core::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/cluster/worker"), std::string::npos) << e.what();
  }
  ClusterSpec more = spec;
  more.tasks.push_back({"worker", 2, "h", 9});
  EXPECT_THROW(map_roles(plan, more, "c.json"), core::InputError);
}

}  // namespace
}  // namespace replisim::real
