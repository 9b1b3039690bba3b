#include "tpulaunch/render/render.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "support/plan_fixture.hpp"

#include "tpulaunch/json/json_text.hpp"

#include "tpulaunch/catalog/figure.hpp"

namespace tpulaunch {
namespace {

using RenderTest = test_support::PlanFixture;

TEST_F(RenderTest, PlanJsonCarriesUtf8ValuesAndRefusesOthersByName) {
  // Values in UTF-8 (and control bytes, which JSON escapes) are carried as they are.
  m_options.env = {{"SEED", "caf\xc3\xa9 \"1\"\n"}};
  m_options.args = {"--steps", "10"};
  m_options.teardown = true;
  for (const auto& [slice, route] :
       {std::pair{"v5litepod-16", RouteKind::multi_host}, std::pair{"v5litepod-8", RouteKind::single_host}}) {
    const auto text = json_text(plan_json(plan(slice, route)));
    ASSERT_TRUE(text.ok()) << slice;
    const auto j = nlohmann::ordered_json::parse(*text);
    EXPECT_EQ(j["env"]["SEED"], "caf\xc3\xa9 \"1\"\n") << slice;
    EXPECT_EQ(j.dump(2) + "\n", *text) << slice;
  }
  auto cpu = build_plan(m_status, RouteKind::cpu, nullptr, PlanOptions{});
  ASSERT_TRUE(cpu.ok());
  EXPECT_TRUE(json_text(plan_json(*cpu)).ok());
  auto discovery = build_discovery_plan(*m_catalog->find("v5litepod-16"), m_options);
  ASSERT_TRUE(discovery.ok());
  const auto j = plan_json(*discovery);
  EXPECT_EQ(j["receipt"], "discovery");
  EXPECT_EQ(j["expected"]["process_count"], 4);
  EXPECT_EQ(j["expected"]["device_count"], 16);
  // A value that is not UTF-8 is refused, named by where it stands, never printed altered.
  const auto refused = [&](const char* where) {
    const auto text = json_text(plan_json(plan("v5litepod-16", RouteKind::multi_host)));
    EXPECT_FALSE(text.ok()) << where;
    return text.ok() ? std::string() : text.error().message;
  };
  m_options.env = {{"SEED", "caf\xe9"}};
  EXPECT_EQ(refused("env"), "--format json cannot carry the value at /env/SEED: 'caf\\xe9' is not UTF-8 (byte 0xe9 at "
                            "offset 3), and JSON text is UTF-8; give the value in UTF-8, or choose another --format");
  m_options.env = {};
  m_options.args = {"ok", "a\xff"
                          "b"};
  EXPECT_NE(refused("args").find("/args/1: 'a\\xffb'"), std::string::npos);
  m_options.args = {};
  m_options.python = "/opt/py\xc3/bin/python";
  EXPECT_NE(refused("python").find("/python: '/opt/py\\xc3/bin/python' is not UTF-8 (byte 0xc3 at offset 7)"),
            std::string::npos);
}

// Every word of every form is one a person can read: nothing longer than 300 characters (the
// run guard travels as a file, called by name), and the run command as the text form shows it
// fits on a screen and says which interpreter runs which script with which platform.
TEST_F(RenderTest, NoFormPrintsAnOpaqueWord) {
  const auto longest_word = [](const std::string& text) {
    std::size_t longest = 0;
    std::size_t length = 0;
    for (const char c : text) {
      length = (c == ' ' || c == '\n') ? 0 : length + 1;
      longest = std::max(longest, length);
    }
    return longest;
  };
  std::vector<std::pair<std::string, Plan>> plans;
  plans.emplace_back("default", plan("v5litepod-16", RouteKind::multi_host));
  plans.emplace_back("single-host", plan("v5litepod-8", RouteKind::single_host));
  m_options.bootstrap = true;
  m_options.teardown = true;
  plans.emplace_back("bootstrap teardown", plan("v5litepod-16", RouteKind::multi_host));
  m_options.lifecycle.capacity = Capacity::create;
  m_options.lifecycle.provisioning = Provisioning::spot;
  plans.emplace_back("create spot", plan("v5litepod-16", RouteKind::multi_host));
  m_options.lifecycle.capacity = Capacity::queued;
  m_options.lifecycle.provisioning = Provisioning::reserved;
  m_options.lifecycle.timeout = *Duration::parse(ValueKind::timeout, "2h");
  m_options.results = "gs://lab-results/course";
  plans.emplace_back("queued reserved timeout results", plan("v5litepod-16", RouteKind::multi_host));
  auto discovery = build_discovery_plan(*m_catalog->find("v5litepod-16"), m_options);
  ASSERT_TRUE(discovery.ok());
  plans.emplace_back("discovery", *discovery);
  m_options = PlanOptions{};
  m_options.tpu = "pod";
  m_options.zone = "us-central1-a";
  m_options.run_id = "r1";
  m_options.form = PlanForm::course;
  plans.emplace_back("course", plan("v5litepod-16", RouteKind::multi_host));
  for (const auto& [name, p] : plans) {
    for (const std::string& text : {render_text(p), render_sh(p), plan_json(p).dump(2)}) {
      EXPECT_LE(longest_word(text), 300U) << name;
    }
    const Step& run = *std::find_if(p.steps.begin(), p.steps.end(), [](const Step& s) { return s.kind == StepKind::run; });
    const std::string command = to_shell(run.line);
    EXPECT_LT(command.size(), 1000U) << name << ": " << command;
    if (name != "discovery") {
      EXPECT_NE(command.find("JAX_PLATFORMS=tpu"), std::string::npos) << name;
      EXPECT_NE(command.find("/.venv/bin/python"), std::string::npos) << name;
      EXPECT_NE(command.find("lesson.py"), std::string::npos) << name;
    }
  }
}

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
    if (j["steps"][i]["argv"].is_null()) { // shell syntax: the command says it all
      EXPECT_EQ(j["steps"][i]["shell"], to_shell(p.steps[i].line));
      continue;
    }
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
  const auto write = sh.find("\"$TPULAUNCH_PROGRAM\" stage ./tpu-runs/pod/lesson/r1 --script lesson ");
  const auto stage = sh.find("scp --recurse ./tpu-runs/pod/lesson/r1/stage/jax-tpu-lab pod: ");
  const auto run = sh.find("tpu-vm ssh pod");
  const auto fetch = sh.find("fetch_start 3 ");
  const auto wait = sh.find("fetch_wait_all\n");
  const auto verify = sh.find("\"$TPULAUNCH_PROGRAM\" verify ");
  const auto teardown = sh.find("\ngcloud compute tpus tpu-vm delete pod --zone=us-central1-a --quiet\n");
  for (const auto at : {mkdir, write, stage, run, fetch, wait, verify, teardown}) {
    ASSERT_NE(at, std::string::npos) << sh;
  }
  EXPECT_LT(mkdir, write);
  EXPECT_LT(write, stage);
  EXPECT_LT(stage, run);
  EXPECT_LT(run, fetch);
  EXPECT_LT(fetch, wait);
  EXPECT_LT(wait, verify);
  EXPECT_LT(verify, teardown);
  // A failing run must not skip retrieval.
  EXPECT_NE(sh.find(" || run_status=$?\n"), std::string::npos);
}

TEST_F(RenderTest, ShWithResultsDownloadsOnceAndNamesMissingWorkers) {
  m_options.teardown = true;
  m_options.results = "gs://lab-results/course";
  const Plan p = plan("v5litepod-16", RouteKind::multi_host);
  const std::string sh = render_sh(p);
  EXPECT_NE(sh.find("readonly RESULTS=gs://lab-results/course/pod/lesson/r1\n"), std::string::npos) << sh;
  // Per-worker downloads are the fallback for a worker that did not arrive (issue 37 §3).
  EXPECT_NE(sh.find("readonly PARALLEL=8\n"), std::string::npos) << sh;
  EXPECT_NE(sh.find("\nif ! { test ! -e ./tpu-runs/pod/lesson/r1 && mkdir -p ./tpu-runs/pod/lesson/r1/; }; then\n"),
            std::string::npos)
      << sh;
  const auto run = sh.find(" || run_status=$?\n");
  const auto collect =
      sh.find("gcloud storage cp --recursive gs://lab-results/course/pod/lesson/r1 ./tpu-runs/pod/lesson/ || collect_status=$?\n");
  const auto missing = sh.find("if [[ ! -d \"$RUN_DIR/$folder/$RUN_ID\" ]]; then");
  const auto fallback =
      sh.find("\n    mkdir -p ./tpu-runs/pod/lesson/r1/worker-\"$w\"/ && fetch_start \"$p\" gcloud compute "
              "tpus tpu-vm scp --recurse pod:~/jax-tpu-lab/runs/lesson/r1 ./tpu-runs/pod/lesson/r1/"
              "worker-\"$w\"/ --zone=us-central1-a --worker=\"$w\"\n");
  const auto named =
      sh.find("no results from worker(s) ${missing[*]} of $WORKERS in $RESULTS nor from the workers\" >&2");
  const auto run_failed = sh.find("  exit \"$run_status\"\n");
  const auto verify = sh.find("\"$TPULAUNCH_PROGRAM\" verify");
  const auto teardown = sh.rfind("tpu-vm delete pod"); // the last: the first is in the left-running message
  for (const auto at : {run, collect, missing, fallback, named, run_failed, verify, teardown}) {
    ASSERT_NE(at, std::string::npos) << sh;
  }
  EXPECT_LT(run, collect);
  EXPECT_LT(collect, missing);
  EXPECT_LT(missing, fallback);
  EXPECT_LT(fallback, named);
  EXPECT_LT(named, run_failed);
  EXPECT_LT(run_failed, verify);
  EXPECT_LT(verify, teardown);
  const auto j = plan_json(p);
  EXPECT_EQ(j["results"], "gs://lab-results/course/pod/lesson/r1");
  ASSERT_EQ(j["concurrency"].size(), 1U); // the fallback's fetch step
  const auto& fallback_step = j["steps"][j["concurrency"][0]["steps"][0].get<std::size_t>()];
  EXPECT_EQ(fallback_step["when"], "not-collected");
  EXPECT_EQ(fallback_step["make_folder"], "./tpu-runs/pod/lesson/r1/worker-\"$w\"/");
  // The text form's commented fallback makes the worker's folder first, as the sh form does.
  EXPECT_NE(render_text(p).find("#   for ((w = 0; w < 4; w++)); do mkdir -p ./tpu-runs/pod/lesson/r1/worker-\"$w\"/ && "
                                "gcloud compute tpus tpu-vm scp --recurse"),
            std::string::npos)
      << render_text(p);
  EXPECT_EQ(plan_json(plan("v5litepod-8", RouteKind::single_host))["results"], "gs://lab-results/course/pod/lesson/r1");
  m_options.results.clear();
  EXPECT_TRUE(plan_json(plan("v5litepod-8", RouteKind::single_host))["results"].is_null());
  EXPECT_NE(render_text(p).find("results: each worker uploads to gs://lab-results/course/pod/lesson/r1/worker-<i>/"),
            std::string::npos);
}

TEST_F(RenderTest, JsonCarriesTheCheckpointFolderTheResumedRunAndTheConnection) {
  const auto none = plan_json(plan("v5litepod-16", RouteKind::multi_host));
  EXPECT_TRUE(none["checkpoint_dir"].is_null());
  EXPECT_TRUE(none["resumes"].is_null());
  EXPECT_EQ(none["connection"], "external");
  m_options.checkpoint_dir = "gs://lab-results/ckpt";
  m_options.resumes = "r0";
  m_options.connection = Connection::internal_ip;
  const auto j = plan_json(plan("v5litepod-16", RouteKind::multi_host));
  EXPECT_EQ(j["checkpoint_dir"], "gs://lab-results/ckpt");
  EXPECT_EQ(j["resumes"], "r0");
  EXPECT_EQ(j["connection"], "internal-ip");
}

TEST_F(RenderTest, QueuedSpotScriptWaitsReleasesAndChecksPreemption) {
  m_options.lifecycle.capacity = Capacity::queued;
  m_options.lifecycle.provisioning = Provisioning::spot;
  m_options.teardown = true;
  const std::string sh = render_sh(plan("v5litepod-16", RouteKind::multi_host));
  const auto name_check = sh.find("\nif state=$(gcloud compute tpus queued-resources describe pod-qr --zone=us-central1-a "
                                 "--format='value(state.state)' 2>/dev/null); then\n");
  const auto queue = sh.find("\ngcloud compute tpus queued-resources create pod-qr --node-id=pod ");
  // Reported as left running only once the queue call succeeded: never a name the plan did not create.
  const auto trap = sh.find("\n  (($1 == 0)) || tpu_left_running\n}\ntrap 'exit 130' INT\ntrap 'exit 143' TERM\n"
                            "trap 'on_exit $?' EXIT\n");
  ASSERT_NE(name_check, std::string::npos) << sh;
  ASSERT_NE(trap, std::string::npos) << sh;
  EXPECT_LT(name_check, queue);
  EXPECT_LT(queue, trap);
  EXPECT_NE(sh.find(fmt::format("\n  exit {}\nfi", to_int(PipelineStatus::name_taken))), std::string::npos);
  const auto release = sh.find("\nrelease_capacity() {\n  if ! gcloud compute tpus queued-resources delete pod-qr "
                               "--zone=us-central1-a --force --quiet; then\n");
  const auto wait = sh.find("\nwait_for_capacity ACTIVE 'FAILED SUSPENDED SUSPENDING DELETING' 60 43200 "
                            "'queued resource pod-qr'\n");
  const auto check = sh.find("\nnode_state() {\n  case $1 in\n    pod) gcloud compute tpus tpu-vm describe pod "
                             "--zone=us-central1-a --format='value(state)' ;;\n  esac\n}\n");
  const auto stage = sh.find("/stage/jax-tpu-lab pod: --zone=us-central1-a --worker=all || failed_step $?\n");
  const auto run = sh.find(" || run_status=$?\nif ((run_status != 0)); then\n  check_preempted\nfi\n");
  // One look at the TPU after a failure, then the report (which names a preempted worker as such).
  const auto report = sh.find("\nif ((${#fetch_failed[@]} > 0 || run_status != 0)); then\n  check_preempted\nfi\n");
  const auto stop = sh.find("\nreport_workers\nstop_if_preempted\n");
  const auto teardown = sh.rfind("\ngcloud compute tpus queued-resources delete pod-qr --zone=us-central1-a --force --quiet\n");
  for (const auto at : {queue, release, wait, check, stage, run, report, stop, teardown}) {
    ASSERT_NE(at, std::string::npos) << sh;
  }
  EXPECT_LT(report, stop);
  EXPECT_LT(trap, release);
  EXPECT_LT(release, wait);
  EXPECT_LT(wait, check);
  EXPECT_LT(check, stage);
  EXPECT_LT(stage, run);
  EXPECT_LT(run, report);
  EXPECT_LT(report, teardown);
  EXPECT_NE(sh.find("readonly TEARDOWN=1\n"), std::string::npos);
  // The script's own stops use the documented statuses.
  EXPECT_NE(sh.find(fmt::format("\n      exit {}\n", to_int(PipelineStatus::capacity_failed))), std::string::npos);
  EXPECT_NE(sh.find(fmt::format("\n      exit {}\n", to_int(PipelineStatus::capacity_deadline))), std::string::npos);
  EXPECT_NE(sh.find(fmt::format("\n  exit {}\n}}", to_int(PipelineStatus::preempted))), std::string::npos);
}

// An existing TPU, no --teardown: nothing to create, wait for or delete; but a failed step still
// asks the TPU's state once (a TPU made by hand may be a spot one), and an interruption is named.
TEST_F(RenderTest, DefaultScriptHasNoCapacityCodeButThePreemptionCheck) {
  const std::string sh = render_sh(plan("v5litepod-16", RouteKind::multi_host));
  EXPECT_EQ(sh.find("wait_for_capacity"), std::string::npos);
  EXPECT_EQ(sh.find("release_capacity() {"), std::string::npos);
  EXPECT_EQ(sh.find("tpu_left_running"), std::string::npos);
  EXPECT_EQ(sh.find("require_mark"), std::string::npos);
  EXPECT_NE(sh.find("\ncheck_preempted() {\n"), std::string::npos);
  EXPECT_NE(sh.find("\non_exit() {\n"), std::string::npos);
  EXPECT_NE(sh.find("\nreport_workers\n"), std::string::npos);
}

TEST_F(RenderTest, JsonSaysTheLifecycleAndHowWaitPolls) {
  m_options.lifecycle.capacity = Capacity::create;
  m_options.lifecycle.timeout = *Duration::parse(ValueKind::timeout, "30m");
  const auto j = plan_json(plan("v5litepod-16", RouteKind::multi_host));
  EXPECT_EQ(j["lifecycle"]["capacity"], "create");
  EXPECT_EQ(j["lifecycle"]["timeout_seconds"], 1800);
  EXPECT_EQ(j["lifecycle"]["runtime_version"], "v2-alpha-tpuv5-lite");
  EXPECT_EQ(j["lifecycle"]["tpu_devices"], "vfio");
  EXPECT_EQ(j["lifecycle"]["preemption_check"], true);
  EXPECT_EQ(j["mark"], j["plan_sha256"].get<std::string>().substr(0, 16));
  bool saw_wait = false;
  for (const auto& step : j["steps"]) {
    if (step["name"] == "wait") {
      saw_wait = true;
      EXPECT_EQ(step["loop"]["until"], "READY");
      EXPECT_EQ(step["loop"]["every_seconds"], 15);
      EXPECT_EQ(step["loop"]["on_error"], "look-again");
      EXPECT_EQ(step["loop"]["on_stop"], "release");
    }
  }
  EXPECT_TRUE(saw_wait);
}

// Every form says when a step runs: JSON names the condition of each conditional step, local
// gcloud calls are local, and a line of shell syntax is no argv.
TEST_F(RenderTest, JsonMarksConditionalStepsAndShellSyntax) {
  m_options.lifecycle.capacity = Capacity::queued;
  m_options.lifecycle.provisioning = Provisioning::spot;
  m_options.teardown = true;
  const auto j = plan_json(plan("v5litepod-16", RouteKind::multi_host));
  std::map<std::string, nlohmann::ordered_json> by_name;
  for (const auto& step : j["steps"]) {
    by_name.emplace(step["name"].get<std::string>(), step);
  }
  EXPECT_EQ(by_name["release"]["when"], "capacity-unusable");
  EXPECT_EQ(by_name["preemption-check"]["when"], "step-failed");
  EXPECT_EQ(by_name["teardown"]["when"], "verify-succeeded");
  EXPECT_EQ(by_name["teardown"]["condition"], "only after verify succeeded");
  EXPECT_EQ(by_name["stage"]["when"], "always");
  EXPECT_FALSE(by_name["stage"].contains("condition"));
  for (const char* local : {"name-check", "queue", "wait", "release", "teardown"}) {
    EXPECT_EQ(by_name[local]["where"], "local") << local;
  }
  EXPECT_EQ(by_name["name-check"]["expect"], "absent");
  EXPECT_TRUE(by_name["prepare"]["argv"].is_null());
  EXPECT_NE(by_name["prepare"]["shell"].get<std::string>().find("test ! -e ./tpu-runs/pod/lesson/r1 && mkdir -p "), std::string::npos);
  EXPECT_EQ(by_name["stage"]["argv"][0], "gcloud");
  EXPECT_FALSE(by_name["stage"].contains("shell"));
}

// Pasted, every line of the text form runs: no line that deletes anything is a plain command.
TEST_F(RenderTest, TextFormNeverDeletesWhenPasted) {
  for (const Capacity capacity : {Capacity::create, Capacity::queued}) {
    m_options.lifecycle.capacity = capacity;
    m_options.teardown = true;
    const std::string text = render_text(plan("v5litepod-16", RouteKind::multi_host));
    std::istringstream lines(text);
    std::string line;
    bool saw_commented_delete = false;
    while (std::getline(lines, line)) {
      if (line == "notes:") {
        break;
      }
      if (line.find("tpu-vm delete ") == std::string::npos && line.find("queued-resources delete ") == std::string::npos) {
        continue;
      }
      EXPECT_TRUE(line.starts_with("  # ")) << line;
      saw_commented_delete = true;
    }
    EXPECT_TRUE(saw_commented_delete) << text;
    EXPECT_NE(text.find("\n  until state=$(gcloud compute tpus "), std::string::npos) << text;
  }
}

// A plan that creates its TPU bootstraps it (a fresh VM has no interpreter), unless --python
// names one; it checks the name first.
TEST_F(RenderTest, CreatingPlansBootstrapAndCheckTheNameFirst) {
  m_options.lifecycle.capacity = Capacity::create;
  const Plan created = plan("v5litepod-16", RouteKind::multi_host);
  std::vector<std::string> names;
  for (const Step& step : created.steps) {
    names.emplace_back(step.name());
  }
  const auto at = [&](std::string_view name) { return std::find(names.begin(), names.end(), name) - names.begin(); };
  EXPECT_LT(at("name-check"), at("create"));
  // The guard is staged first; the bootstrap goes through it.
  EXPECT_LT(at("wait"), at("stage"));
  EXPECT_LT(at("stage"), at("bootstrap"));
  m_options.python = "/usr/bin/python3";
  const Plan named = plan("v5litepod-16", RouteKind::multi_host);
  EXPECT_TRUE(std::none_of(named.steps.begin(), named.steps.end(),
                           [](const Step& s) { return s.kind == StepKind::bootstrap; }));
}

TEST_F(RenderTest, TextNamesTheRouteAndEveryCommand) {
  const Plan p = plan("v5litepod-8", RouteKind::single_host);
  const std::string text = render_text(p);
  EXPECT_NE(text.find("route:  single-host: v5litepod-8 is 1 host x 8 chips"), std::string::npos) << text;
  for (const auto& s : p.steps) {
    EXPECT_NE(text.find(to_shell(s.line)), std::string::npos) << s.name();
  }
}

// Counts read as English: one host, one chip, one JAX device (a 1-chip slice), plurals otherwise.
TEST_F(RenderTest, TextRouteSentenceCountsInEnglish) {
  const std::string one = render_text(plan("v5litepod-1", RouteKind::single_host));
  EXPECT_NE(one.find("route:  single-host: v5litepod-1 is 1 host x 1 chip; the script runs on worker 0 with 1 JAX "
                     "device\n"),
            std::string::npos)
      << one;
  const std::string eight = render_text(plan("v5litepod-8", RouteKind::single_host));
  EXPECT_NE(eight.find("is 1 host x 8 chips; the script runs on worker 0 with 8 JAX devices\n"), std::string::npos)
      << eight;
  const std::string pod = render_text(plan("v5litepod-16", RouteKind::multi_host));
  EXPECT_NE(pod.find("v5litepod-16 has 4 hosts x 4 chips = 16 chips;"), std::string::npos) << pod;
}

// A value that holds a newline continues on the next line as it is: the text form indents a
// command where it starts, never inside a quoted value, so a paste runs what the sh form runs.
TEST_F(RenderTest, TextIndentsWhereACommandStartsNeverInsideAValue) {
  m_options.args = {"a\nb", "  two\n    four"};
  m_options.env = {{"NOTE", "x\n  y"}};
  const Plan p = plan("v5litepod-8", RouteKind::single_host);
  const std::string text = render_text(p);
  const std::string commands = text.substr(text.find("\ncommands:\n") + 11);
  for (const auto& s : p.steps) {
    if (s.when != StepWhen::always) {
      continue; // commented: its condition says when it runs
    }
    const std::string line = to_shell(s.line);
    EXPECT_NE(commands.find("\n  " + line + "\n"), std::string::npos) << line;
  }
  const Step& run =
      *std::find_if(p.steps.begin(), p.steps.end(), [](const Step& s) { return s.kind == StepKind::run; });
  EXPECT_NE(to_shell(run.line).find("'\\''a\nb'\\''"), std::string::npos) << to_shell(run.line);
  auto cpu = build_plan(m_status, RouteKind::cpu, nullptr, m_options);
  ASSERT_TRUE(cpu.ok());
  EXPECT_NE(render_text(*cpu).find(" 'a\nb' '  two\n    four' "), std::string::npos) << render_text(*cpu);
}

// Values a plan holds reach the script's values, comments, banners and messages as well as its
// commands. Here they are hostile (the plan is altered after building, past validation): run
// through bash with fake gcloud/ssh-add/tpulaunch, whose delete fails so that the "TPU left
// running" message is printed too, the script must treat every one as text.
TEST_F(RenderTest, HostileValuesStayTextInTheWholeScript) {
  namespace fs = std::filesystem;
  const std::string hostile = "x'\"$(touch pwned)`touch pwned`;touch pwned\ntouch pwned # $HOME";
  m_options.teardown = true;
  Plan p = plan("v5litepod-16", RouteKind::multi_host);
  p.script = hostile;
  p.target.tpu = hostile;
  p.target.zone = hostile;
  p.options.run_id = hostile;
  p.local_run_dir = "runs/" + hostile;
  const std::string sh = render_sh(p);
  EXPECT_NE(sh.find("\n# Generated by tpulaunch " TPULAUNCH_VERSION
                    ": x'\"$(touch pwned)`touch pwned`;touch pwned\\x0atouch pwned # $HOME ("),
            std::string::npos)
      << sh;

  const fs::path root = fs::temp_directory_path() / fmt::format("tpulaunch-render-{}", ::getpid());
  fs::remove_all(root);
  fs::create_directories(root / "bin");
  for (const std::string& name : {std::string("gcloud"), std::string("ssh-add"), std::string("tpulaunch")}) {
    std::ofstream(root / "bin" / name) << "#!/bin/sh\nif [ \"$4\" = delete ]; then exit 1; fi\nexit 0\n";
    fs::permissions(root / "bin" / name, fs::perms::owner_all);
  }
  std::ofstream(root / "plan.sh") << sh;
  const std::string command =
      fmt::format("cd '{0}' && env -i PATH='{0}/bin':/usr/bin:/bin bash plan.sh >out 2>err", root.string());
  EXPECT_NE(std::system(command.c_str()), 0); // the delete failed
  std::ostringstream err;
  err << std::ifstream(root / "err").rdbuf();
  EXPECT_FALSE(fs::exists(root / "pwned")) << err.str();
  // The progress lines and the message show the values as they are (the steps themselves were
  // built from the plan's valid values, so they call the fakes).
  EXPECT_NE(err.str().find("tpulaunch: [" + hostile + " on " + hostile + " (v5litepod-16, " + hostile + "), run " +
                           hostile + "] run: "),
            std::string::npos)
      << err.str();
  EXPECT_NE(err.str().find("the TPU is left running: TPU " + hostile + " is still running (and billing). Once you have "
                           "looked at the results, delete it with: gcloud compute tpus tpu-vm delete pod "
                           "--zone=us-central1-a --quiet\n"),
            std::string::npos)
      << err.str();
  fs::remove_all(root);
}

TEST_F(RenderTest, ShSaysWhenTheTpuIsLeftRunning) {
  const std::string without = render_sh(plan("v5litepod-16", RouteKind::multi_host));
  EXPECT_EQ(without.find("tpu_left_running"), std::string::npos);
  m_options.teardown = true;
  const Plan p = plan("v5litepod-16", RouteKind::multi_host);
  const std::string sh = render_sh(p);
  const auto trap = sh.find("\n  (($1 == 0)) || tpu_left_running\n}\ntrap 'exit 130' INT\n");
  ASSERT_NE(trap, std::string::npos) << sh;
  // Set before the first gcloud call, after the local preflight.
  EXPECT_LT(sh.find("ssh-add -l"), trap);
  EXPECT_LT(trap, sh.find("tpu-vm scp --recurse"));
  const std::string text = render_text(p);
  EXPECT_NE(text.find("\nnotes:\n"), std::string::npos) << text;
  EXPECT_NE(text.find("the TPU pod is left running (and billing); once you have looked at the results, delete it with: "
                      "gcloud compute tpus tpu-vm delete pod --zone=us-central1-a --quiet\n"),
            std::string::npos)
      << text;
}

// The sh form carries every note of the text form, as comments before its first command: the
// prerequisites of IAP, of --internal-ips (and of PyPI through Cloud NAT with --bootstrap), the
// interpreter, the TPU left running.
TEST_F(RenderTest, ShCarriesEveryNoteOfTheTextFormAtItsTop) {
  const auto words_of = [](std::string_view text) {
    std::string words;
    std::istringstream in{std::string(text)};
    for (std::string word; in >> word;) {
      words += word == "#" ? "" : word + " ";
    }
    return words;
  };
  for (const Connection connection : {Connection::external, Connection::internal_ip, Connection::iap}) {
    m_options.connection = connection;
    m_options.teardown = true;
    m_options.lifecycle.capacity = Capacity::create;
    m_options.lifecycle.internal_ips = connection != Connection::internal_ip;
    m_options.bootstrap = connection == Connection::external;
    const Plan p = plan("v5litepod-16", RouteKind::multi_host);
    const std::string sh = render_sh(p);
    const std::string top = sh.substr(0, sh.find("\nset -euo pipefail\n"));
    ASSERT_NE(top.size(), sh.size()) << sh;
    ASSERT_NE(top.find("\n# Notes:\n# - "), std::string::npos) << top;
    const std::string text = render_text(p);
    // Every note, word for word (the comments wrap them): none left out, none added.
    EXPECT_EQ(words_of(top.substr(top.find("# Notes:") + 8)), words_of(text.substr(text.find("\nnotes:\n") + 8)))
        << top;
    for (std::string_view line = top; !line.empty();) {
      const auto end = line.find('\n');
      EXPECT_LE(line.substr(0, end).size(), 100U) << line.substr(0, end);
      line.remove_prefix(end == std::string_view::npos ? line.size() : end + 1);
    }
  }
  // The IAP firewall rule and Cloud NAT for --bootstrap with --internal-ips are among them.
  EXPECT_NE(render_sh(plan("v5litepod-16", RouteKind::multi_host)).find("35.235.240.0/20"), std::string::npos);
  m_options.connection = Connection::external;
  m_options.bootstrap = true;
  EXPECT_NE(render_sh(plan("v5litepod-16", RouteKind::multi_host)).find("Cloud NAT"), std::string::npos);
}

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t count = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) {
    ++count;
  }
  return count;
}

