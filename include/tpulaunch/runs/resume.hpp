#pragma once
// `plan --resume RUN`: the rules between a new run and the run it resumes, read from the old
// run's plan record (runs.hpp). The new run keeps the script (byte for byte), the slice and slice
// count, the TPU and its zone and project, the checkpoint folder and how capacity was made; it
// needs a run id of its own, and a run that succeeded is not resumed.
#include <optional>
#include <string>
#include <string_view>

#include "tpulaunch/runs/runs.hpp"
#include "tpulaunch/util/error.hpp"

namespace tpulaunch {

// What the command line gave for the values a resumed run takes from the old one: an empty string,
// a false flag or nullopt is "not given". `resume_from` fills what was not given from the record.
struct ResumeFields {
  std::string slice;
  std::string tpu;
  std::string zone;
  std::string project;
  std::string checkpoint_dir;
  std::string run_id;
  std::optional<int> slices; // --slices N, when given
  bool create = false;
  bool queued = false;
  bool spot = false;
  bool preemptible = false;
};

// Fills `fields` from `run`'s plan record for a new run of script `script`: a value given that
// differs from the recorded one is a usage Error naming both; so is another script's run, or the
// old run's id given as the new one. A run that succeeded is refused (a resume is for a run that
// was preempted, interrupted or failed).
Status resume_from(ResumeFields& fields, const RunView& run, std::string_view script);

// The resumed run's script is the one that runs now: its recorded sha256 equals `actual_sha256`
// (refused otherwise); a record without one cannot be resumed (a config Error).
Status same_script(const RunView& run, std::string_view actual_sha256);

} // namespace tpulaunch
