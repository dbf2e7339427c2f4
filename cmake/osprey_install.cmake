# Installs headers, libraries and a CMake package config so a user's project can
# find_package(osprey) and link osprey::osprey.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
set(_targets osprey_osprey)
foreach(m ${OSPREY_MODULES})
  list(APPEND _targets osprey_${m})
endforeach()
install(TARGETS ${_targets} EXPORT ospreyTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY src/osprey DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h"
  PATTERN "*_test*" EXCLUDE PATTERN "internal" EXCLUDE
  # comm/rpc/ exposes gRPC types: the services built on it keep them out of public headers.
  REGEX "/comm/rpc($|/)" EXCLUDE)
install(FILES ${PROJECT_BINARY_DIR}/generated/osprey/version.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/osprey)
install(EXPORT ospreyTargets NAMESPACE osprey:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/osprey)
# Optional parts are components: find_package(osprey COMPONENTS mpi gloo) fails, naming the
# component, against an install built without them; osprey_<part>_FOUND says what is there.
set(_optional_deps "")
foreach(_part mpi gloo grpc xgboost)
  string(TOUPPER ${_part} _upper)
  if(OSPREY_WITH_${_upper})
    string(APPEND _optional_deps "set(osprey_${_part}_FOUND TRUE)\n")
  else()
    string(APPEND _optional_deps "set(osprey_${_part}_FOUND FALSE)\n")
  endif()
endforeach()
if(OSPREY_WITH_MPI)
  string(APPEND _optional_deps "find_dependency(MPI COMPONENTS CXX)\n")
endif()
if(OSPREY_WITH_GLOO)
  string(APPEND _optional_deps "find_dependency(Gloo CONFIG)\n")
endif()
if(OSPREY_WITH_GRPC)
  string(APPEND _optional_deps "find_dependency(gRPC CONFIG)\n")
endif()
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/ospreyConfig.cmake.in
"@PACKAGE_INIT@\ninclude(CMakeFindDependencyMacro)\nfind_dependency(dnnl)\nfind_dependency(fmt)\nfind_dependency(OpenMP)\nfind_dependency(nlohmann_json)\nfind_dependency(tomlplusplus)\nfind_dependency(ZLIB)\nfind_dependency(Threads)\nfind_dependency(NLopt CONFIG)\nfind_dependency(Protobuf)\n${_optional_deps}include(\"\${CMAKE_CURRENT_LIST_DIR}/ospreyTargets.cmake\")\ncheck_required_components(osprey)\n")
configure_package_config_file(${CMAKE_CURRENT_BINARY_DIR}/ospreyConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/ospreyConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/osprey)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/ospreyConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/ospreyConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/ospreyConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/osprey)
