#include "tpulaunch/plan/plan.hpp"

#include <algorithm>
#include <fstream>
#include <memory>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "support/plan_fixture.hpp"
#include "tpulaunch/classify/classifier.hpp"
#include "tpulaunch/remote/remote_program.hpp"

namespace tpulaunch {
namespace {

// A duration the rules accept (the test fails when they do not).
Duration duration(ValueKind kind, std::string_view text) {
  auto parsed = Duration::parse(kind, text);
  EXPECT_TRUE(parsed.ok()) << text;
  return *parsed;
}

class PlanTest : public test_support::PlanFixture {
protected:
  // The first step of `kind` (the test fails when there is none).
  static const Step& step(const Plan& p, StepKind kind) {
    const auto it = std::find_if(p.steps.begin(), p.steps.end(), [kind](const Step& s) { return s.kind == kind; });
    EXPECT_NE(it, p.steps.end()) << to_string(kind);
    static const Step none;
    return it == p.steps.end() ? none : *it;
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
};

TEST_F(PlanTest, MultiHostFullFormStepsInOrder) {
  m_entry.proves = Proves::training;
  m_options.bootstrap = true;
  m_options.teardown = true;
  const Plan p = plan("v5litepod-16", RouteKind::multi_host);
  // The guard is staged first, and bootstrap goes through it; a failed step asks for the TPU's
  // state (spot or not), and --teardown knows how to delete it.
  EXPECT_EQ(names(p), (std::vector<std::string>{"prepare", "write", "preflight", "release", "preemption-check", "stage",
                                                "bootstrap", "run", "fetch", "fetch", "fetch", "fetch", "verify",
                                                "teardown"}));
  EXPECT_EQ(count_worker_all(p), 3); // stage, bootstrap, run
  EXPECT_EQ(p.verify, VerifyKind::training);
}

TEST_F(PlanTest, SingleHostHasNoWorkerAllAndNoPreflight) {
  const Plan p = plan("v5litepod-8", RouteKind::single_host);
  EXPECT_EQ(count_worker_all(p), 0);
  EXPECT_EQ(names(p), (std::vector<std::string>{"prepare", "write", "preemption-check", "stage", "run", "fetch", "verify"}));
}

TEST_F(PlanTest, OneFetchPerWorkerIntoItsOwnFolder) {
  const Plan p = plan("v5litepod-32", RouteKind::multi_host); // 8 hosts: k_fetch_lines_max, a line each
  std::vector<std::string> destinations;
  for (const auto& s : p.steps) {
    if (s.kind == StepKind::fetch) {
      const auto argv = s.line.argv();
      ASSERT_TRUE(s.workers && !s.workers->is_all());
      EXPECT_FALSE(s.each_worker);
      EXPECT_EQ(argv.back(), fmt::format("--worker={}", s.workers->index()));
      destinations.push_back(argv[7]);
      EXPECT_EQ(concurrent_group(s), "fetch");
    }
  }
  ASSERT_EQ(destinations.size(), 8U);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(destinations[static_cast<std::size_t>(i)], fmt::format("./tpu-runs/pod/lesson/r1/worker-{}/", i));
  }
}

TEST_F(PlanTest, AboveEightHostsTheFetchIsOneStepOverEveryWorker) {
  const Plan p = plan("v5litepod-256", RouteKind::multi_host);
  std::vector<const Step*> fetches;
  for (const auto& s : p.steps) {
    if (s.kind == StepKind::fetch) {
      fetches.push_back(&s);
    }
  }
  ASSERT_EQ(fetches.size(), 1U);
  EXPECT_EQ(fetches[0]->each_worker, 64);
  const auto argv = fetches[0]->line.argv();
  EXPECT_EQ(argv[7], "./tpu-runs/pod/lesson/r1/worker-\"$w\"/"); // the code "$w", as written
  EXPECT_EQ(argv.back(), "--worker=\"$w\"");
}

TEST_F(PlanTest, CourseFormIsTheCoursesOwnCommands) {
  m_options.form = PlanForm::course;
  const Plan p = plan("v5litepod-16", RouteKind::multi_host);
  EXPECT_EQ(names(p), (std::vector<std::string>{"prepare", "stage", "run", "fetch", "fetch", "fetch", "fetch"}));
  EXPECT_EQ(to_shell(p.steps[1].line),
            "gcloud compute tpus tpu-vm scp public/exercises/lesson.py pod:~/jax-tpu-lab/ --zone=us-central1-a --worker=all");
  EXPECT_EQ(to_shell(p.steps[2].line),
            "gcloud compute tpus tpu-vm ssh pod --zone=us-central1-a --worker=all --command='set -o pipefail; "
            "JAX_PLATFORMS=tpu ~/jax-tpu-lab/.venv/bin/python ~/jax-tpu-lab/lesson.py | tee "
            "~/jax-tpu-lab/lesson-tpu.txt'");
}

TEST_F(PlanTest, RunStepCallsTheStagedRunGuardInTheRunsOwnFolder) {
  const Plan p = plan("v5litepod-16", RouteKind::multi_host);
  const RemoteProgram& guard = run_guard_program();
  const std::string a64(64, 'a');
  ASSERT_EQ(p.plan_sha256.size(), 64U);
  const std::string id = p.plan_sha256.substr(0, 16);
  EXPECT_EQ(p.plan_id(), id);
  EXPECT_EQ(p.remote_run_dir, "jax-tpu-lab/runs/lesson/r1");
  // The write step fills the stage folder, each file checked against its digest.
  const Step& write = step(p, StepKind::write);
  EXPECT_EQ(write.line.argv(),
            (std::vector<std::string>{"tpulaunch", "stage", "./tpu-runs/pod/lesson/r1", "--script", "lesson", "--run-id",
                                      "r1", "--plan", p.plan_sha256, "--slice", "v5litepod-16", "--tpu", "pod", "--zone",
                                      "us-central1-a", "--guard-sha256",
                                      guard.sha256, "--file", "public/exercises/lesson.py",
                                      a64 + ":public/exercises/lesson.py"}));
  // One scp of the stage folder's jax-tpu-lab/ into the home folder: it lands in the run's folder.
  EXPECT_EQ(to_shell(step(p, StepKind::stage).line),
            "gcloud compute tpus tpu-vm scp --recurse ./tpu-runs/pod/lesson/r1/stage/jax-tpu-lab pod: "
            "--zone=us-central1-a --worker=all");
  const std::string command = step(p, StepKind::run).line.argv().back();
  EXPECT_EQ(command, "--command=bash ~/jax-tpu-lab/runs/lesson/r1/staged-" + id + "/tpulaunch-run-guard.sh "
                         "--guard-sha256 " + guard.sha256 + " --plan " + p.plan_sha256 +
                         " --script lesson --run-id r1 --file " + a64 +
                         " public/exercises/lesson.py --devices vfio --env JAX_PLATFORMS=tpu --python "
                         "~/jax-tpu-lab/.venv/bin/python -- public/exercises/lesson.py");
  // No --timeout, --grace, --kill-stale or --mark unless asked for (or the plan made the TPU).
  EXPECT_EQ(command.find("--timeout"), std::string::npos);
  EXPECT_EQ(command.find("--kill-stale"), std::string::npos);
  EXPECT_EQ(command.find("--mark"), std::string::npos);
  ASSERT_EQ(p.staged.size(), 1U);
  EXPECT_EQ(p.staged[0], (StagedFile{"public/exercises/lesson.py", "public/exercises/lesson.py", a64}));
}

TEST_F(PlanTest, PlanDigestNamesWhatRunsAndHowAndDefaultRunIdsDiffer) {
  const Plan first = plan("v5litepod-16", RouteKind::multi_host);
  EXPECT_EQ(plan("v5litepod-16", RouteKind::multi_host).plan_sha256, first.plan_sha256);
  m_options.args = {"--steps", "10"};
  const Plan with_args = plan("v5litepod-16", RouteKind::multi_host);
  m_options.args.clear();
  m_options.run_id = "r2";
  const Plan other_run = plan("v5litepod-16", RouteKind::multi_host);
  m_options.run_id = "r1";
  m_status.actual_sha256 = std::string(64, 'b');
  const Plan other_script = plan("v5litepod-16", RouteKind::multi_host);
  for (const Plan* other : {&with_args, &other_run, &other_script}) {
    EXPECT_NE(other->plan_sha256, first.plan_sha256);
  }
  // Plans made in the same second get different default run ids.
  const std::string one = default_run_id();
  const std::string two = default_run_id();
  EXPECT_NE(one, two);
  EXPECT_TRUE(value_rule(ValueKind::run_id).accepts(one)) << one;
}

TEST_F(PlanTest, ScriptInASubfolderKeepsItsCoursePath) {
  m_status.id = "advanced/sub_lesson";
  m_status.path = "public/exercises/advanced/sub_lesson.py";
  m_status.course_path = "public/exercises/advanced/sub_lesson.py";
  const Plan p = plan("v5litepod-16", RouteKind::multi_host);
  EXPECT_EQ(p.remote_run_dir, "jax-tpu-lab/runs/advanced/sub_lesson/r1");
  const std::string command = step(p, StepKind::run).line.argv().back();
  EXPECT_NE(command.find(" public/exercises/advanced/sub_lesson.py --devices"), std::string::npos) << command;
  EXPECT_TRUE(command.ends_with(" -- public/exercises/advanced/sub_lesson.py")) << command;
  EXPECT_EQ(p.local_run_dir, "./tpu-runs/pod/advanced/sub_lesson/r1");
  // The course's own commands copy into ~/jax-tpu-lab/ only.
  m_options.form = PlanForm::course;
  auto course = build_plan(m_status, RouteKind::multi_host, m_catalog->find("v5litepod-16"), m_options);
  ASSERT_FALSE(course.ok());
  EXPECT_EQ(course.error().code, ExitCode::usage);
  EXPECT_NE(course.error().message.find("--course"), std::string::npos);
}

// Two course packages, each with an __init__.py: every file keeps its course-relative path, so
// nothing lands on another (the old layout copied each by its bare name into the home folder).
TEST_F(PlanTest, CourseFilesOfOneNameInTwoPackagesAreStagedApart) {
  m_status.files = {LessonFile{"public/exercises/data/__init__.py", "data/__init__.py", "public/exercises/data/__init__.py",
                               std::string(64, 'b'), false},
                    LessonFile{"public/exercises/model/__init__.py", "model/__init__.py",
                               "public/exercises/model/__init__.py", std::string(64, 'c'), false}};
  const Plan p = plan("v5litepod-16", RouteKind::multi_host);
  ASSERT_EQ(p.staged.size(), 3U);
  EXPECT_EQ(p.staged[1].path, "public/exercises/data/__init__.py");
  EXPECT_EQ(p.staged[2].path, "public/exercises/model/__init__.py");
  EXPECT_NE(step(p, StepKind::run).line.argv().back().find(
                " --file " + std::string(64, 'c') + " public/exercises/model/__init__.py "),
            std::string::npos);
}

// A plan that creates its TPU marks it, and every later step that touches it checks the mark.
TEST_F(PlanTest, CreatedCapacityIsMarkedAndEveryStepOnItChecksTheMark) {
  m_options.lifecycle.capacity = Capacity::create;
  m_options.teardown = true;
  const Plan p = plan("v5litepod-16", RouteKind::multi_host);
  ASSERT_EQ(p.target.mark, p.plan_id());
  const std::string mark_flag = "--metadata=tpulaunch_run=" + p.plan_id();
  const auto argv = step(p, StepKind::create).line.argv();
  EXPECT_NE(std::find(argv.begin(), argv.end(), mark_flag), argv.end());
  for (const Step& s : p.steps) {
    const bool touches = s.kind == StepKind::stage || s.kind == StepKind::bootstrap || s.kind == StepKind::run ||
                         s.kind == StepKind::fetch || s.kind == StepKind::teardown;
    EXPECT_EQ(s.mark_check.has_value(), touches) << s.name();
    if (s.mark_check) {
      EXPECT_EQ(to_shell(*s.mark_check),
                "gcloud compute tpus tpu-vm describe pod --zone=us-central1-a --format='value(metadata.tpulaunch_run)'");
    }
  }
  EXPECT_NE(step(p, StepKind::run).line.argv().back().find(" --mark " + p.plan_id() + " "), std::string::npos);
  // An existing TPU is the user's: no mark, no check.
  m_options.lifecycle.capacity = Capacity::existing;
  const Plan existing = plan("v5litepod-16", RouteKind::multi_host);
  EXPECT_TRUE(existing.target.mark.empty());
  for (const Step& s : existing.steps) {
    EXPECT_FALSE(s.mark_check) << s.name();
  }
}

TEST_F(PlanTest, CpuReceiptOfAScriptInASubfolderGetsItsFolder) {
  m_status.id = "advanced/sub_lesson";
  m_status.path = "public/exercises/advanced/sub_lesson.py";
  PlanOptions options;
  auto result = build_plan(m_status, RouteKind::cpu, nullptr, options);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->cpu_receipt, "advanced/sub_lesson-cpu.txt");
  ASSERT_EQ(result->steps.size(), 2U);
  EXPECT_EQ(to_shell(result->steps[0].line), "mkdir -p advanced/");
  EXPECT_EQ(to_shell(result->steps[1].line), "( set -o pipefail; python3 public/exercises/advanced/sub_lesson.py | tee "
                                             "advanced/sub_lesson-cpu.txt.partial ) && "
                                             "mv -f advanced/sub_lesson-cpu.txt.partial advanced/sub_lesson-cpu.txt");
}

TEST_F(PlanTest, FullFormStagesIntoTheHomeFolder) {
  // A fresh TPU VM has no ~/jax-tpu-lab: the copy goes to the home folder, which always exists.
  const Plan p = plan("v5litepod-16", RouteKind::multi_host);
  EXPECT_TRUE(to_shell(step(p, StepKind::stage).line).ends_with("/stage/jax-tpu-lab pod: --zone=us-central1-a --worker=all"));
}

TEST_F(PlanTest, PythonEnvAndArgsReachTheRunThroughTheQuotingFunction) {
  m_options.python = "~/my env/bin/python";
  m_options.env = {{"SEED", "it's $HOME"}, {"EMPTY", ""}};
  m_options.args = {"--steps", "10 20", "$(id)"};
  const Plan p = plan("v5litepod-8", RouteKind::single_host);
  const std::string command = step(p, StepKind::run).line.argv().back();
  EXPECT_NE(command.find("--env JAX_PLATFORMS=tpu --env SEED='it'\\''s $HOME' --env EMPTY='' --python ~/'my env/bin/python' "
                         "-- public/exercises/lesson.py --steps '10 20' '$(id)'"),
            std::string::npos)
      << command;
  m_options.env = {{"JAX_PLATFORMS", "cpu"}};
  auto refused = build_plan(m_status, RouteKind::single_host, m_catalog->find("v5litepod-8"), m_options);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ExitCode::usage);
  m_options.env = {{"9X", "1"}};
  EXPECT_FALSE(build_plan(m_status, RouteKind::single_host, m_catalog->find("v5litepod-8"), m_options).ok());
  m_options.env.clear();
  m_options.python = "-c";
  EXPECT_FALSE(build_plan(m_status, RouteKind::single_host, m_catalog->find("v5litepod-8"), m_options).ok());
}

