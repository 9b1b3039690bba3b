#pragma once
// The router decides where a script may run, from its review state, the requested slice and the
// evidence in its source. The rules are a table (`routing_rules()`), checked in order; the first
// that refuses names itself and the reason. Fail closed: no rule grants what an earlier one refused.
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tpulaunch/catalog/catalog.hpp"
#include "tpulaunch/classify/classifier.hpp"
#include "tpulaunch/matrix/matrix.hpp"

namespace tpulaunch {

enum class RouteKind { cpu, single_host, multi_host };
std::string_view to_string(RouteKind kind); // "cpu", "single-host", "multi-host"

struct RouteRequest {
  const ScriptStatus* script = nullptr;        // required
  const Slice* slice = nullptr;                // nullptr asks for the CPU route
  const Classification* source = nullptr;      // the script classified again now; nullptr skips the source rules
  int slices = 1;                              // plan --slices: one program over that many slices
};

struct Refusal {
  std::string rule;                 // a routing rule id, e.g. "multi-host-needs-qualified"
  std::string reason;               // one or two sentences, for a person
  std::vector<Evidence> evidence;   // the source lines behind a source rule
};

struct Decision {
  std::optional<RouteKind> route; // set when allowed
  std::optional<Refusal> refusal; // set when refused
  [[nodiscard]] bool allowed() const { return route.has_value(); }
};

struct RoutingRule {
  std::string_view id;
  std::string_view summary; // for docs and --help
  // Returns a refusal when the rule forbids the request.
  std::optional<Refusal> (*check)(const RouteRequest& request);
};

std::span<const RoutingRule> routing_rules();

// Applies every rule in order. Exactly one of route/refusal is set.
Decision decide(const RouteRequest& request);

// One script routed now, as plan and check both need it: its state in the matrix (with the course
// files to stage with it, ScriptStatus::files), its source classified again with those files (the
// matrix says what was reviewed, the source says what would run now), and the decision for
// `slice` (nullptr: the CPU route).
struct Routing {
  ScriptStatus status;
  std::optional<Classification> source; // set when there is a source to classify
  Decision decision;
};

// Resolves `id` in `matrix`, then classifies and decides. An Error as resolve_script or
// read_lesson gives one.
Result<Routing> route_script(const Matrix& matrix, std::string_view id, const Slice* slice, int slices = 1);

} // namespace tpulaunch
