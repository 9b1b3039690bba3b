#pragma once
// verify's reading of one receipt (internal to src/receipts/): typed fields of untrusted JSON,
// each problem a finding that names the worker and the field.
#include <cmath>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tpulaunch/receipts/verify.hpp"

namespace tpulaunch::receipts {

using json = nlohmann::json;

// The receipts hold float32 results printed as doubles; compare as numpy.allclose does.
inline bool close(double a, double b) { return std::fabs(a - b) <= 1e-8 + 1e-5 * std::fabs(b); }

// How a finding names a JSON value's type: "an integer", "a number", or nlohmann's name ("string", "object", …).
std::string_view json_type_name(const json& value);

// The JSON types a receipt field may need.
enum class Type { integer, number, string, array };

// One receipt being checked: reads typed fields, and turns every problem into a finding that names
// the worker and the field (or, for the checkpoint, the file and the field).
class Receipt {
public:
  Receipt(VerifyReport& report, int worker, const json& value, std::string file = "")
      : m_report(report), m_worker(worker), m_value(value), m_file(std::move(file)) {}

  void add(std::string_view field, std::string message) const {
    if (m_file.empty()) {
      m_report.findings.push_back(VerifyFinding{m_worker, std::string(field), std::move(message)});
    } else {
      m_report.findings.push_back(VerifyFinding{m_worker, m_file, fmt::format("{}: {}", field, message)});
    }
  }

  // The member `key` when it exists and has `type`; otherwise a finding and nullptr.
  [[nodiscard]] const json* get(std::string_view key, Type type) const;

  [[nodiscard]] std::optional<long long> integer(std::string_view key) const {
    const json* v = get(key, Type::integer);
    return v == nullptr ? std::nullopt : std::optional<long long>(v->get<long long>());
  }
  [[nodiscard]] std::optional<double> number(std::string_view key) const {
    const json* v = get(key, Type::number);
    return v == nullptr ? std::nullopt : std::optional<double>(v->get<double>());
  }
  [[nodiscard]] std::optional<std::string> string(std::string_view key) const {
    const json* v = get(key, Type::string);
    return v == nullptr ? std::nullopt : std::optional<std::string>(v->get<std::string>());
  }

  // An integer field that must equal what the catalog says; `source` names where that comes from.
  void expect_int(std::string_view key, long long expected, std::string_view source) const {
    if (auto v = integer(key); v && *v != expected) {
      add(key, fmt::format("is {}, but {} has {}", *v, source, expected));
    }
  }
  // A number field that must equal an independently derived value.
  std::optional<double> expect_number(std::string_view key, double expected, std::string_view why) const {
    auto v = number(key);
    if (v && !close(*v, expected)) {
      add(key, fmt::format("is {}, expected {} ({})", *v, expected, why));
    }
    return v;
  }

  [[nodiscard]] int worker() const { return m_worker; }
  [[nodiscard]] const json& value() const { return m_value; }

private:
  VerifyReport& m_report;
  int m_worker;
  const json& m_value;
  std::string m_file;
};


} // namespace tpulaunch::receipts