TEST_F(PlanTest, PrepareChangesToThePlansFolderAndCreatesTheDownloadFolders) {
  m_options.directory = "/home/a b/course";
  const Plan p = plan("v5litepod-16", RouteKind::multi_host);
  ASSERT_EQ(p.steps[0].kind, StepKind::prepare);
  EXPECT_EQ(to_shell(p.steps[0].line),
            "cd '/home/a b/course' && test ! -e ./tpu-runs/pod/lesson/r1 && mkdir -p ./tpu-runs/pod/lesson/r1/worker-0/ "
            "./tpu-runs/pod/lesson/r1/worker-1/ "
            "./tpu-runs/pod/lesson/r1/worker-2/ ./tpu-runs/pod/lesson/r1/worker-3/");
}

TEST_F(PlanTest, VerifyGetsTheCatalogAndMatrixThePlanUsed) {
  m_options.tpulaunch_program = "/opt/tpulaunch/bin/tpulaunch";
  m_options.matrix_file = "/course/execution-matrix.json";
  m_options.catalog_file = "/course/my catalog.json";
  m_entry.proves = Proves::training;
  const Plan p = plan("v5litepod-8", RouteKind::single_host);
  EXPECT_EQ(to_shell(p.steps.back().line),
            "/opt/tpulaunch/bin/tpulaunch verify ./tpu-runs/pod/lesson/r1 --slice=v5litepod-8 --kind=training "
            "--matrix=/course/execution-matrix.json --catalog='/course/my catalog.json'");
}

