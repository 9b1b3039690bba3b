#include "tpulaunch/values/validate.hpp"

#include <gtest/gtest.h>

namespace tpulaunch {
namespace {

bool ok(ValueKind kind, std::string_view value) { return validate_value(kind, value).ok(); }

TEST(Validate, TpuNamesFollowRfc1035) {
  EXPECT_TRUE(ok(ValueKind::tpu_name, "a"));
  EXPECT_TRUE(ok(ValueKind::tpu_name, "my-pod-16"));
  EXPECT_TRUE(ok(ValueKind::tpu_name, std::string(63, 'a')));
  EXPECT_FALSE(ok(ValueKind::tpu_name, std::string(64, 'a')));
  EXPECT_FALSE(ok(ValueKind::tpu_name, ""));
  EXPECT_FALSE(ok(ValueKind::tpu_name, "1pod"));
  EXPECT_FALSE(ok(ValueKind::tpu_name, "pod-"));
  EXPECT_FALSE(ok(ValueKind::tpu_name, "Pod"));
  EXPECT_FALSE(ok(ValueKind::tpu_name, "pod_1"));
  EXPECT_FALSE(ok(ValueKind::tpu_name, "pod;id"));
  EXPECT_FALSE(ok(ValueKind::tpu_name, "-pod"));
}

TEST(Validate, ZonesAreRegionDashLetter) {
  EXPECT_TRUE(ok(ValueKind::zone, "us-central1-a"));
  EXPECT_TRUE(ok(ValueKind::zone, "europe-west4-b"));
  EXPECT_FALSE(ok(ValueKind::zone, "us-central1"));
  EXPECT_FALSE(ok(ValueKind::zone, "us-central1-ab"));
  EXPECT_FALSE(ok(ValueKind::zone, "US-central1-a"));
  EXPECT_FALSE(ok(ValueKind::zone, "us-central1-a "));
  EXPECT_FALSE(ok(ValueKind::zone, ""));
}

TEST(Validate, ProjectIds) {
  EXPECT_TRUE(ok(ValueKind::project, "my-project-123"));
  EXPECT_TRUE(ok(ValueKind::project, "example.com:my-project"));
  EXPECT_FALSE(ok(ValueKind::project, "short"));
  EXPECT_FALSE(ok(ValueKind::project, "My-Project"));
  EXPECT_FALSE(ok(ValueKind::project, "my-project-"));
  EXPECT_FALSE(ok(ValueKind::project, "$(id)-project"));
}

TEST(Validate, ScriptIdsAreSafeWordsAndRunIdsOneWord) {
  EXPECT_TRUE(ok(ValueKind::script_id, "distributed-02"));
  EXPECT_TRUE(ok(ValueKind::script_id, "lesson_3.v2"));
  EXPECT_FALSE(ok(ValueKind::script_id, "../etc/passwd"));
  EXPECT_TRUE(ok(ValueKind::script_id, "advanced/sub_lesson"));
  EXPECT_TRUE(ok(ValueKind::script_id, "a/b/c"));
  EXPECT_FALSE(ok(ValueKind::script_id, "a//b"));
  EXPECT_FALSE(ok(ValueKind::script_id, "/abs"));
  EXPECT_FALSE(ok(ValueKind::script_id, "a/"));
  EXPECT_FALSE(ok(ValueKind::script_id, "a/../b"));
  EXPECT_FALSE(ok(ValueKind::script_id, "a/.hidden"));
  EXPECT_FALSE(ok(ValueKind::script_id, "a/-rf"));
  EXPECT_FALSE(ok(ValueKind::script_id, ".hidden"));
  EXPECT_FALSE(ok(ValueKind::script_id, "-rf"));
  EXPECT_FALSE(ok(ValueKind::script_id, "a b"));
  EXPECT_FALSE(ok(ValueKind::script_id, "a..b"));
  EXPECT_FALSE(ok(ValueKind::script_id, ""));
  EXPECT_TRUE(ok(ValueKind::run_id, "20261202T101500Z"));
  EXPECT_FALSE(ok(ValueKind::run_id, std::string(65, 'a')));
  EXPECT_FALSE(ok(ValueKind::run_id, "a\nb"));
}

TEST(Validate, QueuedResourceIdsFollowTheTpuNameRule) {
  EXPECT_TRUE(ok(ValueKind::queued_resource, "lab-pod-qr"));
  EXPECT_FALSE(ok(ValueKind::queued_resource, "Lab-QR"));
  EXPECT_FALSE(ok(ValueKind::queued_resource, "qr-"));
  EXPECT_FALSE(ok(ValueKind::queued_resource, "qr/../x"));
  EXPECT_FALSE(ok(ValueKind::queued_resource, std::string(64, 'q')));
  EXPECT_FALSE(ok(ValueKind::queued_resource, ""));
}

TEST(Validate, RuntimeVersionsAreGoogleStyleNames) {
  for (const char* good : {"tpu-ubuntu2204-base", "v2-alpha-tpuv5-lite", "v2-alpha-tpuv6e", "tpu-vm-tf-2.16.1-pjrt",
                           "tpu_vm_v4_base"}) {
    EXPECT_TRUE(ok(ValueKind::runtime_version, good)) << good;
  }
  for (const char* bad : {"", "V2-alpha", "2-alpha", "v2-alpha-", "v2.", "v2..1", "v2 alpha", "v2;reboot", "-v2",
                          "v2/../x", "$(id)"}) {
    EXPECT_FALSE(ok(ValueKind::runtime_version, bad)) << bad;
  }
  EXPECT_TRUE(ok(ValueKind::runtime_version, "v" + std::string(62, 'a')));
  EXPECT_FALSE(ok(ValueKind::runtime_version, "v" + std::string(63, 'a')));
}

TEST(Validate, DurationsHaveUnitsLargestFirst) {
  EXPECT_EQ(duration_seconds("30m"), 1800);
  EXPECT_EQ(duration_seconds("2h"), 7200);
  EXPECT_EQ(duration_seconds("1d"), 86400);
  EXPECT_EQ(duration_seconds("1h30m"), 5400);
  EXPECT_EQ(duration_seconds("1d2h3m4s"), 93784);
  EXPECT_EQ(duration_seconds("90m"), 5400);
  EXPECT_EQ(duration_seconds("1s"), 1);
  EXPECT_EQ(duration_seconds("30d"), 30 * 86400);
  for (const char* bad : {"", "0s", "0m0s", "2", "h", "2H", "1.5h", "-1h", "30m1h", "1h1h", "01h", "2 h", "2h ",
                          "31d", "720h1s", "99999999999999999999s", "1w", "2h;", "PT2H"}) {
    EXPECT_FALSE(duration_seconds(bad).has_value()) << bad;
    EXPECT_FALSE(ok(ValueKind::timeout, bad)) << bad;
  }
  const auto status = validate_value(ValueKind::timeout, "2 hours");
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code, ExitCode::usage);
  EXPECT_NE(status.error().message.find("invalid timeout '2 hours' for --timeout"), std::string::npos);
  EXPECT_TRUE(ok(ValueKind::grace, "10s"));
  EXPECT_TRUE(ok(ValueKind::valid_until, "6h"));
}

TEST(Validate, DurationKeepsItsTextAndIsMadeOnlyFromAcceptedText) {
  const auto parsed = Duration::parse(ValueKind::ready_timeout, "1h30m");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->text(), "1h30m");
  EXPECT_EQ(parsed->seconds(), 5400);
  const auto bad = Duration::parse(ValueKind::grace, "0s");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ExitCode::usage);
  EXPECT_NE(bad.error().message.find("invalid grace period '0s' for --grace"), std::string::npos);
  EXPECT_NE(Duration::parse(ValueKind::poll, "often").error().message.find("for --poll"), std::string::npos);
}

