#pragma once
// Shared by plan_test and render_test: a reviewed multi-host-qualified script "lesson" with its
// digest, and the TPU options every TPU route needs; plan() builds a plan for a slice of the
// built-in catalog.
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "support/test_catalog.hpp"
#include "tpulaunch/matrix/matrix.hpp"
#include "tpulaunch/plan/plan.hpp"

namespace tpulaunch::test_support {

class PlanFixture : public ::testing::Test {
protected:
  void SetUp() override {
    m_entry.id = "lesson";
    m_entry.script_class = ScriptClass::multi_host_qualified;
    m_entry.class_name = "multi-host-qualified";
    m_status.id = "lesson";
    m_status.path = "public/exercises/lesson.py";
    m_status.course_path = "public/exercises/lesson.py";
    m_status.state = ReviewState::reviewed;
    m_status.entry = &m_entry;
    m_status.actual_sha256 = std::string(64, 'a');
    m_options.tpu = "pod";
    m_options.zone = "us-central1-a";
    m_options.run_id = "r1";
  }

  // The plan for `slice` (the test fails, and gets an empty plan, when the planner refuses).
  Plan plan(const char* slice, RouteKind route) {
    auto result = build_plan(m_status, route, m_catalog->find(slice), m_options);
    EXPECT_TRUE(result.ok()) << (result.ok() ? "" : result.error().message);
    return result.ok() ? std::move(result).value() : Plan{};
  }

  const Catalog* m_catalog = &embedded_catalog();
  MatrixEntry m_entry;
  ScriptStatus m_status;
  PlanOptions m_options;
};

} // namespace tpulaunch::test_support