TEST_F(PlanTest, RunGuardStatusesAreTheDocumentedOnes) {
  const std::string guard(run_guard_program().text);
  for (const auto& [name, status] :
       {std::pair{"status_running", PipelineStatus::run_running},
        std::pair{"status_not_ours", PipelineStatus::not_ours},
        std::pair{"status_run_exists", PipelineStatus::run_exists}, std::pair{"status_busy", PipelineStatus::tpu_busy},
        std::pair{"status_upload_failed", PipelineStatus::upload_failed},
        std::pair{"status_no_python", PipelineStatus::no_python},
        std::pair{"status_digest_mismatch", PipelineStatus::digest_mismatch},
        std::pair{"status_guard_failed", PipelineStatus::guard_failed},
        std::pair{"status_timed_out", PipelineStatus::timed_out},
        std::pair{"status_mapped_255", PipelineStatus::mapped_255}}) {
    EXPECT_NE(guard.find(fmt::format("readonly {}={}\n", name, to_int(status))), std::string::npos) << name;
  }
  // The test seams, and the paths they move.
  EXPECT_NE(guard.find("root=${TPULAUNCH_GUARD_ROOT:-}"), std::string::npos);
  EXPECT_NE(guard.find("lock_file=\"$root/tmp/libtpu_lockfile\""), std::string::npos);
}

