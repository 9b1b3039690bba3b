#include "tpulaunch/plan.hpp"

#include <algorithm>
#include <memory>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "test_catalog.hpp"

namespace tpulaunch {
namespace {

class PlanTest : public ::testing::Test {
protected:
  void SetUp() override {
    m_entry.id = "lesson";
    m_entry.script_class = ScriptClass::multi_host_qualified;
    m_entry.class_name = "multi-host-qualified";
    m_status.id = "lesson";
    m_status.path = "public/exercises/lesson.py";
    m_status.state = ReviewState::reviewed;
    m_status.entry = &m_entry;
    m_status.actual_sha256 = std::string(64, 'a');
    m_options.tpu = "pod";
    m_options.zone = "us-central1-a";
    m_options.run_id = "r1";
  }

  Plan plan(const char* slice, RouteKind route) {
    auto result = build_plan(m_status, route, m_catalog->find(slice), m_options);
    EXPECT_TRUE(result.ok()) << (result.ok() ? "" : result.error().message);
    return result.ok() ? std::move(result).value() : Plan{};
  }

  static std::vector<std::string> names(const Plan& p) {
    std::vector<std::string> out;
    for (const auto& s : p.steps) {
      out.emplace_back(s.name());
    }
    return out;
  }

  static int count_worker_all(const Plan& p) {
    int n = 0;
    for (const auto& s : p.steps) {
      for (const auto& a : s.line.argv()) {
        n += a == "--worker=all" ? 1 : 0;
      }
    }
    return n;
  }

  const Catalog* m_catalog = &test_support::embedded_catalog();
  MatrixEntry m_entry;
  ScriptStatus m_status;
  PlanOptions m_options;
};

TEST_F(PlanTest, MultiHostFullFormStepsInOrder) {
  m_options.bootstrap = true;
  m_options.teardown = true;
  const Plan p = plan("v5litepod-16", RouteKind::multi_host);
  EXPECT_EQ(names(p), (std::vector<std::string>{"preflight", "bootstrap", "stage", "run", "fetch", "fetch", "fetch",
                                                "fetch", "verify", "teardown"}));
  EXPECT_EQ(count_worker_all(p), 3); // bootstrap, stage, run
  EXPECT_EQ(p.verify, VerifyKind::training);
}

TEST_F(PlanTest, SingleHostHasNoWorkerAllAndNoPreflight) {
  const Plan p = plan("v5litepod-8", RouteKind::single_host);
  EXPECT_EQ(count_worker_all(p), 0);
  EXPECT_EQ(names(p), (std::vector<std::string>{"stage", "run", "fetch", "verify"}));
}

TEST_F(PlanTest, OneFetchPerWorkerIntoItsOwnFolder) {
  const Plan p = plan("v5litepod-256", RouteKind::multi_host);
  std::vector<std::string> destinations;
  for (const auto& s : p.steps) {
    if (s.kind == StepKind::fetch) {
      const auto argv = s.line.argv();
      ASSERT_TRUE(s.workers && !s.workers->is_all());
      EXPECT_EQ(argv.back(), fmt::format("--worker={}", s.workers->index()));
      destinations.push_back(argv[7]);
      EXPECT_EQ(concurrent_group(s.kind), "fetch");
    }
  }
  ASSERT_EQ(destinations.size(), 64U);
  for (int i = 0; i < 64; ++i) {
    EXPECT_EQ(destinations[static_cast<std::size_t>(i)], fmt::format("./tpu-runs/pod/lesson/r1/worker-{}/", i));
  }
}

TEST_F(PlanTest, CourseFormIsTheCoursesOwnCommands) {
  m_options.form = PlanForm::course;
  const Plan p = plan("v5litepod-16", RouteKind::multi_host);
  EXPECT_EQ(names(p), (std::vector<std::string>{"stage", "run", "fetch", "fetch", "fetch", "fetch"}));
  EXPECT_EQ(to_shell(p.steps[0].line),
            "gcloud compute tpus tpu-vm scp public/exercises/lesson.py pod:~/jax-tpu-lab/ --zone=us-central1-a --worker=all");
  EXPECT_EQ(to_shell(p.steps[1].line),
            "gcloud compute tpus tpu-vm ssh pod --zone=us-central1-a --worker=all --command='set -o pipefail; "
            "JAX_PLATFORMS=tpu ~/jax-tpu-lab/.venv/bin/python ~/jax-tpu-lab/lesson.py | tee "
            "~/jax-tpu-lab/lesson-tpu.txt'");
}

TEST_F(PlanTest, RunStepChecksTheDigestAndMaps255InTheSameCall) {
  const Plan p = plan("v5litepod-16", RouteKind::multi_host);
  const auto& run = p.steps[2];
  ASSERT_EQ(run.kind, StepKind::run);
  const std::string command = run.line.argv().back();
  ASSERT_EQ(command.rfind("--command=", 0), 0U);
  EXPECT_NE(command.find(std::string(64, 'a') + " ~/jax-tpu-lab/lesson.py | sha256sum --check --status"), std::string::npos);
  EXPECT_NE(command.find("exit 97"), std::string::npos);
  EXPECT_NE(command.find("TPU_RUN_DIR=~/jax-tpu-lab/runs/r1/artifacts"), std::string::npos);
  EXPECT_NE(command.find("lesson-tpu-\"$(hostname)\".txt"), std::string::npos);
  EXPECT_NE(command.find("-eq 255 ]; then status=254"), std::string::npos);
  // The digest check comes before the program in the one remote command.
  EXPECT_LT(command.find("sha256sum"), command.find(".venv/bin/python"));
}

TEST_F(PlanTest, ProjectIsEmittedOnlyWhenGiven) {
  for (const auto& s : plan("v5litepod-16", RouteKind::multi_host).steps) {
    for (const auto& a : s.line.argv()) {
      EXPECT_EQ(a.find("--project"), std::string::npos);
    }
  }
  m_options.project = "my-project-1";
  int gcloud_steps = 0;
  for (const auto& s : plan("v5litepod-16", RouteKind::multi_host).steps) {
    const auto argv = s.line.argv();
    if (argv.front() == "gcloud") {
      ++gcloud_steps;
      EXPECT_NE(std::find(argv.begin(), argv.end(), "--project=my-project-1"), argv.end()) << s.name();
    }
  }
  EXPECT_EQ(gcloud_steps, 6);
}

TEST_F(PlanTest, InvalidValuesAreRefusedBeforeAnyCommandIsBuilt) {
  for (auto mutate : std::vector<void (*)(PlanOptions&)>{
           [](PlanOptions& o) { o.tpu = "Pod"; }, [](PlanOptions& o) { o.tpu = ""; },
           [](PlanOptions& o) { o.zone = "us-central1"; }, [](PlanOptions& o) { o.run_id = "../r"; },
           [](PlanOptions& o) { o.project = "x;y"; }, [](PlanOptions& o) { o.parallel = 0; }}) {
    PlanOptions options = m_options;
    mutate(options);
    auto result = build_plan(m_status, RouteKind::multi_host, m_catalog->find("v5litepod-16"), options);
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.error().code, ExitCode::usage);
  }
}

TEST_F(PlanTest, CpuRouteIsOnePythonCommand) {
  auto result = build_plan(m_status, RouteKind::cpu, nullptr, PlanOptions{});
  ASSERT_TRUE(result.ok());
  ASSERT_EQ(result->steps.size(), 1U);
  EXPECT_EQ(result->steps[0].line.argv(), (std::vector<std::string>{"python", "public/exercises/lesson.py"}));
}

TEST_F(PlanTest, DiscoveryPlanWritesDiscoveryReceiptsOnly) {
  auto result = build_discovery_plan(*m_catalog->find("v5litepod-16"), m_options);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->verify, VerifyKind::discovery);
  bool saw_run = false;
  for (const auto& s : result->steps) {
    if (s.kind == StepKind::run) {
      saw_run = true;
      const std::string command = s.line.argv().back();
      // The program travels base64-encoded, decoded into the run folder and run from there.
      EXPECT_NE(command.find(" | base64 --decode >~/jax-tpu-lab/runs/r1/discover.py || exit 1; "), std::string::npos)
          << command;
      EXPECT_NE(command.find(".venv/bin/python ~/jax-tpu-lab/runs/r1/discover.py 2>&1"), std::string::npos) << command;
      EXPECT_EQ(command.find('\''), std::string::npos) << "no quoting needed: " << command;
      EXPECT_EQ(command.find("worker-"), std::string::npos);
    }
  }
  EXPECT_TRUE(saw_run);
}

