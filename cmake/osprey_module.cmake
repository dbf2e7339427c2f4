# osprey_add_module(NAME core SRCS a.cpp ... DEPS osprey::x ... [PRIVATE_DEPS ...] [TESTS a_test.cpp ...])
# Creates the library osprey_<name> with the alias osprey::<name>. Tests named in TESTS are
# collected into one binary per module, <name>_test, built by osprey_add_module_tests().
set(OSPREY_COMMON_OPTIONS "")
set(OSPREY_TEST_TIMEOUT_SCALE 1 CACHE STRING "Multiplies every test's own TIMEOUT (scripts/sanitize.sh sets it: sanitized code runs several times slower)")
set(OSPREY_MODULES "" CACHE INTERNAL "")

function(osprey_target_defaults target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wno-unused-parameter)
  if(OSPREY_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(OSPREY_NATIVE)
    target_compile_options(${target} PRIVATE -march=native)
  else()
    target_compile_options(${target} PRIVATE -march=x86-64-v3)
  endif()
  if(OSPREY_SANITIZE)
    string(REPLACE ";" "," _san "${OSPREY_SANITIZE}")
    target_compile_options(${target} PRIVATE -fsanitize=${_san} -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
    target_link_options(${target} PUBLIC -fsanitize=${_san})
  endif()
endfunction()

# With OSPREY_UNITY_BUILD, target's sources compile in batches of 8 (CMake's unity builds): the
# headers (oneDNN, nlohmann, fmt, gRPC) are parsed once per batch, not once per file, which halves
# a build on 2 cores. Names in anonymous namespaces must then differ across a module's files.
# Tests, benchmarks and examples stay one file each: their fixtures share names freely.
function(osprey_unity target)
  if(OSPREY_UNITY_BUILD)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
    # GCC takes a .cpp included by a batch for a header, and warns when a class there holds a
    # member of a type from the file's anonymous namespace (gloo.cpp's Impl): true of headers,
    # not of a batch, which is one translation unit.
    target_compile_options(${target} PRIVATE $<$<CXX_COMPILER_ID:GNU>:-Wno-subobject-linkage>)
  endif()
endfunction()

function(osprey_add_module)
  cmake_parse_arguments(M "" "NAME" "SRCS;DEPS;PRIVATE_DEPS;TESTS;TEST_DEPS" ${ARGN})
  add_library(osprey_${M_NAME} ${M_SRCS})
  add_library(osprey::${M_NAME} ALIAS osprey_${M_NAME})
  # Installed as osprey::<name>, the name the build tree uses (not osprey::osprey_<name>).
  set_target_properties(osprey_${M_NAME} PROPERTIES OUTPUT_NAME osprey_${M_NAME} EXPORT_NAME ${M_NAME})
  target_include_directories(osprey_${M_NAME} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/src> $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/generated>
    $<INSTALL_INTERFACE:include>)
  target_link_libraries(osprey_${M_NAME} PUBLIC ${M_DEPS} PRIVATE ${M_PRIVATE_DEPS})
  # The headers are C++20: a project that links osprey::<name> compiles with C++20 or later
  # whatever its own CMAKE_CXX_STANDARD says (issue 48: without it a consumer got 46 errors).
  target_compile_features(osprey_${M_NAME} PUBLIC cxx_std_20)
  osprey_target_defaults(osprey_${M_NAME})
  osprey_unity(osprey_${M_NAME})
  set(_tests "")
  foreach(t ${M_TESTS})
    if(OSPREY_BUILD_TESTS AND NOT EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${t})
      message(WARNING "osprey_add_module(${M_NAME}): test file ${t} does not exist")
      continue()
    endif()
    list(APPEND _tests ${CMAKE_CURRENT_SOURCE_DIR}/${t})
  endforeach()
  set(OSPREY_MODULES ${OSPREY_MODULES} ${M_NAME} CACHE INTERNAL "")
  set(OSPREY_TESTS_${M_NAME} "${_tests}" CACHE INTERNAL "")
  set(OSPREY_TEST_DEPS_${M_NAME} "${M_TEST_DEPS}" CACHE INTERNAL "")
endfunction()

function(osprey_add_module_tests)
  foreach(m ${OSPREY_MODULES})
    if(OSPREY_TESTS_${m})
      add_executable(${m}_test ${OSPREY_TESTS_${m}})
      target_link_libraries(${m}_test PRIVATE osprey::${m} ${OSPREY_TEST_DEPS_${m}} GTest::gtest GTest::gtest_main)
      osprey_target_defaults(${m}_test)
      # Where a test finds the repository's data (tests/data, examples/): not __FILE__, which
      # ccache's CCACHE_BASEDIR makes relative to the build folder, so a test run from another
      # folder (the ISA matrix runs from build/tests) would not find it.
      target_compile_definitions(${m}_test PRIVATE OSPREY_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
      gtest_discover_tests(${m}_test PROPERTIES LABELS unit DISCOVERY_TIMEOUT 60)
    endif()
  endforeach()
endfunction()

# osprey_grpc_proto(TARGET path/to/x.proto): generates x.pb.{h,cc} and x.grpc.pb.{h,cc} into the
# build tree (generated/osprey/<module>/...) and compiles them into TARGET, without osprey's
# warnings (generated code). protoc runs with src/ as its only import root, so the proto's path
# is osprey/<module>/x.proto and the generated files include each other by that path (CMake
# 3.25's protobuf_generate puts the current source directory first on the import path, which
# would make it x.proto and the includes "x.pb.h"). Shared by the parameter servers' ps.proto and
# the tuner's oracle.proto.
function(osprey_grpc_proto target proto)
  get_filename_component(_abs ${proto} ABSOLUTE)
  file(RELATIVE_PATH _rel ${PROJECT_SOURCE_DIR}/src ${_abs})
  get_filename_component(_dir ${_rel} DIRECTORY)
  get_filename_component(_stem ${_rel} NAME_WE)
  set(_gen ${PROJECT_BINARY_DIR}/generated)
  set(_out ${_gen}/${_dir})
  file(MAKE_DIRECTORY ${_out})
  set(_files ${_out}/${_stem}.pb.h ${_out}/${_stem}.pb.cc ${_out}/${_stem}.grpc.pb.h
    ${_out}/${_stem}.grpc.pb.cc)
  add_custom_command(
    OUTPUT ${_files}
    COMMAND protobuf::protoc
    ARGS --cpp_out=${_gen} --grpc_out=${_gen}
         --plugin=protoc-gen-grpc=$<TARGET_FILE:gRPC::grpc_cpp_plugin>
         -I ${PROJECT_SOURCE_DIR}/src ${_abs}
    DEPENDS ${_abs} protobuf::protoc gRPC::grpc_cpp_plugin
    COMMENT "protoc: ${_rel}"
    VERBATIM)
  target_sources(${target} PRIVATE ${_files})
  set_source_files_properties(${_out}/${_stem}.pb.cc ${_out}/${_stem}.grpc.pb.cc
    PROPERTIES COMPILE_OPTIONS "-w" SKIP_UNITY_BUILD_INCLUSION ON)
endfunction()

# Called at the end of each CMakeLists.txt that gives its tests a TIMEOUT: multiplies those limits
# by OSPREY_TEST_TIMEOUT_SCALE, so a sanitized build (several times slower) keeps them meaningful
# without each limit knowing about sanitizers. A test that checks a wall-clock time of its own
# (osprey run's budget) reads the scale from OSPREY_TEST_TIME_SCALE.
function(osprey_scale_test_timeouts)
  if(NOT OSPREY_TEST_TIMEOUT_SCALE GREATER 1)
    return()
  endif()
  get_property(_tests DIRECTORY PROPERTY TESTS)
  foreach(_t IN LISTS _tests)
    get_test_property(${_t} TIMEOUT _limit)
    if(_limit)
      math(EXPR _limit "${_limit} * ${OSPREY_TEST_TIMEOUT_SCALE}")
      set_tests_properties(${_t} PROPERTIES TIMEOUT ${_limit})
      set_property(TEST ${_t} APPEND PROPERTY ENVIRONMENT OSPREY_TEST_TIME_SCALE=${OSPREY_TEST_TIMEOUT_SCALE})
    endif()
  endforeach()
endfunction()