// A TPU route sets JAX_PLATFORMS=tpu; a script whose review records another value (tpu,cpu) runs
// with that one, and --env JAX_PLATFORMS is accepted only when it repeats it.
TEST_F(PlanTest, JaxPlatformsIsTpuUnlessAReviewRecordsAnother) {
  m_options.env = {{"JAX_PLATFORMS", "tpu,cpu"}};
  auto refused = build_plan(m_status, RouteKind::multi_host, m_catalog->find("v5litepod-16"), m_options);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("a TPU route sets JAX_PLATFORMS=tpu itself; another value needs a review"),
            std::string::npos)
      << refused.error().message;
  EXPECT_NE(refused.error().message.find("tpulaunch review lesson "), std::string::npos);

  m_entry.jax_platforms = "tpu,cpu";
  const Plan p = plan("v5litepod-16", RouteKind::multi_host);
  EXPECT_EQ(p.jax_platforms, "tpu,cpu");
  EXPECT_TRUE(p.jax_platforms_reviewed);
  EXPECT_TRUE(p.env.empty()); // the route sets it, once
  const std::string command = step(p, StepKind::run).line.argv().back();
  EXPECT_NE(command.find(" --env JAX_PLATFORMS=tpu,cpu --python "), std::string::npos) << command;
  EXPECT_EQ(command.find("JAX_PLATFORMS=tpu "), std::string::npos) << command;

  m_options.env = {{"JAX_PLATFORMS", "tpu"}};
  auto other = build_plan(m_status, RouteKind::multi_host, m_catalog->find("v5litepod-16"), m_options);
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.error().message.find("sets JAX_PLATFORMS=tpu,cpu itself"), std::string::npos);

  // The course form's own command carries it too; the CPU route sets nothing.
  m_options.env.clear();
  m_options.form = PlanForm::course;
  const Plan course = plan("v5litepod-16", RouteKind::multi_host);
  EXPECT_NE(step(course, StepKind::run).line.argv().back().find("JAX_PLATFORMS=tpu,cpu "), std::string::npos);
  auto cpu = build_plan(m_status, RouteKind::cpu, nullptr, PlanOptions{});
  ASSERT_TRUE(cpu.ok());
  EXPECT_EQ(to_shell(cpu->steps.back().line).find("JAX_PLATFORMS"), std::string::npos);
}

// An --env value the classifier would read as CPU selection in a source is refused on a TPU route by
// the classifier's own table, naming its rule; the CPU route takes it, and a value that selects no
// CPU is passed on.
TEST_F(PlanTest, EnvValuesThatMoveTheWorkOffTheTpuAreRefusedByTheClassifiersTable) {
  struct Case {
    EnvVar var;
    std::string_view rule;
  };
  for (const Case& c :
       {Case{{"JAX_DEFAULT_DEVICE", "cpu"}, "env-default-device-cpu"},
        Case{{"JAX_DEFAULT_DEVICE", " CPU "}, "env-default-device-cpu"},
        Case{{"XLA_FLAGS", "--xla_dump_to=/tmp --xla_force_host_platform_device_count=8"}, "xla-force-host-devices"},
        Case{{"JAX_PLATFORM_NAME", "cpu"}, "env-platforms-cpu"},
        Case{{"JAX_PLATFORMS", "cpu,tpu"}, "env-platforms-cpu"}}) {
    m_options.env = {c.var};
    for (const auto& [slice, route] :
         {std::pair{"v5litepod-16", RouteKind::multi_host}, std::pair{"v5litepod-8", RouteKind::single_host}}) {
      auto refused = build_plan(m_status, route, m_catalog->find(slice), m_options);
      ASSERT_FALSE(refused.ok()) << c.var.name << "=" << c.var.value;
      EXPECT_EQ(refused.error().code, ExitCode::usage);
      EXPECT_NE(refused.error().message.find(fmt::format("--env {}=", c.var.name)), std::string::npos);
      EXPECT_NE(refused.error().message.find(fmt::format("moves the work off the TPU ({}: ", c.rule)),
                std::string::npos)
          << refused.error().message;
    }
    auto discovery = build_discovery_plan(*m_catalog->find("v5litepod-16"), m_options);
    EXPECT_FALSE(discovery.ok()) << c.var.name;
    PlanOptions cpu;
    cpu.env = {c.var};
    EXPECT_TRUE(build_plan(m_status, RouteKind::cpu, nullptr, cpu).ok()) << c.var.name;
  }
  // Every key of the classifier's table is one plan refuses with a CPU value.
  for (const CpuSelectingEnv& row : cpu_selecting_env()) {
    EXPECT_TRUE(env_selects_cpu(row.key, row.key == "XLA_FLAGS" ? "--xla_force_host_platform_device_count=2" : "cpu"))
        << row.key;
  }
  m_options.env = {{"XLA_FLAGS", "--xla_dump_to=/tmp/dump"}, {"JAX_DEFAULT_DEVICE", "tpu"}, {"SEED", "cpu"}};
  const Plan p = plan("v5litepod-16", RouteKind::multi_host);
  EXPECT_EQ(p.env.size(), 3U);
}