// Issue 37 §3: no form grows by a line per worker above k_fetch_lines_max hosts. The largest
// slice (v5p-12288, 1,536 hosts) gives one fetch loop, one folder word, and an sh plan under 20 kB.
TEST_F(RenderTest, RetrievalOfTheLargestSliceIsOneLoop) {
  const Plan p = plan("v5p-12288", RouteKind::multi_host);
  const std::string sh = render_sh(p);
  const std::string text = render_text(p);
  EXPECT_LT(sh.size(), 20000U);
  EXPECT_LT(text.size(), 20000U);
  EXPECT_EQ(count_of(sh, "fetch_start \"$w\" gcloud compute tpus tpu-vm scp"), 1U);
  EXPECT_NE(sh.find("for ((w = 0; w < 1536; w++)); do\n  fetch_start"), std::string::npos);
  EXPECT_NE(sh.find("--worker=\"$w\""), std::string::npos);
  EXPECT_NE(sh.find("/worker-\"$w\"/"), std::string::npos);
  EXPECT_NE(sh.find("/worker-{0..1535}/"), std::string::npos) << "the download folders are one word";
  EXPECT_EQ(sh.find("worker-1535"), std::string::npos);
  EXPECT_EQ(count_of(text, "tpu-vm scp"), 2U); // the stage step's and the one fetch loop's
  EXPECT_NE(text.find("for ((w = 0; w < 1536; w++)); do gcloud compute tpus tpu-vm scp"), std::string::npos);
  EXPECT_NE(text.find("no --results: the 1536 workers' results come back in 1536 gcloud calls"), std::string::npos);
  // JSON states the loop: one fetch step, its command naming the worker "$w".
  const auto j = plan_json(p);
  int fetches = 0;
  for (const auto& step : j["steps"]) {
    if (step["name"] == "fetch") {
      ++fetches;
      EXPECT_EQ(step["each_worker"]["to"], 1535);
      EXPECT_TRUE(step["argv"].is_null());
    }
  }
  EXPECT_EQ(fetches, 1);
  // With --results the plan has no fetch and no note.
  m_options.results = "gs://lab-results/runs";
  const Plan with_results = plan("v5p-12288", RouteKind::multi_host);
  EXPECT_EQ(render_text(with_results).find("no --results"), std::string::npos);
  EXPECT_LT(render_sh(with_results).size(), 20000U);
}

