// The price catalog: the shipped one reads, and bad input is refused with one line naming the file
// and the JSON path.
#include <cmath>

#include <gtest/gtest.h>

#include "core/base/error.h"
#include "core/hardware/catalog.h"
#include "core/sweep/recommend.h"
#include "tests/support/run_binary.h"

namespace replisim {
namespace {

using nlohmann::json;

json small_catalog() {
  return json::parse(R"({
    "format": "replisim-catalog", "version": 1, "name": "t",
    "gpus": {"G": {"memory": "16 GB", "speeds": {"resnet50": {"speed": "10 TFLOPS",
             "basis": "benchmark", "source": "a test"}}}},
    "instances": [{"name": "one", "provider": "p", "region": "r", "gpu": "G", "gpus": 1,
                   "cpu_cores": 4, "nic": {"bandwidth": "10 Gbps"}, "hardware_source": "a test",
                   "prices": [{"kind": "on_demand", "usd_per_hour": 2.5, "date": "2026-01",
                               "source": "a test"}]}]
  })");
}

// Loading `doc` fails with one line naming the file and `path`, containing `needle`.
void expect_catalog_error(const json& doc, const std::string& path, const std::string& needle) {
  test::TempDir dir;
  const std::string file = dir.write("c.json", doc.dump());
  try {
    core::check_catalog_presets(core::load_catalog(file));
    ADD_FAILURE() << "accepted: " << doc.dump();
  } catch (const core::InputError& e) {
    const std::string line = e.what();
    EXPECT_EQ(e.file(), file);
    EXPECT_EQ(e.json_path(), path) << line;
    EXPECT_NE(line.find(needle), std::string::npos) << line;
    EXPECT_EQ(line.find('\n'), std::string::npos) << line;
    EXPECT_EQ(line.rfind(file + ": " + path + ": ", 0), 0u) << line;
  }
}

TEST(Catalog, TheShippedCatalogReadsWithADatedSourcedPriceForEveryRow) {
  const core::Catalog c =
      core::load_catalog(std::string(REPLISIM_SOURCE_DIR) + "/scenarios/catalog/aws-gcp-gpu.json");
  core::check_catalog_presets(c);
  ASSERT_EQ(c.instances.size(), 9u);
  for (const core::CatalogInstance& t : c.instances) {
    for (const core::CatalogPrice& p : t.prices) {
      EXPECT_TRUE(core::valid_catalog_date(p.date)) << t.name;
      EXPECT_FALSE(p.source.empty()) << t.name;
    }
  }
  // The issue's figures, and p5's price before and after the June 2025 cut chosen by date.
  const auto price = [&](const std::string& name, const std::string& as_of = "") {
    for (const core::CatalogInstance& t : c.instances) {
      if (t.name == name) return t.price(core::PriceKind::kOnDemand, as_of)->usd_per_hour;
    }
    return -1.0;
  };
  EXPECT_DOUBLE_EQ(price("p2.xlarge"), 0.90);
  EXPECT_DOUBLE_EQ(price("p2.16xlarge"), 14.40);
  EXPECT_DOUBLE_EQ(price("p3.16xlarge"), 24.48);
  EXPECT_DOUBLE_EQ(price("p4d.24xlarge"), 21.96);
  EXPECT_DOUBLE_EQ(price("p5.48xlarge"), 55.04);
  EXPECT_DOUBLE_EQ(price("p5.48xlarge", "2025-05-31"), 98.32);
  EXPECT_DOUBLE_EQ(price("a3-highgpu-1g"), 10.98);
}

TEST(Catalog, BadInputIsOneLineNamingTheFileAndPath) {
  json d = small_catalog();
  d["instances"][0]["prices"][0].erase("date");
  expect_catalog_error(d, "/instances/0/prices/0/date", "required field missing");
  d = small_catalog();
  d["instances"][0]["prices"][0]["date"] = "2026-13";
  expect_catalog_error(d, "/instances/0/prices/0/date", "YYYY-MM");
  d = small_catalog();
  d["instances"][0]["prices"][0]["usd_per_hour"] = -1;
  expect_catalog_error(d, "/instances/0/prices/0/usd_per_hour", "above 0");
  d = small_catalog();
  d["instances"][0]["gpu"] = "H200";
  expect_catalog_error(d, "/instances/0/gpu", "unknown GPU \"H200\"");
  d = small_catalog();
  d["instances"][0]["prices"][0]["source"] = "";
  expect_catalog_error(d, "/instances/0/prices/0/source", "non-empty");
  d = small_catalog();
  d["instances"][0]["prices"].push_back(
      {{"kind", "spot"}, {"usd_per_hour", 1}, {"date", "2026-01"}, {"source", "s"}});
  expect_catalog_error(d, "/instances/0/prices/1", "interruption");
  d["instances"][0]["prices"][1]["interruption"] = "30%";
  d["instances"][0]["prices"][1]["interruption_source"] = "s";
  expect_catalog_error(d, "/instances/0/prices/1/interruption", "<5%");
  d = small_catalog();
  d["version"] = 2;
  expect_catalog_error(d, "/version", "reads version 1");
  d = small_catalog();
  d["gpus"]["G"]["speeds"]["resnet5O"] = d["gpus"]["G"]["speeds"]["resnet50"];
  expect_catalog_error(d, "/gpus/G/speeds/resnet5O", "no model preset");
  d = small_catalog();
  d["instances"][0]["nic"]["bandwith"] = "1 Gbps";
  expect_catalog_error(d, "/instances/0/nic/bandwith", "bandwidth");
  d = small_catalog();
  d["instances"].push_back(d["instances"][0]);
  expect_catalog_error(d, "/instances/1/name", "listed twice");
}

TEST(Catalog, ABandIsARatePerHourFromItsMonthlyProbability) {
  // p = 0.05 in 720 h: -ln(0.95) / 720.
  EXPECT_NEAR(core::interruption_band_rate_per_hour(core::InterruptionBand::kUnder5),
              -std::log(0.95) / 720, 1e-15);
  EXPECT_NEAR(core::interruption_band_rate_per_hour(core::InterruptionBand::kOver20),
              -std::log(0.75) / 720, 1e-15);
  double last = 0;
  for (core::InterruptionBand b : {core::InterruptionBand::kUnder5, core::InterruptionBand::k5To10,
                                   core::InterruptionBand::k10To15, core::InterruptionBand::k15To20,
                                   core::InterruptionBand::kOver20}) {
    EXPECT_GT(core::interruption_band_rate_per_hour(b), last);
    last = core::interruption_band_rate_per_hour(b);
  }
}

}  // namespace
}  // namespace replisim