// verify checks what the script's review declares its runs prove; a script that declares nothing
// is checked by its logs and recorded statuses, never by a training contract it never made.
TEST_F(PlanTest, VerifyDefaultsToWhatTheReviewDeclaresTheScriptProves) {
  const Plan undeclared = plan("v5litepod-16", RouteKind::multi_host);
  EXPECT_EQ(undeclared.verify, VerifyKind::logs);
  EXPECT_FALSE(undeclared.proves.has_value());
  EXPECT_NE(to_shell(step(undeclared, StepKind::verify).line).find("--kind=logs"), std::string::npos);
  for (const auto& [proves, kind] :
       {std::pair{Proves::training, VerifyKind::training}, std::pair{Proves::discovery, VerifyKind::discovery},
        std::pair{Proves::logs, VerifyKind::logs}}) {
    m_entry.proves = proves;
    const Plan p = plan("v5litepod-16", RouteKind::multi_host);
    EXPECT_EQ(p.verify, kind);
    EXPECT_EQ(p.proves, proves);
    EXPECT_EQ(plan("v5litepod-8", RouteKind::single_host).verify, kind);
  }
  m_options.verify = VerifyKind::logs; // --verify has the last word
  EXPECT_EQ(plan("v5litepod-16", RouteKind::multi_host).verify, VerifyKind::logs);
}

// The reviewed acceptance of a conditional initialize() travels with a multi-host plan only.
TEST_F(PlanTest, AnAcceptedInitializeConditionTravelsWithAMultiHostPlan) {
  m_entry.initialize_condition = InitializeCondition{3, "", "inside `if n > 1:`", "the launcher sets n"};
  const Plan multi = plan("v5litepod-16", RouteKind::multi_host);
  ASSERT_TRUE(multi.initialize_condition.has_value());
  EXPECT_EQ(multi.initialize_condition->reason, "the launcher sets n");
  EXPECT_FALSE(plan("v5litepod-8", RouteKind::single_host).initialize_condition.has_value());
}

TEST_F(PlanTest, DefaultPlanHasNoLifecycleStepsButThePreemptionCheck) {
  const Plan p = plan("v5litepod-16", RouteKind::multi_host);
  EXPECT_EQ(names(p), (std::vector<std::string>{"prepare", "write", "preflight", "preemption-check", "stage", "run",
                                                "fetch", "fetch", "fetch", "fetch", "verify"}));
  EXPECT_FALSE(p.preemptible());
  EXPECT_EQ(step(p, StepKind::preemption_check).when, StepWhen::step_failed);
}

TEST_F(PlanTest, CreateIsAsyncThenWaitsForReadyWithADeadline) {
  m_options.lifecycle.capacity = Capacity::create;
  m_options.lifecycle.provisioning = Provisioning::spot;
  m_options.teardown = true;
  m_options.project = "my-project-1";
  const Plan p = plan("v4-32", RouteKind::multi_host);
  // A created TPU is a fresh VM: the plan bootstraps it. The name is checked before creating.
  EXPECT_EQ(names(p), (std::vector<std::string>{"prepare", "write", "preflight", "name-check", "create", "release", "wait",
                                                "preemption-check", "stage", "bootstrap", "run", "fetch", "fetch", "fetch",
                                                "fetch", "verify", "teardown"}));
  EXPECT_EQ(p.steps[3].line.argv(),
            (std::vector<std::string>{"gcloud", "compute", "tpus", "tpu-vm", "describe", "pod", "--zone=us-central1-a",
                                      "--format=value(state)", "--project=my-project-1"}));
  EXPECT_EQ(p.steps[4].line.argv(),
            (std::vector<std::string>{"gcloud", "compute", "tpus", "tpu-vm", "create", "pod", "--zone=us-central1-a",
                                      "--accelerator-type=v4-32", "--version=tpu-ubuntu2204-base", "--spot", "--async",
                                      "--metadata=tpulaunch_run=" + p.plan_id(), "--project=my-project-1"}));
  EXPECT_EQ(p.steps[5].line.argv(),
            (std::vector<std::string>{"gcloud", "compute", "tpus", "tpu-vm", "delete", "pod", "--zone=us-central1-a",
                                      "--quiet", "--project=my-project-1"}));
  EXPECT_EQ(p.steps[5].when, StepWhen::capacity_unusable);
  const Step& wait = p.steps[6];
  EXPECT_EQ(to_shell(wait.line),
            "gcloud compute tpus tpu-vm describe pod --zone=us-central1-a --format='value(state)' --project=my-project-1");
  ASSERT_TRUE(wait.poll.has_value());
  EXPECT_EQ(wait.poll->until, "READY");
  EXPECT_EQ(wait.poll->every_seconds, 15);
  EXPECT_EQ(wait.poll->deadline_seconds, 1800);
  EXPECT_NE(std::find(wait.poll->stop_on.begin(), wait.poll->stop_on.end(), "PREEMPTED"), wait.poll->stop_on.end());
  EXPECT_EQ(to_shell(p.steps[7].line),
            "gcloud compute tpus tpu-vm describe pod --zone=us-central1-a --format='value(state)' --project=my-project-1");
  EXPECT_EQ(p.steps[7].when, StepWhen::step_failed);
  EXPECT_EQ(p.steps.back().line.argv(), p.steps[5].line.argv());
  EXPECT_EQ(p.steps.back().when, StepWhen::verify_succeeded);
  // v4 exposes /dev/accel*.
  EXPECT_NE(p.steps[10].line.argv().back().find(" --devices accel "), std::string::npos);
}

