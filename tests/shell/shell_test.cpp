#include "tpulaunch/shell/shell.hpp"

#include <stdexcept>

#include <gtest/gtest.h>

namespace tpulaunch {
namespace {

TEST(Shell, LeavesSafeWordsBare) {
  EXPECT_EQ(shell_quote("public/exercises/distributed-02.py"), "public/exercises/distributed-02.py");
  EXPECT_EQ(shell_quote("--zone=us-central1-a"), "--zone=us-central1-a");
  EXPECT_EQ(shell_quote("a@b%c+d=e:f,g.h/i_j-k"), "a@b%c+d=e:f,g.h/i_j-k");
}

TEST(Shell, QuotesEverythingElse) {
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote("$HOME"), "'$HOME'");
  EXPECT_EQ(shell_quote("`id`"), "'`id`'");
  EXPECT_EQ(shell_quote("$(rm -rf ~)"), "'$(rm -rf ~)'");
  EXPECT_EQ(shell_quote("a\nb"), "'a\nb'");
  EXPECT_EQ(shell_quote("~/x"), "'~/x'");
  EXPECT_EQ(shell_quote("a;b|c&d"), "'a;b|c&d'");
  EXPECT_EQ(shell_quote("*.py"), "'*.py'");
  EXPECT_EQ(shell_quote("caf\xc3\xa9"), "'caf\xc3\xa9'");
  EXPECT_EQ(shell_quote("'"), "''\\'''");
}

TEST(Shell, LeadingDashIsNotAQuotingMatter) {
  // Options are refused by validation, not by quoting: quotes do not stop a program reading "-rf".
  EXPECT_EQ(shell_quote("-rf"), "-rf");
}

TEST(Shell, HomeStaysOutsideTheQuotes) {
  EXPECT_EQ(to_shell(home_path("jax-tpu-lab/odd name.py")), "~/'jax-tpu-lab/odd name.py'");
  EXPECT_EQ(to_shell(home_path("jax-tpu-lab/")), "~/jax-tpu-lab/");
  EXPECT_EQ(to_shell(Word("pod:").append(home_path("jax-tpu-lab/"))), "pod:~/jax-tpu-lab/");
}

TEST(Shell, CodePartsAreWrittenAsTheyAre) {
  Word log = home_path("runs/x-tpu-");
  log.append(k_hostname).append(".txt");
  EXPECT_EQ(to_shell(log), "~/runs/x-tpu-\"$(hostname)\".txt");
  EXPECT_EQ(log.text(), "~/runs/x-tpu-\"$(hostname)\".txt");
}

TEST(Shell, FlagValueIsQuotedAfterTheEqualsSign) {
  EXPECT_EQ(to_shell(Word("--command=").append("echo 'hi' there")), "--command='echo '\\''hi'\\'' there'");
}

TEST(Shell, LinesJoinWordsWithSpacesAndCodeAsWritten) {
  constexpr Code k_then{"; "};
  constexpr Code k_pipe{" | "};
  ShellLine line;
  line.word("set").word("-o").word("pipefail").code(k_then).word("echo").word("a b").code(k_pipe).word("tee").word("x");
  EXPECT_EQ(to_shell(line), "set -o pipefail; echo 'a b' | tee x");
  EXPECT_EQ(line.argv(), (std::vector<std::string>{"set", "-o", "pipefail", "echo", "a b", "tee", "x"}));
}

TEST(Shell, TwoLevelsQuoteThroughTheSameFunction) {
  // The remote command is rendered first; its text is one literal word of the local line.
  ShellLine remote;
  remote.word("echo").word("it's $HOME");
  ShellLine local{"gcloud", Word("--command=").append(to_shell(remote))};
  EXPECT_EQ(to_shell(remote), "echo 'it'\\''s $HOME'");
  EXPECT_EQ(to_shell(local), "gcloud --command='echo '\\''it'\\''\\'\\'''\\''s $HOME'\\'''");
}

TEST(Shell, EmptyWordRendersAsEmptyQuotes) { EXPECT_EQ(to_shell(Word()), "''"); }

TEST(Shell, CommentsCannotEndEarly) {
  // A newline would end the comment and make the rest a command; it is shown, not written.
  EXPECT_EQ(to_shell(Comment("id x\nrm -rf ~")), "# id x\\x0arm -rf ~");
  EXPECT_EQ(to_shell(Comment(std::string("a\rb\x7f\0c", 6))), "# a\\x0db\\x7f\\x00c");
  EXPECT_EQ(to_shell(Comment("caf\xc3\xa9 $(id) 'q'")), "# caf\xc3\xa9 $(id) 'q'");
}

TEST(Shell, ScriptIsOneLinePerElement) {
  constexpr Code k_strict{"set -euo pipefail"};
  ShellScript sh;
  sh.code(k_strict).blank().comment("values").line(ShellLine{"readonly", Word(Code{"X="}).append("a b")});
  EXPECT_EQ(to_shell(sh), "set -euo pipefail\n\n# values\nreadonly X='a b'\n");
}

TEST(Shell, HolesAreFilledWithQuotedWordsAndTheRestStaysCode) {
  constexpr Code k_program{"f() { @command@; }\nfor x in \"$@\" \"${a[@]}\"; do exit @status@; done # @status@"};
  const ShellLine line = fill_holes(k_program, {{"command", ShellLine{"echo", "it's"}}, {"status", ShellLine{"92"}}});
  EXPECT_EQ(to_shell(line), "f() { echo 'it'\\''s'; }\nfor x in \"$@\" \"${a[@]}\"; do exit 92; done # 92");
  // A value is words, never code: a hole filled with "$(id)" holds text.
  EXPECT_EQ(to_shell(fill_holes(Code{"echo @message@ >&2"}, {{"message", ShellLine{"$(id)"}}})), "echo '$(id)' >&2");
}

TEST(Shell, AHoleWithoutAValueOrAValueWithoutAHoleIsABug) {
  EXPECT_THROW((void)fill_holes(Code{"exit @status@"}, {}), std::logic_error);
  EXPECT_THROW((void)fill_holes(Code{"exit 1"}, {{"status", ShellLine{"1"}}}), std::logic_error);
  EXPECT_EQ(to_shell(fill_holes(Code{"mail a@b.c @ @@"}, {})), "mail a@b.c @ @@");
}

TEST(Shell, EmbeddedCodeLosesOnlyItsFinalNewlines) {
  constexpr Code k_block = Code{"a\nb\n\n"}.without_final_newline();
  EXPECT_EQ(k_block.text(), "a\nb");
  constexpr Code k_plain = Code{"x"}.without_final_newline();
  EXPECT_EQ(k_plain.text(), "x");
}

} // namespace
} // namespace tpulaunch