// Up to k_fetch_lines_max hosts each worker keeps its own fetch line (the goldens' plans); above
// it, one loop per slice, labelled by JAX process with --slices.
TEST_F(RenderTest, RetrievalLoopsOnlyAboveTheSmallCount) {
  const std::string eight = render_sh(plan("v5litepod-32", RouteKind::multi_host));
  for (int w = 0; w < 8; ++w) { // one line each (fetch.bash's own comment also says "fetch_start ")
    EXPECT_EQ(count_of(eight, fmt::format("fetch_start {} ", w)), 1U) << w;
  }
  EXPECT_EQ(eight.find("for ((w"), std::string::npos);
  EXPECT_EQ(render_text(plan("v5litepod-64", RouteKind::multi_host)).find("worker-15"), std::string::npos);
  m_slices = 2;
  const Plan two = plan("v5litepod-64", RouteKind::multi_host);
  const std::string sh = render_sh(two);
  EXPECT_EQ(count_of(sh, "for ((w = 0; w < 16; w++)); do"), 2U);
  EXPECT_NE(sh.find("fetch_start \"$w\" "), std::string::npos);
  EXPECT_NE(sh.find("fetch_start \"$((w + 16))\" "), std::string::npos);
  EXPECT_NE(sh.find("/slice-{0..1}/worker-{0..15}/"), std::string::npos);
  EXPECT_NE(sh.find("/slice-1/worker-\"$w\"/"), std::string::npos);
}

