// The docs are written from the same tables the code uses; these tests keep them in step.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include "support/test_catalog.hpp"
#include "tpulaunch/catalog/slice_names.hpp"
#include "tpulaunch/classify/classifier.hpp"
#include "tpulaunch/matrix/overrides.hpp"
#include "tpulaunch/route/router.hpp"
#include "tpulaunch/util/exit_code.hpp"
#include "tpulaunch/values/validate.hpp"

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

// The clauses of `text` (split at ". ", "; " and blank lines, so "jax.distributed.initialize()"
// stays whole), with line breaks as spaces.
std::vector<std::string> clauses(const std::string& text) {
  std::string flat = text;
  std::replace(flat.begin(), flat.end(), '\n', ' ');
  std::vector<std::string> out;
  const std::regex cut(R"(\.\s|;\s|\s{2,})");
  for (auto it = std::sregex_token_iterator(flat.begin(), flat.end(), cut, -1); it != std::sregex_token_iterator();
       ++it) {
    out.push_back(it->str());
  }
  return out;
}

// What README and docs/matrix.md say an override can stand in for is what the marker table says
// and the override rule does: a missing jax.distributed.initialize() cannot be overridden (README
// once said it could), and no clause about it offers an override.
TEST(Docs, OverrideClaimsFollowTheMarkerTable) {
  int unoverridable = 0;
  for (const MultiHostMarker& marker : multi_host_markers()) {
    MatrixEntry entry;
    entry.overrides.push_back(missing_marker_override(marker.name, "a reason"));
    EXPECT_EQ(marker_overridden(marker, &entry), marker.not_overridable.empty()) << marker.name;
    if (marker.not_overridable.empty()) {
      continue;
    }
    ++unoverridable;
    ASSERT_EQ(marker.name, "initialize") << "name the docs' words for this marker here";
    // The routing rule the table's reason names exists.
    const std::string reason(marker.not_overridable);
    std::smatch rule;
    ASSERT_TRUE(std::regex_search(reason, rule, std::regex(R"(\(([a-z-]+)\))"))) << reason;
    EXPECT_TRUE(std::any_of(routing_rules().begin(), routing_rules().end(), [&](const auto& r) {
      return r.id == rule[1].str();
    })) << rule[1];
    for (const char* path : {"README.md", "docs/matrix.md"}) {
      const std::string doc = read_doc(path);
      bool says_so = false;
      for (const std::string& clause : clauses(doc)) {
        if (clause.find("initialize()") == std::string::npos) {
          continue;
        }
        EXPECT_EQ(clause.find("unless the matrix records an override"), std::string::npos) << path << ": " << clause;
        says_so = says_so || clause.find("cannot be overridden") != std::string::npos ||
                  clause.find("no override can stand in") != std::string::npos;
      }
      EXPECT_TRUE(says_so) << path << " does not say that a missing initialize() cannot be overridden";
      EXPECT_NE(doc.find(rule[1].str()), std::string::npos) << path << " does not name " << rule[1];
    }
  }
  EXPECT_EQ(unoverridable, 1);
}

// Every function, type and file that docs/architecture.md's data flow names is in src/ or
// include/: a reader who looks for it finds it (the one-pass matrix reader it once described was
// gone). Names in backquotes: identifiers with an underscore or a call's parentheses, CamelCase
// types, and file names.
TEST(Docs, ArchitectureDataFlowNamesWhatExists) {
  const std::string doc = read_doc("docs/architecture.md");
  const std::size_t start = doc.find("## Data flow");
  ASSERT_NE(start, std::string::npos);
  const std::string flow = doc.substr(start, doc.find("\n## ", start + 1) - start);
  std::string code;
  std::vector<std::string> files;
  for (const char* root : {"src", "include"}) {
    for (const auto& entry :
         std::filesystem::recursive_directory_iterator(std::string(TPULAUNCH_SOURCE_DIR) + "/" + root)) {
      if (entry.is_regular_file()) {
        files.push_back(entry.path().generic_string());
        std::ifstream in(entry.path());
        code.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      }
    }
  }
  const std::regex quoted("`([^`\n]+)`");
  int checked = 0;
  for (auto it = std::sregex_iterator(flow.begin(), flow.end(), quoted); it != std::sregex_iterator(); ++it) {
    std::string name = (*it)[1].str();
    if (std::regex_match(name, std::regex(R"([A-Za-z0-9_/]+\.(cpp|hpp|bash|py))"))) {
      EXPECT_TRUE(
          std::any_of(files.begin(), files.end(), [&](const std::string& f) { return f.ends_with("/" + name); }))
          << "docs/architecture.md names " << name << ", which is not in src/ or include/";
      ++checked;
      continue;
    }
    name = name.substr(0, name.find('('));
    name = name.substr(name.rfind(':') == std::string::npos ? 0 : name.rfind(':') + 1);
    const bool identifier = std::regex_match(name, std::regex(R"([a-z]+_[a-z0-9_]+|[A-Z][a-z]+[A-Z][A-Za-z]+)")) ||
                            (*it)[1].str().find('(') != std::string::npos;
    if (!identifier || name.empty()) {
      continue;
    }
    EXPECT_TRUE(std::regex_search(code, std::regex("\\b" + name + "\\b")))
        << "docs/architecture.md's data flow names " << name << ", which src/ and include/ do not";
    ++checked;
  }
  EXPECT_GT(checked, 15);
}

} // namespace
} // namespace tpulaunch
