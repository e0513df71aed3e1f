# Install rules: the libraries as the package grpc_resilience (CMake config
# and version files, exported targets grpc_resilience::client, ::server,
# ::policy, ::metrics_http, ::redis_limits, ::prometheus_cpp, ...) and pkg-config files, one per component
# (grpc_resilience_<component>.pc) and grpc_resilience.pc for all of them.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# With BUILD_SHARED_LIBS (cmake/shared_library.cmake) the shared libraries
# and the components' names for them, not the static libraries.
if(TARGET grpc_resilience_shared)
  set(GRPC_RESILIENCE_SHARED ON)
  get_property(libraries GLOBAL PROPERTY GRPC_RESILIENCE_SHARED_TARGETS)
else()
  set(GRPC_RESILIENCE_SHARED OFF)
  get_property(libraries GLOBAL PROPERTY GRPC_RESILIENCE_LIBRARIES)
endif()
install(TARGETS ${libraries}
  EXPORT grpc_resilienceTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The public headers only: none of them includes a header of src/
# (scripts/check_layering.sh, scripts/check_public_headers.sh).
# prometheus_collectable.h includes prometheus-cpp's headers: installed only
# with its component.
set(_excluded_headers "")
if(NOT TARGET grpc_resilience_prometheus_cpp)
  set(_excluded_headers PATTERN "prometheus_collectable.h" EXCLUDE)
endif()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/grpc_resilience
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h" ${_excluded_headers})

set(config_dir ${CMAKE_INSTALL_LIBDIR}/cmake/grpc_resilience)
# grpc_resilienceConfig.cmake looks up prometheus-cpp only when the component
# is installed.
if(TARGET grpc_resilience_prometheus_cpp)
  set(GRPC_RESILIENCE_WITH_PROMETHEUS_CPP ON)
else()
  set(GRPC_RESILIENCE_WITH_PROMETHEUS_CPP OFF)
endif()
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

# pkg-config. Each component's file is made from the build's own link graph:
# Libs lists the component's library and every one of ours it links (in link
# order: each before what it needs), Requires the pkg-config names of what
# they link from the system, so that a file cannot forget a library the
# CMake targets have. Static libraries: everything is in Libs/Requires, not
# in their .private variants.
#
# _grpc_resilience_walk(<target>): appends to _walk_order (post-order) and
# _walk_system the libraries <target> links.
function(_grpc_resilience_walk target)
  get_property(seen GLOBAL PROPERTY _GRPC_RESILIENCE_WALK_SEEN)
  if(target IN_LIST seen)
    return()
  endif()
  set_property(GLOBAL APPEND PROPERTY _GRPC_RESILIENCE_WALK_SEEN ${target})
  get_target_property(deps ${target} LINK_LIBRARIES)
  if(NOT deps)
    set(deps "")
  endif()
  foreach(dep IN LISTS deps)
    if(dep MATCHES "^grpc_resilience_")
      _grpc_resilience_walk(${dep})
    elseif(dep MATCHES "^absl::(.*)$")
      set_property(GLOBAL APPEND PROPERTY _GRPC_RESILIENCE_WALK_REQUIRES "absl_${CMAKE_MATCH_1}")
    elseif(dep STREQUAL "gRPC::grpc++")
      set_property(GLOBAL APPEND PROPERTY _GRPC_RESILIENCE_WALK_REQUIRES "grpc++")
    elseif(dep STREQUAL "protobuf::libprotobuf")
      set_property(GLOBAL APPEND PROPERTY _GRPC_RESILIENCE_WALK_REQUIRES "protobuf")
    elseif(dep STREQUAL "PkgConfig::hiredis")
      set_property(GLOBAL APPEND PROPERTY _GRPC_RESILIENCE_WALK_REQUIRES "hiredis")
    elseif(dep STREQUAL "prometheus-cpp::core")
      set_property(GLOBAL APPEND PROPERTY _GRPC_RESILIENCE_WALK_REQUIRES "prometheus-cpp-core")
    elseif(dep STREQUAL "Threads::Threads")
      set_property(GLOBAL APPEND PROPERTY _GRPC_RESILIENCE_WALK_SYSTEM_LIBS "-lpthread")
    else()
      message(FATAL_ERROR "cmake/install.cmake: ${target} links ${dep}, which the pkg-config "
                          "files do not know how to name: add it to _grpc_resilience_walk()")
    endif()
  endforeach()
  set_property(GLOBAL APPEND PROPERTY _GRPC_RESILIENCE_WALK_ORDER ${target})
endfunction()

# The components: the libraries a user links by name.
set(pc_components client server)
foreach(component redis_limits metrics_http prometheus_cpp)
  if(TARGET grpc_resilience_${component})
    list(APPEND pc_components ${component})
  endif()
endforeach()
set(pc_files "")
foreach(component IN LISTS pc_components)
  foreach(property SEEN ORDER REQUIRES SYSTEM_LIBS)
    set_property(GLOBAL PROPERTY _GRPC_RESILIENCE_WALK_${property} "")
  endforeach()
  _grpc_resilience_walk(grpc_resilience_${component})
  get_property(order GLOBAL PROPERTY _GRPC_RESILIENCE_WALK_ORDER)
  get_property(requires GLOBAL PROPERTY _GRPC_RESILIENCE_WALK_REQUIRES)
  get_property(system_libs GLOBAL PROPERTY _GRPC_RESILIENCE_WALK_SYSTEM_LIBS)
  list(REVERSE order)  # each library before the ones it needs
  list(REMOVE_DUPLICATES requires)
  list(SORT requires)
  list(REMOVE_DUPLICATES system_libs)
  if("-lpthread" IN_LIST system_libs)  # last: the others may need it
    list(REMOVE_ITEM system_libs "-lpthread")
    list(APPEND system_libs "-lpthread")
  endif()
  set(libs "")
  foreach(library IN LISTS order)
    string(APPEND libs " -l${library}")
  endforeach()
  foreach(flag IN LISTS system_libs)
    string(APPEND libs " ${flag}")
  endforeach()
  if(GRPC_RESILIENCE_SHARED)
    # The shared library holds all of ours, and hiredis behind it.
    set(libs " -lgrpc_resilience")
    if(component STREQUAL "prometheus_cpp")
      set(libs " -lgrpc_resilience_prometheus_cpp -lgrpc_resilience")
    endif()
    foreach(flag IN LISTS system_libs)
      string(APPEND libs " ${flag}")
    endforeach()
    list(REMOVE_ITEM requires hiredis)
  endif()
  list(JOIN requires " " requires)
  set(pc_${component}_libs "${libs}")
  set(pc_${component}_requires "${requires}")
  list(APPEND pc_files ${PROJECT_BINARY_DIR}/pkgconfig/grpc_resilience_${component}.pc)
endforeach()
list(TRANSFORM pc_components PREPEND "grpc_resilience_" OUTPUT_VARIABLE pc_all_requires)
list(JOIN pc_all_requires " " pc_all_requires)
list(APPEND pc_files ${PROJECT_BINARY_DIR}/pkgconfig/grpc_resilience.pc)

# The files name the install prefix, which `cmake --install --prefix DIR`
# sets only at install time: so they are configured then.
set(pc_code "
  set(PROJECT_VERSION \"${PROJECT_VERSION}\")
  set(CMAKE_INSTALL_LIBDIR \"${CMAKE_INSTALL_LIBDIR}\")
  set(CMAKE_INSTALL_INCLUDEDIR \"${CMAKE_INSTALL_INCLUDEDIR}\")")
foreach(component IN LISTS pc_components)
  string(APPEND pc_code "
  set(PC_NAME \"grpc_resilience_${component}\")
  set(PC_DESCRIPTION \"grpc-resilience, component ${component}\")
  set(PC_REQUIRES \"${pc_${component}_requires}\")
  set(PC_LIBS \"${pc_${component}_libs}\")
  configure_file(\"${PROJECT_SOURCE_DIR}/cmake/grpc_resilience.pc.in\"
    \"${PROJECT_BINARY_DIR}/pkgconfig/grpc_resilience_${component}.pc\" @ONLY)")
endforeach()
string(APPEND pc_code "
  set(PC_NAME \"grpc_resilience\")
  set(PC_DESCRIPTION \"grpc-resilience, every component: ${pc_components}\")
  set(PC_REQUIRES \"${pc_all_requires}\")
  set(PC_LIBS \"\")
  configure_file(\"${PROJECT_SOURCE_DIR}/cmake/grpc_resilience.pc.in\"
    \"${PROJECT_BINARY_DIR}/pkgconfig/grpc_resilience.pc\" @ONLY)")
install(CODE "${pc_code}")
install(FILES ${pc_files} DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
