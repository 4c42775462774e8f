# tests/interop/tests.cmake — interop with Python: ctest safetensors_python (Python's safetensors
# reads what tinytorch::save wrote).
#
# Included by tests/CMakeLists.txt (include(), one scope: CMAKE_CURRENT_SOURCE_DIR is tests/);
# the shared helpers are cmake/TinytorchTesting.cmake.

# ---- safetensors interop: Python's safetensors reads what tinytorch::save wrote -------------
# ctest safetensors_python runs `bash tests/interop/safetensors_test.sh build/bin/test_serialization`:
# test_serialization "[safetensors-export]" saves a checkpoint, tests/interop/check_safetensors.py
# reads it with the Python safetensors package and checks every value and byte. No Python with
# numpy and safetensors ($TT_PYTHON, python3, /usr/bin/python3; Debian 12 packages none): exit 77,
# reported as Skipped (so in CI). The reverse direction is test_serialization's "[safetensors]".
if(_tt_exe_of_test_serialization)
  add_test(NAME safetensors_python
           COMMAND bash "${CMAKE_CURRENT_SOURCE_DIR}/interop/safetensors_test.sh" $<TARGET_FILE:${_tt_exe_of_test_serialization}>)
  set_tests_properties(safetensors_python PROPERTIES
    SKIP_RETURN_CODE 77
    TIMEOUT ${TT_UNIT_TIMEOUT}
    LABELS "ch06"
    WORKING_DIRECTORY "${CMAKE_BINARY_DIR}"
    ENVIRONMENT "${TT_TEST_ENV}")
endif()