TEST(Render, RefusalJsonAndText) {
  const RefusalContext context{"s", "ex/s.py", "cpu-only", "v5litepod-8"};
  Refusal refusal{"cpu-only-stays-on-cpu", "no", {}};
  refusal.evidence.push_back(Evidence{Rule::devices_cpu, Category::cpu_selection, 3, 5, "jax.devices('cpu')", "x"});
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

namespace tpulaunch {
namespace {

// The sh and JSON forms print the failure behaviour the steps state (plan.hpp: OnFailure,
// Step::check_preemption, Step::failure_exit), and decide none of it: changing the data changes
// the script.
TEST_F(RenderTest, ShAndJsonFollowTheStepsFailureData) {
  Plan p = plan("v5litepod-16", RouteKind::multi_host);
  const std::string before = render_sh(p);
  ASSERT_NE(before.find("--worker=all || failed_step $?\n"), std::string::npos) << before;
  ASSERT_NE(before.find("run_status=0\n"), std::string::npos) << before;
  for (Step& step : p.steps) {
    if (step.kind == StepKind::stage || step.kind == StepKind::run) {
      step.check_preemption = false;
      step.on_failure = OnFailure::stop;
    }
    if (step.kind == StepKind::prepare) {
      step.failure_exit = FailureExit{"stated by the step", 7};
    }
    if (step.kind == StepKind::fetch) {
      step.on_failure = OnFailure::keep_status;
    }
  }
  const std::string after = render_sh(p);
  EXPECT_EQ(after.find("|| failed_step $?"), std::string::npos) << after;
  EXPECT_EQ(after.find("run_status=0\n"), std::string::npos) << after;
  EXPECT_NE(after.find("echo 'tpulaunch: error: stated by the step' >&2\n  exit 7\nfi"), std::string::npos) << after;
  const auto json = plan_json(p);
  EXPECT_EQ(json["concurrency"][0]["note"],
            fmt::format("each worker's fetch is independent; {}", describe(OnFailure::keep_status)));
}

} // namespace
} // namespace tpulaunch
