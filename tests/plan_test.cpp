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

  const Catalog* m_catalog = &test_support::embedded_catalog();
  MatrixEntry m_entry;
  ScriptStatus m_status;
  PlanOptions m_options;
};

TEST_F(PlanTest, MultiHostFullFormStepsInOrder) {
  m_options.bootstrap = true;
  m_options.teardown = true;
  const Plan p = plan("v5litepod-16", RouteKind::multi_host);
  EXPECT_EQ(names(p), (std::vector<std::string>{"prepare", "preflight", "bootstrap", "stage", "run", "fetch", "fetch",
                                                "fetch", "fetch", "verify", "teardown"}));
  EXPECT_EQ(count_worker_all(p), 3); // bootstrap, stage, run
  EXPECT_EQ(p.verify, VerifyKind::training);
}

TEST_F(PlanTest, SingleHostHasNoWorkerAllAndNoPreflight) {
  const Plan p = plan("v5litepod-8", RouteKind::single_host);
  EXPECT_EQ(count_worker_all(p), 0);
  EXPECT_EQ(names(p), (std::vector<std::string>{"prepare", "stage", "run", "fetch", "verify"}));
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
  EXPECT_EQ(names(p), (std::vector<std::string>{"prepare", "stage", "run", "fetch", "fetch", "fetch", "fetch"}));
  EXPECT_EQ(to_shell(p.steps[1].line),
            "gcloud compute tpus tpu-vm scp public/exercises/lesson.py pod:~/jax-tpu-lab/ --zone=us-central1-a --worker=all");
  EXPECT_EQ(to_shell(p.steps[2].line),
            "gcloud compute tpus tpu-vm ssh pod --zone=us-central1-a --worker=all --command='set -o pipefail; "
            "JAX_PLATFORMS=tpu ~/jax-tpu-lab/.venv/bin/python ~/jax-tpu-lab/lesson.py | tee "
            "~/jax-tpu-lab/lesson-tpu.txt'");
}

TEST_F(PlanTest, RunStepChecksTheDigestAndMaps255InTheSameCall) {
  const Plan p = plan("v5litepod-16", RouteKind::multi_host);
  const auto& run = p.steps[3];
  ASSERT_EQ(run.kind, StepKind::run);
  const std::string command = run.line.argv().back();
  ASSERT_EQ(command.rfind("--command=", 0), 0U);
  EXPECT_NE(command.find(std::string(64, 'a') + " ~/jax-tpu-lab/lesson.py | sha256sum --check --status"), std::string::npos);
  EXPECT_NE(command.find("exit 97"), std::string::npos);
  EXPECT_NE(command.find("TPU_RUN_DIR=~/jax-tpu-lab/runs/r1/artifacts"), std::string::npos);
  EXPECT_NE(command.find("lesson-tpu-\"$(hostname)\".txt"), std::string::npos);
  EXPECT_NE(command.find("-eq 255 ]; then status=254"), std::string::npos);
  // The run folder comes first (every fetch finds it), then the staged file is moved into place
  // and checked, then the interpreter, all before the program, in the one remote command.
  EXPECT_LT(command.find("mkdir -p ~/jax-tpu-lab/runs/r1/artifacts || exit 1; "),
            command.find("mv -f ~/lesson.py ~/jax-tpu-lab/lesson.py || exit 1; "));
  EXPECT_LT(command.find("mv -f"), command.find("sha256sum"));
  EXPECT_LT(command.find("sha256sum"), command.find("command -v ~/jax-tpu-lab/.venv/bin/python >/dev/null || "));
  EXPECT_NE(command.find("has no Python interpreter at\" '~/jax-tpu-lab/.venv/bin/python'\"; run the plan with "
                         "--bootstrap, or choose one with --python PATH\" >&2; exit 96; }"),
            std::string::npos)
      << command;
  EXPECT_LT(command.find("command -v"), command.find("JAX_PLATFORMS=tpu ~/jax-tpu-lab/.venv/bin/python ~/jax-tpu-lab/lesson.py"));
}

TEST_F(PlanTest, FullFormStagesIntoTheHomeFolder) {
  // A fresh TPU VM has no ~/jax-tpu-lab: the copy goes to the home folder, which always exists.
  const Plan p = plan("v5litepod-16", RouteKind::multi_host);
  ASSERT_EQ(p.steps[2].kind, StepKind::stage);
  EXPECT_EQ(to_shell(p.steps[2].line),
            "gcloud compute tpus tpu-vm scp public/exercises/lesson.py pod: --zone=us-central1-a --worker=all");
}

