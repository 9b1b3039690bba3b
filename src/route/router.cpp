#include "tpulaunch/route/router.hpp"

#include <algorithm>
#include <array>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include "tpulaunch/matrix/overrides.hpp"

namespace tpulaunch {
namespace {

std::optional<ScriptClass> reviewed_class(const RouteRequest& request) { return request.script->route_class(); }

std::optional<Refusal> refuse(std::string_view rule, std::string reason, std::vector<Evidence> evidence = {}) {
  return Refusal{std::string(rule), std::move(reason), std::move(evidence)};
}

std::optional<Refusal> check_reviewed(const RouteRequest& request) {
  if (request.script->reviewed()) {
    return std::nullopt;
  }
  // The rule's name leads the refusal line ("review-required: ..."), so the reason does not repeat
  // it: the state in brackets, as check tags its findings, then what is wrong and what to run.
  return refuse("review-required",
                fmt::format("[{}] {}", to_string(request.script->state), request.script->explanation()));
}

// What a cpu-only script's source says for its class, in words: the CPU selection when there is
// one; otherwise that the review alone keeps it on the CPU (an empty file has no evidence at all).
std::string cpu_only_grounds(const RouteRequest& request) {
  if (request.source != nullptr) {
    const auto rows = request.source->of_category(Category::cpu_selection);
    const auto decided = std::find_if(rows.begin(), rows.end(), [](const Evidence* e) { return !is_undecided(*e); });
    if (decided != rows.end()) {
      return fmt::format("it selects CPU devices at line {} ({})", (*decided)->line, to_string((*decided)->rule));
    }
    if (!rows.empty()) {
      return fmt::format("it may select CPU devices at line {} ({})", rows.front()->line, to_string(rows.front()->rule));
    }
  }
  const std::string& text = request.script->source;
  if (request.source != nullptr && text.find_first_not_of(" \t\r\n\f") == std::string::npos) {
    return "its file is empty: no evidence either way, only the review, which keeps it on the CPU";
  }
  if (request.source != nullptr) {
    return "nothing in its source selects CPU devices, but the review keeps it on the CPU; review it again as "
           "single-host-compatible if it belongs on a TPU";
  }
  return "the review keeps it on the CPU";
}

std::optional<Refusal> check_cpu_only(const RouteRequest& request) {
  if (reviewed_class(request) != ScriptClass::cpu_only || request.slice == nullptr) {
    return std::nullopt;
  }
  return refuse("cpu-only-stays-on-cpu",
                fmt::format("'{}' is cpu-only ({}): on {} its {} chips would sit idle while billing; drop --slice "
                            "for the CPU route",
                            request.script->id, cpu_only_grounds(request), request.slice->name,
                            request.slice->global_chips()));
}

std::optional<Refusal> check_needs_slice(const RouteRequest& request) {
  const auto cls = reviewed_class(request);
  if (request.slice != nullptr || cls == ScriptClass::cpu_only) {
    return std::nullopt;
  }
  return refuse("tpu-class-needs-slice",
                fmt::format("'{}' is {}: it was reviewed for a TPU, not the CPU route; pass --slice (a 1-host slice such "
                            "as v5litepod-8{})",
                            request.script->id, to_string(*cls),
                            cls == ScriptClass::multi_host_qualified ? ", or a multi-host slice such as v5litepod-16" : ""));
}

std::optional<Refusal> check_multi_host(const RouteRequest& request) {
  const Slice* slice = request.slice;
  if (slice == nullptr || !slice->multi_host() || reviewed_class(request) == ScriptClass::multi_host_qualified) {
    return std::nullopt;
  }
  // "the other host never starts", "the other 3 hosts never start": the verb agrees with the count.
  const int others = slice->hosts - 1;
  return refuse(
      "multi-host-needs-qualified",
      fmt::format("{} has {} hosts, and '{}' is {}, not multi-host-qualified: started on one worker it hangs in "
                  "initialization while {} and {} chips sit idle; pick a 1-host slice or review the script as "
                  "multi-host-qualified",
                  slice->name, slice->hosts, request.script->id, to_string(*reviewed_class(request)),
                  others == 1 ? std::string("the other host never starts")
                              : fmt::format("the other {} hosts never start", others),
                  slice->idle_chips_on_worker_zero()));
}

std::optional<Refusal> check_multislice(const RouteRequest& request) {
  if (request.slices <= 1 || request.slice == nullptr || reviewed_class(request) == ScriptClass::multi_host_qualified) {
    return std::nullopt;
  }
  return refuse("multislice-needs-qualified",
                fmt::format("--slices {} runs one program over {} slices of {}, and '{}' is {}, not multi-host-qualified: "
                            "each slice's processes would wait in initialization for the others; review the script as "
                            "multi-host-qualified, or leave --slices out",
                            request.slices, request.slices, request.slice->name, request.script->id,
                            to_string(*reviewed_class(request))));
}

std::optional<Refusal> check_source_cpu(const RouteRequest& request) {
  if (request.source == nullptr || request.slice == nullptr) {
    return std::nullopt;
  }
  auto evidence = unoverridden(request.source->of_category(Category::cpu_selection), request.script->entry);
  if (evidence.empty()) {
    return std::nullopt;
  }
  // Counted before the rows move into the refusal, so the count and the rows shown agree.
  const std::size_t count = evidence.size();
  const bool certain = std::any_of(evidence.begin(), evidence.end(), [](const Evidence& e) { return !is_undecided(e); });
  std::string reason = fmt::format("'{}' {} CPU devices in its source ({}), whatever the matrix says: on {} it "
                                   "would run on the host CPU while the TPU bills; review it again, or record an "
                                   "override with tpulaunch review --override",
                                   request.script->id, certain ? "selects" : "may select (the classifier cannot tell)",
                                   counted(count, "finding"), request.slice->name);
  return refuse("source-selects-cpu", std::move(reason), std::move(evidence));
}

std::optional<Refusal> check_source_initialize(const RouteRequest& request) {
  if (request.source == nullptr || request.slice == nullptr || (!request.slice->multi_host() && request.slices <= 1)) {
    return std::nullopt;
  }
  const auto unmet = unmet_markers(*request.source, request.script->entry);
  if (std::none_of(unmet.begin(), unmet.end(), [](const MultiHostMarker* m) { return m->marker == Marker::initialize; })) {
    return std::nullopt;
  }
  return refuse("source-lacks-initialize",
                fmt::format("'{}' never calls jax.distributed.initialize(), so its {} processes on {} would not form "
                            "one job; add the call and review the script again (an override cannot stand in for it)",
                            request.script->id, request.slice->hosts, request.slice->name));
}

// A multi-host route of a source whose every initialize() runs only under a condition: on a host
// where it does not hold, that process never joins and the others wait in initialization. Only a
// review that says what makes it hold (--initialize-condition, recorded next to the call) lets it by.
std::optional<Refusal> check_source_condition(const RouteRequest& request) {
  if (request.source == nullptr || request.slice == nullptr || (!request.slice->multi_host() && request.slices <= 1)) {
    return std::nullopt;
  }
  const Evidence* call = unaccepted_condition(*request.source, request.script->entry);
  if (call == nullptr) {
    return std::nullopt;
  }
  return refuse("initialize-under-condition",
                fmt::format("'{}' calls jax.distributed.initialize() at {} only under a condition ({}); tpulaunch "
                            "sets none of the values it reads, and on {} the hosts that join would wait in "
                            "initialization for the others: call it unconditionally, or review the script again with "
                            "--initialize-condition REASON saying what makes it hold on every host",
                            request.script->id, evidence_place(*call), call->detail, request.slice->name),
                {*call});
}

const std::array<RoutingRule, 8> k_rules{{
    {"review-required",
     "a script with no entry, an unknown class, a missing file or a changed digest gets no route at all",
     check_reviewed},
    {"cpu-only-stays-on-cpu", "a cpu-only script gets the CPU route only; any TPU slice is refused", check_cpu_only},
    {"tpu-class-needs-slice", "a single-host-compatible or multi-host-qualified script needs --slice",
     check_needs_slice},
    {"multi-host-needs-qualified",
     "a slice with more than one host takes multi-host-qualified scripts only (a single-host script would hang in "
     "initialization with the other hosts' chips idle)",
     check_multi_host},
    {"multislice-needs-qualified",
     "a plan over several slices (--slices) takes multi-host-qualified scripts only (every process of every slice must "
     "join one job)",
     check_multislice},
    {"source-selects-cpu",
     "a TPU route is refused when the source selects CPU devices now, unless the matrix overrides "
     "exactly that evidence",
     check_source_cpu},
    {"source-lacks-initialize",
     "a multi-host route is refused when the source does not call jax.distributed.initialize()",
     check_source_initialize},
    {"initialize-under-condition",
     "a multi-host route is refused when jax.distributed.initialize() runs only under a condition the review did not "
     "accept (review --initialize-condition)",
     check_source_condition},
}};

} // namespace

std::string_view to_string(RouteKind kind) {
  switch (kind) {
  case RouteKind::cpu: return "cpu";
  case RouteKind::single_host: return "single-host";
  case RouteKind::multi_host: return "multi-host";
  }
  return "unknown";
}

std::span<const RoutingRule> routing_rules() { return k_rules; }

Decision decide(const RouteRequest& request) {
  const std::string_view target = request.slice == nullptr ? std::string_view("the CPU") : request.slice->name;
  for (const auto& rule : k_rules) {
    if (auto refusal = rule.check(request)) {
      spdlog::debug("route '{}' on {}: rule {}: refuses", request.script->id, target, rule.id);
      return Decision{std::nullopt, std::move(refusal)};
    }
    spdlog::debug("route '{}' on {}: rule {}: passes", request.script->id, target, rule.id);
  }
  // multi-host-qualified on a 1-host slice runs as single-host: no --worker=all.
  const RouteKind route = request.slice == nullptr       ? RouteKind::cpu
                          : request.slice->multi_host() || request.slices > 1 ? RouteKind::multi_host
                                                        : RouteKind::single_host;
  spdlog::debug("route '{}' on {}: {}", request.script->id, target, to_string(route));
  return Decision{route, std::nullopt};
}

Result<Routing> route_script(const Matrix& matrix, std::string_view id, const Slice* slice, int slices) {
  TPULAUNCH_TRY(ScriptStatus status, resolve_script(matrix, id));
  Routing routing{std::move(status), std::nullopt, {}};
  if (routing.status.classification) {
    routing.source = std::move(routing.status.classification); // the lesson, read by resolve_script
    routing.status.classification.reset();
  } else if (!routing.status.source.empty() || routing.status.reviewed()) {
    // The script with the course files it imports: their evidence counts for it.
    TPULAUNCH_TRY(Lesson lesson, read_lesson(matrix, routing.status));
    routing.source = std::move(lesson.classification);
  }
  if (routing.source) {
    log_classification(routing.status.path, *routing.source);
  }
  routing.decision = decide(RouteRequest{&routing.status, slice, routing.source ? &*routing.source : nullptr, slices});
  return routing;
}

} // namespace tpulaunch