TEST_F(PlanTest, QueuedResourceIsCreatedPolledAndDeletedWithForce) {
  m_options.lifecycle.capacity = Capacity::queued;
  m_options.lifecycle.provisioning = Provisioning::spot;
  m_options.lifecycle.valid_until = duration(ValueKind::valid_until, "6h");
  m_options.lifecycle.poll = duration(ValueKind::poll, "30s");
  m_options.lifecycle.ready_timeout = duration(ValueKind::ready_timeout, "2h");
  m_options.lifecycle.timeout = duration(ValueKind::timeout, "2h");
  m_options.teardown = true;
  const Plan p = plan("v5litepod-16", RouteKind::multi_host);
  EXPECT_EQ(names(p), (std::vector<std::string>{"prepare", "write", "preflight", "name-check", "queue", "release", "wait",
                                                "preemption-check", "stage", "bootstrap", "run", "fetch", "fetch", "fetch",
                                                "fetch", "verify", "teardown"}));
  EXPECT_EQ(p.target.queued_resource, "pod-qr");
  EXPECT_EQ(p.steps[3].line.argv(),
            (std::vector<std::string>{"gcloud", "compute", "tpus", "queued-resources", "describe", "pod-qr",
                                      "--zone=us-central1-a", "--format=value(state.state)"}));
  EXPECT_EQ(p.steps[4].line.argv(),
            (std::vector<std::string>{"gcloud", "compute", "tpus", "queued-resources", "create", "pod-qr", "--node-id=pod",
                                      "--zone=us-central1-a", "--accelerator-type=v5litepod-16",
                                      "--runtime-version=v2-alpha-tpuv5-lite", "--spot", "--valid-until-duration=6h",
                                      "--metadata=tpulaunch_run=" + p.plan_id()}));
  const std::vector<std::string> release{"gcloud", "compute", "tpus", "queued-resources", "delete", "pod-qr",
                                         "--zone=us-central1-a", "--force", "--quiet"};
  EXPECT_EQ(p.steps[5].line.argv(), release);
  EXPECT_EQ(p.steps.back().line.argv(), release);
  EXPECT_EQ(p.steps[6].line.argv(),
            (std::vector<std::string>{"gcloud", "compute", "tpus", "queued-resources", "describe", "pod-qr",
                                      "--zone=us-central1-a", "--format=value(state.state)"}));
  EXPECT_EQ(p.steps[6].poll->until, "ACTIVE");
  EXPECT_EQ(p.steps[6].poll->stop_on, (std::vector<std::string>{"FAILED", "SUSPENDED", "SUSPENDING", "DELETING"}));
  EXPECT_EQ(p.steps[6].poll->every_seconds, 30);
  EXPECT_EQ(p.steps[6].poll->deadline_seconds, 7200);
  EXPECT_EQ(p.timeout_seconds, 7200);
  const std::string run = p.steps[10].line.argv().back();
  EXPECT_NE(run.find(" --devices vfio --timeout 7200 --grace 30 --env JAX_PLATFORMS=tpu "), std::string::npos);
}

TEST_F(PlanTest, KillStaleAndAnExistingSpotTpu) {
  m_options.lifecycle.provisioning = Provisioning::spot;
  m_options.lifecycle.kill_stale = true;
  m_options.lifecycle.grace = duration(ValueKind::grace, "10s");
  const Plan p = plan("v5litepod-16", RouteKind::multi_host);
  // An existing spot TPU: no create or wait, but the release and the one state query.
  EXPECT_EQ(names(p), (std::vector<std::string>{"prepare", "write", "preflight", "release", "preemption-check", "stage", "run", "fetch",
                                                "fetch", "fetch", "fetch", "verify"}));
  EXPECT_NE(p.steps[6].line.argv().back().find(" --devices vfio --grace 10 --kill-stale --env "), std::string::npos);
}

