# The real-gcloud cases (tests/real-gcloud/cases.sh), included from tests/CMakeLists.txt: one
# ctest entry per `case_<group>__<name>` function, named real-gcloud.<group>.<name>, labelled
# real-gcloud. The real gcloud on PATH talks to a loopback Cloud TPU API and real sshd workers that
# run the stand-in jax (nothing is a TPU result). A case whose tools are missing (gcloud, sshd,
# unshare, root) prints why and exits 77, which ctest reports as skipped.
set(real_gcloud_cases_file ${CMAKE_CURRENT_LIST_DIR}/cases.sh)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${real_gcloud_cases_file})
file(STRINGS ${real_gcloud_cases_file} real_gcloud_case_lines REGEX "^case_[a-z0-9_]+__[a-z0-9_]+\\(\\)")
foreach(line IN LISTS real_gcloud_case_lines)
  string(REGEX REPLACE "^case_([a-z0-9_]+)__([a-z0-9_]+)\\(\\).*" "\\1;\\2" parts "${line}")
  list(GET parts 0 group)
  list(GET parts 1 name)
  string(REPLACE "_" "-" group "${group}")
  string(REPLACE "_" "-" name "${name}")
  string(REGEX REPLACE "^case_([a-z0-9_]+__[a-z0-9_]+)\\(\\).*" "case_\\1" function "${line}")
  set(test_name real-gcloud.${group}.${name})
  add_test(NAME ${test_name} COMMAND bash ${real_gcloud_cases_file} ${function})
  set_tests_properties(${test_name} PROPERTIES
    ENVIRONMENT "TPULAUNCH=$<TARGET_FILE:tpulaunch>;SOURCE_DIR=${PROJECT_SOURCE_DIR};WORK_ROOT=${CMAKE_CURRENT_BINARY_DIR}/real-gcloud-work"
    LABELS real-gcloud
    SKIP_RETURN_CODE 77
    TIMEOUT 300)
endforeach()

# The harness's own shell files and the loopback API, checked like the rest of the tests.
foreach(file lib.sh cases.sh parse_only.sh)
  string(REPLACE ".sh" "" stem "${file}")
  string(REPLACE "_" "-" stem "${stem}")
  add_test(NAME real-gcloud.shellcheck.${stem}
           COMMAND shellcheck -x tests/real-gcloud/${file}
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
endforeach()
add_test(NAME real-gcloud.fakecloud-py.compiles COMMAND python3 -m py_compile ${CMAKE_CURRENT_LIST_DIR}/fakecloud.py ${CMAKE_CURRENT_LIST_DIR}/fakecloud_workers.py)
set_tests_properties(real-gcloud.fakecloud-py.compiles PROPERTIES
  ENVIRONMENT "PYTHONPYCACHEPREFIX=${CMAKE_CURRENT_BINARY_DIR}/pycache")
