#include "tpulaunch/render.hpp"

#include <memory>

#include <gtest/gtest.h>

#include "test_catalog.hpp"

#include "tpulaunch/figure.hpp"

namespace tpulaunch {
namespace {

class RenderTest : public ::testing::Test {
protected:
  void SetUp() override {
    m_entry.script_class = ScriptClass::multi_host_qualified;
    m_entry.class_name = "multi-host-qualified";
    m_status.id = "lesson";
    m_status.path = "public/exercises/lesson.py";
    m_status.state = ReviewState::reviewed;
    m_status.entry = &m_entry;
    m_status.actual_sha256 = std::string(64, 'b');
    m_options.tpu = "pod";
    m_options.zone = "us-central1-a";
    m_options.run_id = "r1";
  }
  Plan plan(const char* slice, RouteKind route) {
    return std::move(build_plan(m_status, route, m_catalog->find(slice), m_options)).value();
  }

  const Catalog* m_catalog = &test_support::embedded_catalog();
  MatrixEntry m_entry;
  ScriptStatus m_status;
  PlanOptions m_options;
};

TEST_F(RenderTest, JsonHasTheDocumentedFields) {
  const auto j = plan_json(plan("v5litepod-16", RouteKind::multi_host));
  for (const char* key : {"script", "path", "class", "route", "slice", "multi_host", "steps"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["route"], "multi-host");
  EXPECT_EQ(j["slice"]["global_chips"], 16);
  EXPECT_EQ(j["slice"]["device_count"], 16);
  for (const auto& step : j["steps"]) {
    for (const char* key : {"name", "where", "workers", "argv", "command"}) {
      EXPECT_TRUE(step.contains(key)) << key;
    }
  }
  ASSERT_EQ(j["concurrency"].size(), 1U);
  EXPECT_EQ(j["concurrency"][0]["group"], "fetch");
  EXPECT_EQ(j["concurrency"][0]["steps"].size(), 4U);
}

TEST_F(RenderTest, JsonCommandIsTheRenderedArgv) {
  const Plan p = plan("v5litepod-16", RouteKind::multi_host);
  const auto j = plan_json(p);
  for (std::size_t i = 0; i < p.steps.size(); ++i) {
    EXPECT_EQ(j["steps"][i]["command"], to_shell(p.steps[i].line));
    EXPECT_EQ(j["steps"][i]["argv"].get<std::vector<std::string>>(), p.steps[i].line.argv());
  }
}

TEST_F(RenderTest, ShScriptIsCompleteAndOrdered) {
  m_options.teardown = true;
  const std::string sh = render_sh(plan("v5litepod-16", RouteKind::multi_host));
  EXPECT_EQ(sh.rfind("#!/usr/bin/env bash\n", 0), 0U);
  EXPECT_NE(sh.find("\nset -euo pipefail\n"), std::string::npos);
  EXPECT_NE(sh.find("readonly TPU=pod\n"), std::string::npos);
  EXPECT_NE(sh.find("readonly PARALLEL=8\n"), std::string::npos);
  const auto mkdir = sh.find("mkdir -p");
  const auto stage = sh.find("tpu-vm scp public/exercises/lesson.py");
  const auto run = sh.find("tpu-vm ssh pod");
  const auto fetch = sh.find("fetch_start 3 ");
  const auto wait = sh.find("fetch_wait_all\n");
  const auto verify = sh.find("tpulaunch verify");
  const auto teardown = sh.find("tpu-vm delete pod --zone=us-central1-a --quiet");
  for (const auto at : {mkdir, stage, run, fetch, wait, verify, teardown}) {
    ASSERT_NE(at, std::string::npos) << sh;
  }
  EXPECT_LT(mkdir, stage);
  EXPECT_LT(stage, run);
  EXPECT_LT(run, fetch);
  EXPECT_LT(fetch, wait);
  EXPECT_LT(wait, verify);
  EXPECT_LT(verify, teardown);
  // A failing run must not skip retrieval.
  EXPECT_NE(sh.find(" || run_status=$?\n"), std::string::npos);
}

TEST_F(RenderTest, TextNamesTheRouteAndEveryCommand) {
  const Plan p = plan("v5litepod-8", RouteKind::single_host);
  const std::string text = render_text(p);
  EXPECT_NE(text.find("route:  single-host: v5litepod-8 is 1 host x 8 chips"), std::string::npos) << text;
  for (const auto& s : p.steps) {
    EXPECT_NE(text.find(to_shell(s.line)), std::string::npos) << s.name;
  }
}

TEST(Render, RefusalJsonAndText) {
  const RefusalContext context{"s", "ex/s.py", "cpu-only", "v5litepod-8"};
  Refusal refusal{"cpu-only-stays-on-cpu", "no", {}};
  refusal.evidence.push_back(Evidence{"devices-cpu", Category::cpu_selection, 3, 5, "jax.devices('cpu')", "x"});
  const auto j = refusal_json(context, refusal);
  EXPECT_EQ(j["refused"], true);
  EXPECT_EQ(j["rule"], "cpu-only-stays-on-cpu");
  EXPECT_EQ(j["class"], "cpu-only");
  EXPECT_EQ(j["evidence"][0]["line"], 3);
  const std::string text = render_refusal_text(context, refusal);
  EXPECT_EQ(text, "tpulaunch: refused: cpu-only-stays-on-cpu: no\n  ex/s.py:3:5: cpu-selection [devices-cpu]: jax.devices('cpu')\n");
}

TEST(Figure, BarsCarryTheCatalogValues) {
  const Catalog& catalog = test_support::embedded_catalog();
  const std::string svg = render_topology_svg({catalog.find("v5litepod-16"), catalog.find("v6e-16")});
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0U);
  EXPECT_NE(svg.find(R"(data-slice="v5litepod-16" data-metric="hosts" data-value="4")"), std::string::npos);
  EXPECT_NE(svg.find(R"(data-slice="v5litepod-16" data-metric="chips_per_host" data-value="4")"), std::string::npos);
  EXPECT_NE(svg.find(R"(data-slice="v6e-16" data-metric="global_chips" data-value="16")"), std::string::npos);
  EXPECT_NE(svg.find("accelerator type"), std::string::npos);
  EXPECT_NE(svg.find("class=\"legend\""), std::string::npos);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
}

} // namespace
} // namespace tpulaunch
