# ctest: install the build into a scratch prefix, then configure, build and run
# tests/install_consumer against it with find_package(arrayjit).
#   cmake -DAJ_BUILD_DIR=... -DAJ_CONSUMER_SOURCE=... -DAJ_WORK_DIR=...
#         [-DAJ_CONFIG=...] [-DAJ_CXX_COMPILER=...] [-DAJ_GENERATOR=...]
#         -P run_install_consumer.cmake
cmake_minimum_required(VERSION 3.21)
foreach(var AJ_BUILD_DIR AJ_CONSUMER_SOURCE AJ_WORK_DIR)
  if(NOT ${var})
    message(FATAL_ERROR "run_install_consumer.cmake: ${var} is not set")
  endif()
endforeach()
if(NOT AJ_GENERATOR)
  set(AJ_GENERATOR Ninja)
endif()

set(prefix ${AJ_WORK_DIR}/prefix)
set(build ${AJ_WORK_DIR}/build)
file(REMOVE_RECURSE ${AJ_WORK_DIR})

set(install_args --install ${AJ_BUILD_DIR} --prefix ${prefix})
if(AJ_CONFIG)
  list(APPEND install_args --config ${AJ_CONFIG})
endif()
message(STATUS "install_consumer: cmake ${install_args}")
execute_process(COMMAND ${CMAKE_COMMAND} ${install_args} COMMAND_ERROR_IS_FATAL ANY)

set(configure_args -S ${AJ_CONSUMER_SOURCE} -B ${build} -G ${AJ_GENERATOR}
    -DCMAKE_PREFIX_PATH=${prefix})
if(AJ_CONFIG)
  list(APPEND configure_args -DCMAKE_BUILD_TYPE=${AJ_CONFIG})
endif()
if(AJ_CXX_COMPILER)
  list(APPEND configure_args -DCMAKE_CXX_COMPILER=${AJ_CXX_COMPILER})
endif()
message(STATUS "install_consumer: configure")
execute_process(COMMAND ${CMAKE_COMMAND} ${configure_args} COMMAND_ERROR_IS_FATAL ANY)
message(STATUS "install_consumer: build")
execute_process(COMMAND ${CMAKE_COMMAND} --build ${build} COMMAND_ERROR_IS_FATAL ANY)

# The consumer must have found the installed package, not a build tree.
file(STRINGS ${build}/CMakeCache.txt found REGEX "^arrayjit_DIR:")
string(FIND "${found}" "${prefix}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "install_consumer: found arrayjit outside ${prefix}: ${found}")
endif()

message(STATUS "install_consumer: run")
execute_process(COMMAND ${build}/aj_install_consumer RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "install_consumer: program failed (${rc})")
endif()
execute_process(COMMAND ${build}/aj_install_consumer_c RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "install_consumer: the C program failed (${rc})")
endif()
message(STATUS "install_consumer: OK")
