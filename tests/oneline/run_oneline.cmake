# tests/oneline/run_oneline.cmake — ctest's oneline_build: the README's plain g++ line.
#
#   cmake -DCXX=g++ -DSOURCE_DIR=<repo> -DEIGEN_INCLUDE_DIR=/usr/include/eigen3
#         -DOUTPUT=<build>/oneline_prog "-DEXPECT=<a line of its output>" -P tests/oneline/run_oneline.cmake
# Runs, from the source root,
#   <CXX> -std=c++17 -O2 -I include -I <EIGEN_INCLUDE_DIR> tests/oneline/prog.cpp -lz -o <OUTPUT>
# then <OUTPUT>, and fails unless both succeed and the program's output contains EXPECT.
foreach(var CXX SOURCE_DIR EIGEN_INCLUDE_DIR OUTPUT EXPECT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_oneline.cmake: -D${var}=... is required")
  endif()
endforeach()

set(cmd "${CXX}" -std=c++17 -O2 -I include -I "${EIGEN_INCLUDE_DIR}" tests/oneline/prog.cpp -lz -o "${OUTPUT}")
list(JOIN cmd " " cmd_str)
message(STATUS "(cd ${SOURCE_DIR} && ${cmd_str})")
execute_process(COMMAND ${cmd} WORKING_DIRECTORY "${SOURCE_DIR}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "one-line build failed (exit ${rc})")
endif()

execute_process(COMMAND "${OUTPUT}" WORKING_DIRECTORY "${SOURCE_DIR}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message(STATUS "${OUTPUT} printed: ${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "oneline_prog exited with ${rc}")
endif()
string(FIND "${out}" "${EXPECT}" pos)
if(pos EQUAL -1)
  message(FATAL_ERROR "oneline_prog output does not contain '${EXPECT}'")
endif()
