#pragma once
// What the sh form's files share (internal to src/render/): the emitter type, the small line
// builders every emitter uses, the case-on-$1 pieces, and the emitters of the TPU's life, which
// sh_capacity.cpp holds (name check, release, wait, preemption check, the mark check and what is
// said about a TPU left running). sh.cpp puts them in order.
#include <span>
#include <string>

#include "tpulaunch/plan/plan.hpp"
#include "tpulaunch/shell/shell.hpp"
#include "tpulaunch/util/exit_code.hpp"

namespace tpulaunch::sh_parts {

// One emitter per step kind. Each gets the steps of one group: a single step, or every step of a
// concurrent group (the fetches) at once.
using ShEmitter = void (*)(ShellScript& sh, const Plan& plan, std::span<const Step> steps);

inline constexpr Code k_to_stderr{" >&2"};
inline constexpr Code k_exit_open{"\n  exit "};
inline constexpr Code k_fi{"\nfi"};
// case $1 in PATTERN) LINE ;; ... esac: a function's one branch per node or slice.
inline constexpr Code k_case_on_node{"case $1 in"};
inline constexpr Code k_case_branch_start{"\n    "};
inline constexpr Code k_case_pattern_end{") "};
inline constexpr Code k_case_branch_end{" ;;"};
inline constexpr Code k_case_end{"\n  esac"};

// A status of the script's own stops, as the one word that fills its hole.
ShellLine status_word(PipelineStatus status);
// readonly NAME=value
ShellLine readonly_value(Code name_equals, std::string value);
// echo MESSAGE >&2, the message one quoted word.
ShellLine echo_error(std::string message);
// step 'NAME: SUMMARY': the progress line on stderr.
ShellLine step_banner(const Step& step);

// The emitters of the TPU's life (sh_capacity.cpp).
void emit_name_check(ShellScript& sh, const Plan& plan, std::span<const Step> steps);
void emit_release(ShellScript& sh, const Plan& plan, std::span<const Step> steps);
void emit_wait(ShellScript& sh, const Plan& plan, std::span<const Step> steps);
void emit_preemption_check(ShellScript& sh, const Plan& plan, std::span<const Step> steps);
// tpu_left_running, when the plan may leave the TPU running (it made it, or --teardown), and
// require_mark, when the plan made the TPU: functions of the prelude.
void add_capacity_functions(ShellScript& sh, const Plan& plan);
// The exit trap (left_running_trap.bash), from the first step that uses the TPU on: an
// interruption is named, and what is left running is said.
void add_exit_trap(ShellScript& sh, const Plan& plan);

} // namespace tpulaunch::sh_parts
