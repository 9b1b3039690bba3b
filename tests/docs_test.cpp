// The docs are written from the same tables the code uses; these tests keep them in step.
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include "tpulaunch/classify/classifier.hpp"
#include "tpulaunch/util/exit_code.hpp"
#include "tpulaunch/route/router.hpp"
#include "tpulaunch/catalog/slice_names.hpp"
#include "tpulaunch/plan/validate.hpp"
#include "support/test_catalog.hpp"

namespace tpulaunch {
namespace {

std::string read_doc(const char* relative) {
  std::ifstream in(std::string(TPULAUNCH_SOURCE_DIR) + "/" + relative);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Markdown table cells escape '|'.
std::string cell(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '|') {
      out += "\\|";
    } else {
      out += c;
    }
  }
  return out;
}

TEST(Docs, CliReferenceListsEveryRoutingRule) {
  const std::string doc = read_doc("docs/cli.md");
  for (const auto& rule : routing_rules()) {
    EXPECT_NE(doc.find(fmt::format("| `{}` | {} |", rule.id, cell(rule.summary))), std::string::npos) << rule.id;
  }
}

TEST(Docs, CliReferenceListsEveryClassifierRule) {
  const std::string doc = read_doc("docs/cli.md");
  for (const auto& rule : classifier_rules()) {
    EXPECT_NE(doc.find(fmt::format("| {} | `{}` | {} | {} |", to_string(rule.category), rule.id, cell(rule.pattern),
                                   cell(rule.implies))),
              std::string::npos)
        << rule.id;
  }
}

TEST(Docs, CliReferenceListsEveryValueRule) {
  const std::string doc = read_doc("docs/cli.md");
  for (const auto& rule : value_rules()) {
    EXPECT_NE(doc.find(fmt::format("| {} | `{}` | {} |", rule.what, rule.flag, cell(rule.description))),
              std::string::npos)
        << rule.what;
  }
}

TEST(Docs, CatalogDocListsEveryGenerationAlias) {
  const std::string doc = read_doc("docs/catalog.md");
  for (const auto& alias : generation_aliases()) {
    if (alias.alias != alias.prefix) {
      EXPECT_NE(doc.find(fmt::format("`{}`", alias.alias)), std::string::npos) << alias.alias;
    }
  }
}

TEST(Docs, CatalogDocListsEveryZoneAndWhatItOffers) {
  const std::string doc = read_doc("docs/catalog.md");
  const auto& catalog = test_support::embedded_catalog();
  ASSERT_FALSE(catalog.zones().empty());
  for (const auto& zone : catalog.zones()) {
    EXPECT_NE(doc.find(fmt::format("| `{}` | {} |", zone.name, fmt::join(zone.offers, ", "))), std::string::npos)
        << zone.name;
  }
  EXPECT_NE(doc.find("https://cloud.google.com/tpu/docs/regions-zones"), std::string::npos);
}

TEST(Docs, ReadmeAndCliReferenceListEveryExitCode) {
  for (const char* path : {"README.md", "docs/cli.md"}) {
    const std::string doc = read_doc(path);
    for (const auto& info : k_exit_codes) {
      EXPECT_NE(doc.find(fmt::format("| {} | {} | {} |", to_int(info.code), info.name, info.meaning)), std::string::npos)
          << path << ": " << info.name;
    }
  }
}

TEST(Docs, CliReferenceListsEveryPipelineStatus) {
  const std::string doc = read_doc("docs/cli.md");
  for (const auto& info : k_pipeline_statuses) {
    EXPECT_NE(doc.find(fmt::format("| {} | {} | {} |", to_int(info.status), info.where, info.meaning)), std::string::npos)
        << to_int(info.status);
  }
}

} // namespace
} // namespace tpulaunch
