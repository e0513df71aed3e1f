# Install rules: the libraries as the package grpc_resilience (CMake config
# and version files, exported targets grpc_resilience::client, ::server,
# ::policy, ::breaker) and a pkg-config file.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

get_property(libraries GLOBAL PROPERTY GRPC_RESILIENCE_LIBRARIES)
install(TARGETS ${libraries}
  EXPORT grpc_resilienceTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# Public headers, then (until the public headers stop including them) the
# library's own ones, at their repository paths under grpc_resilience/private.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/grpc_resilience
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/src
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/grpc_resilience/private
  FILES_MATCHING PATTERN "*.h")

set(config_dir ${CMAKE_INSTALL_LIBDIR}/cmake/grpc_resilience)
install(EXPORT grpc_resilienceTargets
  NAMESPACE grpc_resilience::
  DESTINATION ${config_dir})
configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/grpc_resilienceConfig.cmake.in
  ${PROJECT_BINARY_DIR}/grpc_resilienceConfig.cmake
  INSTALL_DESTINATION ${config_dir})
# 0.x: a minor version may break the API, so only the same minor matches.
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/grpc_resilienceConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/grpc_resilienceConfig.cmake
  ${PROJECT_BINARY_DIR}/grpc_resilienceConfigVersion.cmake
  DESTINATION ${config_dir})

# The pkg-config file names the install prefix, which `cmake --install
# --prefix DIR` sets only at install time: so it is configured then.
install(CODE "
  set(PROJECT_VERSION \"${PROJECT_VERSION}\")
  set(CMAKE_INSTALL_LIBDIR \"${CMAKE_INSTALL_LIBDIR}\")
  set(CMAKE_INSTALL_INCLUDEDIR \"${CMAKE_INSTALL_INCLUDEDIR}\")
  configure_file(\"${PROJECT_SOURCE_DIR}/cmake/grpc_resilience.pc.in\"
    \"${PROJECT_BINARY_DIR}/grpc_resilience.pc\" @ONLY)")
install(FILES ${PROJECT_BINARY_DIR}/grpc_resilience.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
