#pragma once
// What the three renderers (text.cpp, sh.cpp, json.cpp) share: the words for a step's condition,
// the notes a plan carries, and finding a step by kind. Internal to src/render/.
#include <string>
#include <vector>

#include "tpulaunch/plan/plan.hpp"
#include "tpulaunch/shell/shell.hpp"

namespace tpulaunch::render_parts {

// What a conditional step waits for, in words: the text form's label, the sh form's comment and
// the JSON form's "condition". Empty for a step that always runs.
std::string condition_text(const Plan& plan, const Step& step);
// What a person must know that the commands do not say: the text form's "notes:", the JSON
// form's "notes", the sh form's comments at its top.
std::vector<std::string> plan_notes(const Plan& plan);
// The plan's first step of that kind, or nullptr.
const Step* find_step(const Plan& plan, StepKind kind);

// A step's line as a pasted line runs it: `test "$(MARK-CHECK)" = MARK && LINE` for a step that
// needs the plan's mark (Step::mark_check), so a paste after a failed create touches nothing; the
// line itself otherwise.
ShellLine pasted_line(const Plan& plan, const Step& step);
// for ((w = 0; w < N; w++)); do BODY; done, N the step's each_worker: on one line, or (on_lines)
// with the body on its own line, as the sh form writes it.
ShellLine each_worker_loop(const Step& step, const ShellLine& body, bool on_lines = false);

// A state read into $state, or words that say it could not be read (the name check, the text
// form's wait).
inline constexpr Code k_state_or_unread{"\"${state:-not readable}\""};

} // namespace tpulaunch::render_parts