TEST_F(PlanTest, PythonEnvAndArgsReachTheRunThroughTheQuotingFunction) {
  m_options.python = "~/my env/bin/python";
  m_options.env = {{"SEED", "it's $HOME"}, {"EMPTY", ""}};
  m_options.args = {"--steps", "10 20", "$(id)"};
  const Plan p = plan("v5litepod-8", RouteKind::single_host);
  const std::string command = p.steps[2].line.argv().back();
  EXPECT_NE(command.find("command -v ~/'my env/bin/python' >/dev/null || "), std::string::npos) << command;
  EXPECT_NE(command.find("JAX_PLATFORMS=tpu SEED='it'\\''s $HOME' EMPTY='' ~/'my env/bin/python' ~/jax-tpu-lab/lesson.py "
                         "--steps '10 20' '$(id)' 2>&1 | tee"),
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
            "cd '/home/a b/course' && mkdir -p ./tpu-runs/pod/lesson/r1/worker-0/ ./tpu-runs/pod/lesson/r1/worker-1/ "
            "./tpu-runs/pod/lesson/r1/worker-2/ ./tpu-runs/pod/lesson/r1/worker-3/");
}

TEST_F(PlanTest, VerifyGetsTheCatalogAndMatrixThePlanUsed) {
  m_options.verify_program = "/opt/tpulaunch/bin/tpulaunch";
  m_options.matrix_file = "/course/execution-matrix.json";
  m_options.catalog_file = "/course/my catalog.json";
  const Plan p = plan("v5litepod-8", RouteKind::single_host);
  EXPECT_EQ(to_shell(p.steps.back().line),
            "/opt/tpulaunch/bin/tpulaunch verify ./tpu-runs/pod/lesson/r1 --slice=v5litepod-8 --kind=training "
            "--matrix=/course/execution-matrix.json --catalog='/course/my catalog.json'");
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

TEST_F(PlanTest, CpuRouteKeepsTheCoursesReceipt) {
  auto result = build_plan(m_status, RouteKind::cpu, nullptr, PlanOptions{});
  ASSERT_TRUE(result.ok());
  ASSERT_EQ(result->steps.size(), 1U);
  EXPECT_EQ(to_shell(result->steps[0].line), "set -o pipefail; python3 public/exercises/lesson.py | tee lesson-cpu.txt");
  EXPECT_EQ(result->cpu_receipt, "lesson-cpu.txt");
  PlanOptions course;
  course.form = PlanForm::course;
  course.directory = "/c";
  result = build_plan(m_status, RouteKind::cpu, nullptr, course);
  ASSERT_TRUE(result.ok());
  ASSERT_EQ(result->steps.size(), 2U);
  EXPECT_EQ(to_shell(result->steps[0].line), "cd /c");
  EXPECT_EQ(to_shell(result->steps[1].line), "set -o pipefail; python public/exercises/lesson.py | tee lesson-cpu.txt");
  PlanOptions chosen;
  chosen.python = "/opt/py 3/bin/python";
  chosen.env = {{"A", "x y"}};
  chosen.args = {"-v"};
  result = build_plan(m_status, RouteKind::cpu, nullptr, chosen);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(to_shell(result->steps[0].line),
            "set -o pipefail; A='x y' '/opt/py 3/bin/python' public/exercises/lesson.py -v | tee lesson-cpu.txt");
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
      const auto start = command.find("printf %s ") + 10;
      const std::string encoded = command.substr(start, command.find(" | base64") - start);
      EXPECT_EQ(encoded.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="),
                std::string::npos)
          << "the program needs no quoting: " << encoded;
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
  ASSERT_EQ(single.steps[1].kind, StepKind::stage);
  EXPECT_EQ(single.steps[1].workers, Workers::one(0));
  EXPECT_EQ(single.steps[1].workers->text(), "0");
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
  EXPECT_EQ(names(p), (std::vector<std::string>{"prepare", "preflight", "stage", "run", "collect", "verify", "teardown"}));
  ASSERT_TRUE(p.results_run_url);
  EXPECT_EQ(*p.results_run_url, "gs://lab-results/course/pod/lesson/r1");
  int gcloud_calls = 0;
  for (const auto& s : p.steps) {
    gcloud_calls += s.line.argv().front() == "gcloud" && s.kind != StepKind::teardown ? 1 : 0;
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
  const std::string upload = "gcloud storage cp --recursive ~/jax-tpu-lab/runs/r1 gs://lab-results/pod/lesson/r1/worker-\"$w\"/";
  ASSERT_NE(command.find(upload), std::string::npos) << command;
  // The worker's index is the VM's own (the metadata server), checked to be digits.
  const std::string metadata = "w=$(curl -sSf -m 10 -H 'Metadata-Flavor: Google' "
                               "http://metadata.google.internal/computeMetadata/v1/instance/attributes/agent-worker-number) && "
                               "case $w in '' | *[!0-9]*) false ;; esac && ";
  EXPECT_NE(command.find(metadata + upload), std::string::npos) << command;
  // After the program's pipeline, whatever its status (status=$? first), before the 255 mapping
  // and the exit; a failed upload makes a clean run 95 and keeps a failed run's status.
  const auto tee = command.find("| tee ");
  const auto kept = command.find("; status=$?; w=$(curl");
  const auto failed = command.find("could not upload its results");
  const auto mapped = command.find("if [ \"$status\" -eq 255 ]; then status=254; fi; exit \"$status\"");
  for (const auto at : {tee, kept, failed, mapped}) {
    ASSERT_NE(at, std::string::npos) << command;
  }
  EXPECT_LT(tee, kept);
  EXPECT_LT(kept, failed);
  EXPECT_LT(failed, mapped);
  EXPECT_NE(command.find("if [ \"$status\" -eq 0 ]; then status=95; fi"), std::string::npos) << command;
  EXPECT_EQ(k_remote_upload_failed, 95);
  // Without --results the run call uploads nothing.
  m_options.results.clear();
  EXPECT_EQ(step(plan("v5litepod-16", RouteKind::multi_host), StepKind::run).line.argv().back().find("storage"), std::string::npos);
}

TEST_F(PlanTest, ResultsUrlIsQuotedAsOneWordAtBothShellLevels) {
  m_options.results = "gs://lab-results/it's a $(prefix)";
  const Plan p = plan("v5litepod-16", RouteKind::multi_host);
  EXPECT_EQ(step(p, StepKind::collect).line.argv()[4], "gs://lab-results/it's a $(prefix)/pod/lesson/r1");
  EXPECT_EQ(to_shell(step(p, StepKind::collect).line),
            "gcloud storage cp --recursive 'gs://lab-results/it'\\''s a $(prefix)/pod/lesson/r1' ./tpu-runs/pod/lesson/");
  // In the remote command the value is one literal; the worker folder after it is the code part.
  const std::string command = step(p, StepKind::run).line.argv().back();
  EXPECT_NE(command.find("'gs://lab-results/it'\\''s a $(prefix)/pod/lesson/r1'/worker-\"$w\"/"), std::string::npos)
      << command;
}

TEST_F(PlanTest, ResultsForDiscoveryMirrorItsLocalFolder) {
  m_options.results = "gs://lab-results/topology/";
  auto result = build_discovery_plan(*m_catalog->find("v5litepod-16"), m_options);
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(*result->results_run_url, "gs://lab-results/topology/pod/discovery/r1");
  EXPECT_EQ(names(*result), (std::vector<std::string>{"prepare", "preflight", "run", "collect", "verify"}));
  EXPECT_EQ(step(*result, StepKind::collect).line.argv().back(), "./tpu-runs/pod/discovery/");
}

TEST_F(PlanTest, ResultsNeedAValidUrlAndTheFullForm) {
  for (const char* bad : {"gs://Lab/x", "gs://lab-results/*", "lab-results", "gs://lab-results/a/../b"}) {
    m_options.results = bad;
    auto result = build_plan(m_status, RouteKind::multi_host, m_catalog->find("v5litepod-16"), m_options);
    ASSERT_FALSE(result.ok()) << bad;
    EXPECT_EQ(result.error().code, ExitCode::usage);
    EXPECT_NE(result.error().message.find(std::string("'") + bad + "'"), std::string::npos) << result.error().message;
  }
  m_options.results = "gs://lab-results";
  m_options.form = PlanForm::course;
  auto course = build_plan(m_status, RouteKind::multi_host, m_catalog->find("v5litepod-16"), m_options);
  ASSERT_FALSE(course.ok());
  EXPECT_EQ(course.error().code, ExitCode::usage);
}

TEST(Plan, StepKindsHaveTheirNames) {
  EXPECT_EQ(to_string(StepKind::prepare), "prepare");
  EXPECT_EQ(to_string(StepKind::preflight), "preflight");
  EXPECT_EQ(to_string(StepKind::teardown), "teardown");
  EXPECT_EQ(to_string(StepKind::collect), "collect");
  EXPECT_EQ(concurrent_group(StepKind::fetch), "fetch");
  EXPECT_EQ(concurrent_group(StepKind::collect), "");
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
