#pragma once
// Shared by plan_test and render_test: a reviewed multi-host-qualified script "lesson" with its
// digest, and the TPU options every TPU route needs; plan() builds a plan for a slice of the
// built-in catalog (times m_slices, through the request's validate as the command line does).
#include <optional>
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "support/test_catalog.hpp"
#include "tpulaunch/matrix/matrix.hpp"
#include "tpulaunch/plan/plan.hpp"
#include "tpulaunch/plan/request.hpp"

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
    auto result = request_plan(slice, route);
    EXPECT_TRUE(result.ok()) << (result.ok() ? "" : result.error().message);
    return result.ok() ? std::move(result).value() : Plan{};
  }

  // The plan the command line asks for: `m_slices` x `slice`, --slices given when m_slices is set.
  Result<Plan> request_plan(const char* slice, RouteKind route) {
    PlanRequest request{Topology{m_catalog->find(slice), m_slices.value_or(1)}, TpuVmPlacement{}, m_options, {}, false};
    if (m_slices) {
      request.given = {"--slices"};
    }
    return tpu_vm_plan(m_status, route, request);
  }

  const Catalog* m_catalog = &embedded_catalog();
  std::optional<int> m_slices; // --slices N; nullopt: not given
  MatrixEntry m_entry;
  ScriptStatus m_status;
  PlanOptions m_options;
};

} // namespace tpulaunch::test_support
