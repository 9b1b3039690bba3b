// The suggestion policy: which class classify suggests from the evidence, and why. A suggestion
// is never a review.
#include "classify/class_suggestion.hpp"

#include <fmt/format.h>

#include <string>

namespace tpulaunch {
namespace {

// The first row in `category` whose rule is undecided (`undecided`) or decided (`!undecided`).
const Evidence* first_of(const Classification& c, Category category, bool undecided = false) {
  for (const auto& row : c.evidence) {
    if (row.category == category && is_undecided(row) == undecided && row.counts()) {
      return &row;
    }
  }
  return nullptr;
}

const Evidence* first_rule(const Classification& c, Rule rule) {
  for (const auto& row : c.evidence) {
    if (row.rule == rule && row.counts()) {
      return &row;
    }
  }
  return nullptr;
}

} // namespace

// The suggestion, in order (the first branch that applies wins):
//  1. the source does not tokenize cleanly                         -> none (a human reads it)
//  2. CPU selection together with jax.distributed.initialize() or
//     with a TPU backend check                                     -> none, plus a contradiction
//  3. CPU selection                                                -> cpu-only (collectives
//     without initialize() run over CPU devices, e.g. with --xla_force_host_platform_device_count)
//  4. a possible CPU selection (a value the classifier cannot tell) -> none: a reviewer decides
//  5. initialize() with all four multi-host markers                -> multi-host-qualified, unless
//     it runs only under a condition (its row's detail)            -> none: a reviewer decides
//  6. initialize() with markers missing                            -> none: "lacks: ..."
//  7. anything else                                                -> single-host-compatible
// Only decided rows make contradictions or a cpu-only suggestion; an undecided one only ever
// takes a suggestion away (issue: fail closed, never a clean single-host-compatible).
void suggest(Classification& c) {
  const Evidence* cpu = first_of(c, Category::cpu_selection);
  const Evidence* init = first_rule(c, Rule::distributed_initialize);
  const Evidence* backend = first_of(c, Category::backend_assertion);
  if (cpu != nullptr && init != nullptr) {
    c.contradictions.push_back("cpu selection at " + evidence_place(*cpu) +
                               " contradicts jax.distributed.initialize() at " + evidence_place(*init));
  }
  if (cpu != nullptr && backend != nullptr) {
    c.contradictions.push_back("cpu selection at " + evidence_place(*cpu) +
                               " contradicts the TPU backend check at " + evidence_place(*backend));
  }
  if (c.lex_error) {
    c.why = "the source is not valid Python at line " + std::to_string(c.lex_error->line) + ", column " +
            std::to_string(c.lex_error->column) + " (" + c.lex_error->message + "), so evidence may be incomplete";
    return;
  }
  if (!c.contradictions.empty()) {
    c.why = "contradictory evidence: " + c.contradictions.front();
    return;
  }
  if (cpu != nullptr) {
    c.suggested = ScriptClass::cpu_only;
    c.why = fmt::format("selects CPU devices at {} ({})", evidence_place(*cpu), to_string(cpu->rule));
    const Evidence* collective = first_rule(c, Rule::collective);
    if (collective != nullptr) {
      c.why += "; its collectives (" + evidence_place(*collective) +
               ") run over CPU devices without jax.distributed.initialize()";
    }
    return;
  }
  if (const Evidence* maybe = first_of(c, Category::cpu_selection, true)) {
    c.why = fmt::format("may select CPU devices at {} ({}{}{}); a reviewer must decide", evidence_place(*maybe),
                        to_string(maybe->rule), maybe->detail.empty() ? "" : ": ", maybe->detail);
    return;
  }
  if (init != nullptr) {
    const auto missing = missing_multi_host_markers(c);
    const bool conditional = !init->detail.empty();
    if (missing.empty() && !conditional) {
      c.suggested = ScriptClass::multi_host_qualified;
      c.why = "initializes distributed JAX at " + evidence_place(*init) +
              " and has per-process data, a collective and a result check";
      return;
    }
    if (missing.empty()) {
      c.why = fmt::format("initializes distributed JAX at {}, but {}; a reviewer must decide", evidence_place(*init),
                          init->detail);
      return;
    }
    c.why = "initializes distributed JAX at " + evidence_place(*init) + (conditional ? " (conditionally)" : "") +
            " but lacks: ";
    for (std::size_t i = 0; i < missing.size(); ++i) {
      c.why += (i == 0 ? "" : ", ");
      c.why += missing[i];
    }
    return;
  }
  c.suggested = ScriptClass::single_host_compatible;
  if (backend != nullptr) {
    c.why = "checks for a TPU backend at " + evidence_place(*backend) +
            " with no cpu selection and no jax.distributed.initialize()";
  } else if (missing_multi_host_markers(c).size() < multi_host_markers().size()) {
    c.why = "no cpu selection and no jax.distributed.initialize(): its multi-host markers run on one host";
  } else {
    c.why = "no cpu selection and no multi-host markers";
  }
}


} // namespace tpulaunch
