// The docs are written from the same tables the code uses; these tests keep them in step.
#include <algorithm>
#include <cctype>
#include <fstream>
#include <regex>
#include <sstream>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include "tpulaunch/classify/classifier.hpp"
#include "tpulaunch/util/exit_code.hpp"
#include "tpulaunch/route/router.hpp"
#include "tpulaunch/catalog/slice_names.hpp"
#include "tpulaunch/values/validate.hpp"
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

// docs/catalog.md names every built-in slice and cites the page of every generation that has
// slices, so a row added to catalog/slices.json without its source fails here.
TEST(Docs, CatalogDocNamesEverySliceAndCitesEachGenerationsPage) {
  const std::string doc = read_doc("docs/catalog.md");
  const auto& catalog = test_support::embedded_catalog();
  const auto names = [&](std::string_view name) {
    for (std::size_t at = doc.find(name); at != std::string::npos; at = doc.find(name, at + 1)) {
      const std::size_t end = at + name.size();
      const auto part_of_name = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-'; };
      if ((at == 0 || !part_of_name(doc[at - 1])) && (end == doc.size() || !part_of_name(doc[end]))) {
        return true;
      }
    }
    return false;
  };
  for (const auto& slice : catalog.slices()) {
    EXPECT_TRUE(names(slice.name)) << slice.name;
  }
  for (const auto& generation : catalog.generations()) {
    EXPECT_NE(doc.find(fmt::format("https://cloud.google.com/tpu/docs/{}", generation.id)), std::string::npos)
        << generation.id;
  }
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

// Every real-gcloud case (a `case_<group>__<name>` function, ctest real-gcloud.<group>.<name>) has
// its row in the harness's README, which is where a reader learns what the real gcloud was shown.
TEST(Docs, RealGcloudReadmeListsEveryCase) {
  const std::string cases = read_doc("tests/real-gcloud/cases.sh");
  const std::string readme = read_doc("tests/real-gcloud/README.md");
  ASSERT_FALSE(cases.empty());
  const std::regex function(R"(\ncase_([a-z0-9_]+)__([a-z0-9_]+)\(\))");
  int count = 0;
  for (auto it = std::sregex_iterator(cases.begin(), cases.end(), function); it != std::sregex_iterator(); ++it) {
    std::string name = fmt::format("real-gcloud.{}.{}", (*it)[1].str(), (*it)[2].str());
    std::replace(name.begin(), name.end(), '_', '-');
    EXPECT_NE(readme.find("| `" + name + "` |"), std::string::npos) << name << " has no row in tests/real-gcloud/README.md";
    ++count;
  }
  EXPECT_GT(count, 10);
}

} // namespace
} // namespace tpulaunch
