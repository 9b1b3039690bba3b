#pragma once
// Renderers: a Plan (or a refusal) as text for a person, a runnable bash script, or JSON. Every
// command goes through to_shell (shell.hpp); nothing here builds command text by hand.
#include <string>

#include <nlohmann/json.hpp>

#include "tpulaunch/plan/plan.hpp"
#include "tpulaunch/route/router.hpp"

namespace tpulaunch {

std::string render_text(const Plan& plan);
// A complete bash script: shebang, `set -euo pipefail`, the values at the top, local folders
// created, every step in order, bounded parallel fetches, teardown only after success.
std::string render_sh(const Plan& plan);
// The plan as a JSON document (json_text prints it): its values, every step with its argv and
// rendered command, the concurrency groups and the notes; a discovery plan also says what each
// worker's receipt must report.
nlohmann::ordered_json plan_json(const Plan& plan);
nlohmann::ordered_json slice_json(const Slice& slice);

struct RefusalContext {
  std::string script;
  std::string path;
  std::string script_class; // reviewed class or "review-required"
  std::string slice;        // "" for the CPU route
};
// For a person (stderr): "tpulaunch: refused: <rule>: <reason>" and one line per evidence item.
std::string render_refusal_text(const RefusalContext& context, const Refusal& refusal);
nlohmann::ordered_json refusal_json(const RefusalContext& context, const Refusal& refusal);

} // namespace tpulaunch