TEST_F(PlanTest, LifecycleValuesAndCombinationsAreChecked) {
  auto error_of = [&](auto change) {
    PlanOptions saved = m_options;
    change(m_options.lifecycle);
    auto result = build_plan(m_status, RouteKind::multi_host, m_catalog->find("v5litepod-16"), m_options);
    m_options = saved;
    return result.ok() ? std::string("accepted") : result.error().message;
  };
  EXPECT_NE(error_of([](LifecycleOptions& l) {
              l.capacity = Capacity::create;
              l.runtime_version = "v2;reboot";
            }).find("invalid runtime version 'v2;reboot'"),
            std::string::npos);
  EXPECT_NE(error_of([](LifecycleOptions& l) {
              l.capacity = Capacity::queued;
              l.queued_resource = "Bad_QR";
            }).find("invalid queued resource ID 'Bad_QR'"),
            std::string::npos);
  EXPECT_NE(error_of([](LifecycleOptions& l) {
              l.capacity = Capacity::queued;
              l.provisioning = Provisioning::preemptible;
            }).find("--preemptible is a tpu-vm create flag"),
            std::string::npos);
  EXPECT_NE(error_of([](LifecycleOptions& l) { l.provisioning = Provisioning::guaranteed; }).find("needs --queued"),
            std::string::npos);
  EXPECT_NE(error_of([](LifecycleOptions& l) { l.provisioning = Provisioning::reserved; }).find("needs --create or --queued"),
            std::string::npos);
  EXPECT_NE(error_of([](LifecycleOptions& l) { l.valid_until = duration(ValueKind::valid_until, "6h"); }).find("need --queued"), std::string::npos);
  EXPECT_NE(error_of([](LifecycleOptions& l) { l.runtime_version = "v2-alpha"; }).find("need --create or --queued"),
            std::string::npos);
  // A queued resource ID of 64 characters: the TPU name is 61, so <tpu>-qr is too long.
  m_options.tpu = "p" + std::string(60, 'o');
  EXPECT_NE(error_of([](LifecycleOptions& l) { l.capacity = Capacity::queued; }).find("invalid queued resource ID"),
            std::string::npos);
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
  EXPECT_EQ(gcloud_steps, 7); // the preemption check, stage, run and four fetches
}

TEST_F(PlanTest, InvalidValuesAreRefusedBeforeAnyCommandIsBuilt) {
  for (auto mutate : std::vector<void (*)(PlanOptions&)>{
           [](PlanOptions& o) { o.tpu = "Pod"; }, [](PlanOptions& o) { o.tpu = ""; },
           [](PlanOptions& o) { o.zone = "us-central1"; }, [](PlanOptions& o) { o.run_id = "../r"; },
           [](PlanOptions& o) { o.project = "x;y"; }}) {
    PlanOptions options = m_options;
    mutate(options);
    auto result = build_plan(m_status, RouteKind::multi_host, m_catalog->find("v5litepod-16"), options);
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.error().code, ExitCode::usage);
  }
}

TEST_F(PlanTest, CpuRouteKeepsTheCoursesReceipt) {
  auto result = build_plan(m_status, RouteKind::cpu, nullptr, PlanOptions{});
  ASSERT_TRUE(result.ok());
  ASSERT_EQ(result->steps.size(), 1U);
  // In a subshell: pasted, the text form leaves no pipefail in the person's shell.
  EXPECT_EQ(to_shell(result->steps[0].line),
            "( set -o pipefail; python3 public/exercises/lesson.py | tee lesson-cpu.txt.partial ) && "
            "mv -f lesson-cpu.txt.partial lesson-cpu.txt");
  EXPECT_EQ(result->cpu_receipt, "lesson-cpu.txt");
  PlanOptions course;
  course.form = PlanForm::course;
  course.directory = "/c";
  result = build_plan(m_status, RouteKind::cpu, nullptr, course);
  ASSERT_TRUE(result.ok());
  ASSERT_EQ(result->steps.size(), 2U);
  EXPECT_EQ(to_shell(result->steps[0].line), "cd /c");
  EXPECT_EQ(to_shell(result->steps[1].line),
            "( set -o pipefail; python public/exercises/lesson.py | tee lesson-cpu.txt.partial ) && "
            "mv -f lesson-cpu.txt.partial lesson-cpu.txt");
  PlanOptions chosen;
  chosen.python = "/opt/py 3/bin/python";
  chosen.env = {{"A", "x y"}};
  chosen.args = {"-v"};
  result = build_plan(m_status, RouteKind::cpu, nullptr, chosen);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(to_shell(result->steps[0].line), "( set -o pipefail; A='x y' '/opt/py 3/bin/python' "
                                             "public/exercises/lesson.py -v | tee lesson-cpu.txt.partial ) && "
                                             "mv -f lesson-cpu.txt.partial lesson-cpu.txt");
}

TEST_F(PlanTest, DiscoveryPlanWritesDiscoveryReceiptsOnly) {
  auto result = build_discovery_plan(*m_catalog->find("v5litepod-16"), m_options);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->verify, VerifyKind::discovery);
  EXPECT_EQ(result->remote_run_dir, "jax-tpu-lab/runs/discovery/r1");
  // tpulaunch's own program is staged like a script: below code/, checked, and run from there.
  const std::vector<std::string> write = step(*result, StepKind::write).line.argv();
  EXPECT_EQ(write.back(), "--discovery");
  const std::string command = step(*result, StepKind::run).line.argv().back();
  EXPECT_NE(command.find(" --file " + discovery_program().sha256 + " discover.py "), std::string::npos) << command;
  EXPECT_TRUE(command.ends_with(" --python ~/jax-tpu-lab/.venv/bin/python -- discover.py")) << command;
  EXPECT_EQ(command.find("worker-"), std::string::npos);
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
  EXPECT_EQ(step(single, StepKind::stage).workers, Workers::one(0));
  EXPECT_EQ(step(single, StepKind::stage).workers->text(), "0");
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

// --results: the same steps up to the run, whose one ssh call ends with each worker's upload,
// then one local download instead of one per worker.
TEST_F(PlanTest, ResultsReplaceTheFetchesWithOneDownload) {
  m_options.results = "gs://lab-results/course";
  m_options.teardown = true;
  const Plan p = plan("v5litepod-256", RouteKind::multi_host);
  EXPECT_EQ(names(p), (std::vector<std::string>{"prepare", "write", "preflight", "release", "preemption-check", "stage",
                                                "run", "collect", "fetch", "verify", "teardown"}));
  ASSERT_TRUE(p.results_run_url);
  EXPECT_EQ(*p.results_run_url, "gs://lab-results/course/pod/lesson/r1");
  int gcloud_calls = 0;
  for (const auto& s : p.steps) {
    gcloud_calls += s.line.argv().front() == "gcloud" && s.when == StepWhen::always ? 1 : 0;
  }
  EXPECT_EQ(gcloud_calls, 3); // stage, run, collect: for 64 workers as for one
  const Step& collect = step(p, StepKind::collect);
  EXPECT_EQ(collect.kind, StepKind::collect);
  EXPECT_EQ(collect.workers, Workers::all());
  EXPECT_EQ(collect.line.argv(), (std::vector<std::string>{"gcloud", "storage", "cp", "--recursive",
                                                           "gs://lab-results/course/pod/lesson/r1", "./tpu-runs/pod/lesson/"}));
  EXPECT_EQ(run_folder_parent(p), "./tpu-runs/pod/lesson/");
}

