#pragma once
// The notes the sh form puts before a line for shellcheck (and a reader) about the text the line
// quotes: a --command= text that holds `$` for the remote shell; any other value that holds `$` or
// a backquote, which is text here; and a value that holds a backslash before a quote, which the one
// quoting function writes as '\'' again and again, correctly, at two levels. Also the plan's own
// notes, as comments at the script's top. Internal to src/render/.
#include <string>
#include <vector>

#include "tpulaunch/shell/shell.hpp"

namespace tpulaunch::sh_notes {

struct QuotedText {
  bool remote_code = false;     // a --command= text holds $ or a backquote
  bool expansion = false;       // some other value does
  bool backslash_quote = false; // a value holds \' (a quote quoted at two levels does)

  QuotedText& operator|=(const QuotedText& other) {
    remote_code = remote_code || other.remote_code;
    expansion = expansion || other.expansion;
    backslash_quote = backslash_quote || other.backslash_quote;
    return *this;
  }
};

// What `line` quotes that needs a note.
QuotedText quoted_text(const ShellLine& line);
// The notes for `found`.
void add_notes(ShellScript& sh, const QuotedText& found);
// Appends `line` (one command) after its notes.
void add_line(ShellScript& sh, ShellLine line);
// The plan's notes (render_parts::plan_notes, the text form's "notes:") as comments: "# Notes:",
// then each note as "# - …", wrapped at 100 columns. Nothing for no notes.
void add_plan_notes(ShellScript& sh, const std::vector<std::string>& notes);

} // namespace tpulaunch::sh_notes