TEST(Validate, MessageQuotesTheValueVisibly) {
  auto status = validate_value(ValueKind::tpu_name, "bad\nname");
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code, ExitCode::usage);
  EXPECT_EQ(status.error().message.find('\n'), std::string::npos);
  EXPECT_NE(status.error().message.find("'bad\\x0aname'"), std::string::npos) << status.error().message;
}

TEST(Validate, EnvironmentNamesAreShellNames) {
  EXPECT_TRUE(ok(ValueKind::env_name, "SEED"));
  EXPECT_TRUE(ok(ValueKind::env_name, "_x9"));
  EXPECT_FALSE(ok(ValueKind::env_name, ""));
  EXPECT_FALSE(ok(ValueKind::env_name, "9LIVES"));
  EXPECT_FALSE(ok(ValueKind::env_name, "A-B"));
  EXPECT_FALSE(ok(ValueKind::env_name, "A B"));
  EXPECT_FALSE(ok(ValueKind::env_name, "A=B"));
  EXPECT_FALSE(ok(ValueKind::env_name, "$(id)"));
}

TEST(Validate, InterpretersAreOneLineAndNoOption) {
  EXPECT_TRUE(ok(ValueKind::interpreter, "python3"));
  EXPECT_TRUE(ok(ValueKind::interpreter, "~/venvs/jax 0.4/bin/python"));
  EXPECT_TRUE(ok(ValueKind::interpreter, "/opt/it's/python"));
  EXPECT_FALSE(ok(ValueKind::interpreter, ""));
  EXPECT_FALSE(ok(ValueKind::interpreter, "-c"));
  EXPECT_FALSE(ok(ValueKind::interpreter, "py\nthon"));
  // A folder is not an interpreter, and `command -v` would not say so.
  for (const char* folder : {"/", "~", "~/", "../", "/.", "~/..", "/opt/venv/bin/"}) {
    EXPECT_FALSE(ok(ValueKind::interpreter, folder)) << folder;
  }
}

TEST(Validate, HugeValuesAreCutInMessages) {
  auto status = validate_value(ValueKind::zone, std::string(100000, 'z'));
  ASSERT_FALSE(status.ok());
  EXPECT_LT(status.error().message.size(), 400U);
}

} // namespace
} // namespace tpulaunch
