#include "tpulaunch/run/records.hpp"

#include <array>
#include <charconv>

#include <fmt/format.h>

#include "tpulaunch/gcloud/gcloud.hpp"
#include "tpulaunch/values/validate.hpp"

namespace tpulaunch {
namespace {

// The fields a plan record holds only when they are set, by name.
template <typename P> auto optional_fields(P& plan) {
  return std::array{std::pair{"tpu", &plan.tpu},
                    std::pair{"zone", &plan.zone},
                    std::pair{"project", &plan.project},
                    std::pair{"capacity", &plan.capacity},
                    std::pair{"provisioning", &plan.provisioning},
                    std::pair{"checkpoint-dir", &plan.checkpoint_dir},
                    std::pair{"resumes", &plan.resumes},
                    std::pair{"connection", &plan.connection},
                    std::pair{"script-sha256", &plan.script_sha256}};
}

} // namespace

std::optional<std::string> Record::get(std::string_view key) const {
  for (const auto& [name, value] : fields) {
    if (name == key) {
      return value;
    }
  }
  return std::nullopt;
}

Record parse_record(std::string_view text) {
  Record record;
  while (!text.empty()) {
    const auto end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    const auto equals = line.find('=');
    if (equals != std::string_view::npos) {
      record.fields.emplace_back(std::string(line.substr(0, equals)), std::string(line.substr(equals + 1)));
    }
  }
  return record;
}

std::string format_record(const Record& record) {
  std::string out;
  for (const auto& [name, value] : record.fields) {
    out += fmt::format("{}={}\n", name, value);
  }
  return out;
}

Record to_record(const PlanRecord& plan) {
  Record record{{{"record", std::string(k_plan_record_kind)},
                 {"script", plan.script},
                 {"run-id", plan.run_id},
                 {"plan", plan.plan_sha256},
                 {"slice", plan.slice},
                 {"slices", std::to_string(plan.slices)},
                 {"start", plan.start},
                 {"written", std::to_string(plan.written)}}};
  for (const auto& [key, value] : optional_fields(plan)) {
    if (!value->empty()) {
      record.fields.emplace_back(key, *value);
    }
  }
  return record;
}

namespace {

bool is_hex(std::string_view text, std::size_t size) {
  return text.size() == size && text.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

// The whole of `text` as a number.
template <typename T>
bool parse_number(const std::string& text, T& out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

} // namespace

Result<PlanRecord> parse_plan_record(std::string_view text, std::string_view origin) {
  const Record record = parse_record(text);
  const auto bad = [&](std::string_view what) {
    return config_error(fmt::format("{}: not a tpulaunch plan record ({})", origin, what));
  };
  if (record.value("record") != k_plan_record_kind) {
    return bad(fmt::format("its first line is not record={}", k_plan_record_kind));
  }
  PlanRecord plan;
  plan.script = record.value("script");
  plan.run_id = record.value("run-id");
  plan.plan_sha256 = record.value("plan");
  plan.slice = record.value("slice");
  plan.start = record.value("start");
  if (!value_rule(ValueKind::script_id).accepts(plan.script) || !value_rule(ValueKind::run_id).accepts(plan.run_id)) {
    return bad("its script or run-id is not an id");
  }
  if (!is_hex(plan.plan_sha256, 64) || !is_hex(plan.start, 32)) {
    return bad("its plan or start is not hex of the right length");
  }
  for (const auto& [key, value] : optional_fields(plan)) {
    *value = record.value(key);
  }
  if (!plan.resumes.empty() && !value_rule(ValueKind::run_id).accepts(plan.resumes)) {
    return bad("its resumes is not a run id");
  }
  if (!plan.connection.empty() && !gcloud::connection_from(plan.connection)) {
    return bad("its connection is not internal-ip or tunnel-through-iap");
  }
  const std::string slices = record.value("slices");
  const std::string written = record.value("written");
  if (!parse_number(slices, plan.slices) || plan.slices < 1 || !parse_number(written, plan.written)) {
    return bad("its slices or written is not a number");
  }
  return plan;
}

std::optional<std::string> foreign_run_record(const Record& record, const PlanRecord& plan) {
  if (record.value("script") != plan.script || record.value("run-id") != plan.run_id ||
      record.value("plan") != plan.plan_sha256) {
    return fmt::format("belongs to run {}/{} (plan {}), not to this run {}/{} (plan {}): another run's results",
                       printable(record.value("script")), printable(record.value("run-id")),
                       printable(record.value("plan").substr(0, 16)), plan.script, plan.run_id,
                       plan.plan_sha256.substr(0, 16));
  }
  if (record.value("start") != plan.start) {
    return fmt::format("comes from an earlier start of this plan (start token {}, this one's is {}): a plan pasted or "
                       "run again runs nothing again, so these are the first start's results",
                       printable(record.value("start").substr(0, 8)), plan.start.substr(0, 8));
  }
  return std::nullopt;
}

} // namespace tpulaunch
