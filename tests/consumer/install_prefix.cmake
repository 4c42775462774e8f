# tests/consumer/install_prefix.cmake — ctest fixture consumer_install.
#
#   cmake -DBUILD_DIR=<build> -DPREFIX=<build>/consumer-prefix -DCONFIG=Release -P install_prefix.cmake
# Empties PREFIX, then runs `cmake --install BUILD_DIR --prefix PREFIX`, so that
# consumer_find_package sees exactly what this build installs (no stale headers).
foreach(var BUILD_DIR PREFIX CONFIG)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "install_prefix.cmake: -D${var}=... is required")
  endif()
endforeach()
file(REMOVE_RECURSE "${PREFIX}")
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${PREFIX}" --config "${CONFIG}"
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (exit ${rc})")
endif()
if(NOT EXISTS "${PREFIX}/share/cmake/tinytorch/tinytorchConfig.cmake")
  message(FATAL_ERROR "no tinytorchConfig.cmake under ${PREFIX}/share/cmake/tinytorch")
endif()
