# The real-kubectl cases (tests/real-kubectl/cases.sh), included from tests/CMakeLists.txt: one
# ctest entry per `case_<group>__<name>` function, named real-kubectl.<group>.<name>, labelled
# real-kubectl. The real kubectl on PATH talks to a loopback Kubernetes API whose pods are local
# processes running the stand-in jax (nothing is a TPU result). A case whose tools are missing
# (kubectl, unshare, root) prints why and exits 77, which ctest reports as skipped.
set(real_kubectl_cases_file ${CMAKE_CURRENT_LIST_DIR}/cases.sh)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${real_kubectl_cases_file})
file(STRINGS ${real_kubectl_cases_file} real_kubectl_case_lines REGEX "^case_[a-z0-9_]+__[a-z0-9_]+\\(\\)")
foreach(line IN LISTS real_kubectl_case_lines)
  string(REGEX REPLACE "^case_([a-z0-9_]+)__([a-z0-9_]+)\\(\\).*" "\\1;\\2" parts "${line}")
  list(GET parts 0 group)
  list(GET parts 1 name)
  string(REPLACE "_" "-" group "${group}")
  string(REPLACE "_" "-" name "${name}")
  string(REGEX REPLACE "^case_([a-z0-9_]+__[a-z0-9_]+)\\(\\).*" "case_\\1" function "${line}")
  set(test_name real-kubectl.${group}.${name})
  add_test(NAME ${test_name} COMMAND bash ${real_kubectl_cases_file} ${function})
  set_tests_properties(${test_name} PROPERTIES
    ENVIRONMENT "TPULAUNCH=$<TARGET_FILE:tpulaunch>;GKE_MANIFEST=$<TARGET_FILE:gke_manifest>;SOURCE_DIR=${PROJECT_SOURCE_DIR};WORK_ROOT=${CMAKE_CURRENT_BINARY_DIR}/real-kubectl-work"
    LABELS real-kubectl
    SKIP_RETURN_CODE 77
    TIMEOUT 300)
endforeach()

# The harness's own shell files and the loopback API, checked like the rest of the tests.
foreach(file lib.sh cases.sh pod/pod.sh podrun.bash)
  string(REGEX REPLACE "\\.(sh|bash)$" "" stem "${file}")
  string(REPLACE "/" "-" stem "${stem}")
  string(REPLACE "_" "-" stem "${stem}")
  add_test(NAME real-kubectl.shellcheck.${stem}
           COMMAND shellcheck -x tests/real-kubectl/${file}
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
endforeach()
add_test(NAME real-kubectl.fakekube-py.compiles
         COMMAND python3 -m py_compile ${CMAKE_CURRENT_LIST_DIR}/fakekube.py ${CMAKE_CURRENT_LIST_DIR}/fakekube_cluster.py
                 ${CMAKE_CURRENT_LIST_DIR}/fakekube_pods.py ${CMAKE_CURRENT_LIST_DIR}/pod/lesson.py)
set_tests_properties(real-kubectl.fakekube-py.compiles PROPERTIES
  ENVIRONMENT "PYTHONPYCACHEPREFIX=${CMAKE_CURRENT_BINARY_DIR}/pycache")