TEST_F(PlanTest, StepsSayWhichWorkersTheyReach) {
  m_options.teardown = true;
  const Plan multi = plan("v5litepod-16", RouteKind::multi_host);
  for (const auto& s : multi.steps) {
    switch (s.kind) {
    case StepKind::stage:
    case StepKind::run: EXPECT_EQ(s.workers, Workers::all()) << s.name(); break;
    case StepKind::fetch: ASSERT_TRUE(s.workers); EXPECT_FALSE(s.workers->is_all()); break;
    default: EXPECT_FALSE(s.workers) << s.name(); break;
    }
  }
  const Plan single = plan("v5litepod-8", RouteKind::single_host);
  EXPECT_EQ(single.steps[0].workers, Workers::one(0));
  EXPECT_EQ(single.steps[0].workers->text(), "0");
  EXPECT_EQ(Workers::all().text(), "all");
}

TEST_F(PlanTest, ClassIsTheReviewedOneOrReviewRequired) {
  EXPECT_EQ(class_name(plan("v5litepod-16", RouteKind::multi_host)), "multi-host-qualified");
  m_status.entry = nullptr;
  EXPECT_EQ(class_name(plan("v5litepod-8", RouteKind::single_host)), "review-required");
  auto discovery = build_discovery_plan(*m_catalog->find("v5litepod-16"), m_options);
  ASSERT_TRUE(discovery.ok());
  EXPECT_EQ(class_name(*discovery), "discovery");
}

TEST(Plan, StepKindsHaveTheirNames) {
  EXPECT_EQ(to_string(StepKind::preflight), "preflight");
  EXPECT_EQ(to_string(StepKind::teardown), "teardown");
  EXPECT_EQ(concurrent_group(StepKind::fetch), "fetch");
  EXPECT_EQ(concurrent_group(StepKind::run), "");
}

TEST(Plan, VerifyKindsRoundTrip) {
  for (const auto kind : k_verify_kinds) {
    EXPECT_EQ(parse_verify_kind(to_string(kind)), kind);
  }
  EXPECT_FALSE(parse_verify_kind("train"));
}

TEST(Plan, DefaultRunIdIsAUtcTimestamp) {
  const std::string id = default_run_id();
  ASSERT_EQ(id.size(), 16U);
  EXPECT_EQ(id[8], 'T');
  EXPECT_EQ(id.back(), 'Z');
}

} // namespace
} // namespace tpulaunch