TEST_F(PlanTest, ResultsUploadEndsTheRunCallWhateverTheProgramsStatus) {
  m_options.results = "gs://lab-results";
  const Plan p = plan("v5litepod-16", RouteKind::multi_host);
  const std::string command = step(p, StepKind::run).line.argv().back();
  // The run guard uploads after the program, whatever its status (tests/remote/run_guard_test.bash
  // checks what it does); the plan hands it the run's own prefix.
  EXPECT_NE(command.find(" --upload gs://lab-results/pod/lesson/r1 "), std::string::npos) << command;
  // Without --results the run call uploads nothing.
  m_options.results.clear();
  EXPECT_EQ(step(plan("v5litepod-16", RouteKind::multi_host), StepKind::run).line.argv().back().find("--upload"),
            std::string::npos);
}

TEST_F(PlanTest, ResultsUrlIsQuotedAsOneWordAtBothShellLevels) {
  m_options.results = "gs://lab-results/it's a $(prefix)";
  const Plan p = plan("v5litepod-16", RouteKind::multi_host);
  EXPECT_EQ(step(p, StepKind::collect).line.argv()[4], "gs://lab-results/it's a $(prefix)/pod/lesson/r1");
  EXPECT_EQ(to_shell(step(p, StepKind::collect).line),
            "gcloud storage cp --recursive 'gs://lab-results/it'\\''s a $(prefix)/pod/lesson/r1' ./tpu-runs/pod/lesson/");
  // In the remote command the value is one literal; the worker folder after it is the code part.
  const std::string command = step(p, StepKind::run).line.argv().back();
  EXPECT_NE(command.find("--upload 'gs://lab-results/it'\\''s a $(prefix)/pod/lesson/r1' "), std::string::npos) << command;
}

TEST_F(PlanTest, ResultsForDiscoveryMirrorItsLocalFolder) {
  m_options.results = "gs://lab-results/topology/";
  auto result = build_discovery_plan(*m_catalog->find("v5litepod-16"), m_options);
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(*result->results_run_url, "gs://lab-results/topology/pod/discovery/r1");
  EXPECT_EQ(names(*result), (std::vector<std::string>{"prepare", "write", "preflight", "preemption-check", "stage",
                                                      "run", "collect", "fetch", "verify"}));
  EXPECT_EQ(step(*result, StepKind::collect).line.argv().back(), "./tpu-runs/pod/discovery/");
}

TEST_F(PlanTest, ResultsNeedAValidUrl) {
  for (const char* bad : {"gs://Lab/x", "gs://lab-results/*", "lab-results", "gs://lab-results/a/../b"}) {
    m_options.results = bad;
    auto result = build_plan(m_status, RouteKind::multi_host, m_catalog->find("v5litepod-16"), m_options);
    ASSERT_FALSE(result.ok()) << bad;
    EXPECT_EQ(result.error().code, ExitCode::usage);
    EXPECT_NE(result.error().message.find(std::string("'") + bad + "'"), std::string::npos) << result.error().message;
  }
  // --course with --results is refused by the CLI, the one place --course is checked against the
  // options of the full form (tests/e2e/cases.sh, case_plan__results_url_is_validated).
}

TEST(Plan, StepKindsHaveTheirNames) {
  EXPECT_EQ(to_string(StepKind::prepare), "prepare");
  EXPECT_EQ(to_string(StepKind::preflight), "preflight");
  EXPECT_EQ(to_string(StepKind::teardown), "teardown");
  EXPECT_EQ(to_string(StepKind::collect), "collect");
  EXPECT_EQ(to_string(StepKind::preemption_check), "preemption-check");
  EXPECT_EQ(to_string(StepKind::queue), "queue");
  EXPECT_EQ(to_string(StepGroup::none), "");
  EXPECT_EQ(to_string(StepGroup::fetch), "fetch");
  EXPECT_EQ(to_string(StepGroup::run), "run");
  EXPECT_EQ(start_of(StepGroup::run), "together");
  EXPECT_EQ(to_string(OnFailure::stop_the_others), "stop-the-others");
  EXPECT_EQ(to_string(OnFailure::report_after_all), "report-after-all");
  EXPECT_EQ(describe(OnFailure::report_after_all), "a failure never stops the others");
}

TEST(Plan, VerifyKindsRoundTrip) {
  for (const auto kind : k_verify_kinds) {
    EXPECT_EQ(parse_verify_kind(to_string(kind)), kind);
  }
  EXPECT_FALSE(parse_verify_kind("train"));
}

TEST(Plan, DefaultRunIdIsAUtcTimestampAndSixRandomHexDigits) {
  const std::string id = default_run_id();
  ASSERT_EQ(id.size(), 23U);
  EXPECT_EQ(id[8], 'T');
  EXPECT_EQ(id.substr(15, 2), "Z-");
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef", 17), std::string::npos) << id;
}

} // namespace
} // namespace tpulaunch
