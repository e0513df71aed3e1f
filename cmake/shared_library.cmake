# The shared library (BUILD_SHARED_LIBS=ON): one libgrpc_resilience.so made of
# the objects of every component library (the static grpc_resilience_<name>
# targets, compiled position-independent with hidden visibility), and
# libgrpc_resilience_prometheus_cpp.so for the prometheus-cpp component, which
# alone needs prometheus-cpp and uses the public API only. The SONAME carries
# the minor version (libgrpc_resilience.so.0.3): a 0.x minor may break the ABI
# (docs/compatibility.md). Only what include/grpc_resilience marks
# GRPC_RESILIENCE_EXPORT is exported (scripts/check_exported_symbols.sh).
#
# What a user links, as with the static libraries: grpc_resilience::client,
# ::server, ::metrics_http and ::redis_limits (each the one shared library;
# cmake/install.cmake exports them) and ::prometheus_cpp.
#
# Included by the top-level CMakeLists.txt after the component libraries;
# defines grpc_resilience_shared (alias grpc_resilience::grpc_resilience),
# grpc_resilience_prometheus_cpp_shared and the interface targets
# grpc_resilience_<component>_shared, all listed in the global property
# GRPC_RESILIENCE_SHARED_TARGETS.

get_property(_components GLOBAL PROPERTY GRPC_RESILIENCE_LIBRARIES)
list(REMOVE_ITEM _components grpc_resilience_prometheus_cpp)

# _grpc_resilience_external_deps(<out> <target>...): the libraries not of ours
# that <target>s link, in order, once each.
function(_grpc_resilience_external_deps out)
  set(result "")
  foreach(target IN LISTS ARGN)
    get_target_property(deps ${target} LINK_LIBRARIES)
    foreach(dep IN LISTS deps)
      if(dep AND NOT dep MATCHES "^grpc_resilience_")
        list(APPEND result ${dep})
      endif()
    endforeach()
  endforeach()
  list(REMOVE_DUPLICATES result)
  set(${out} "${result}" PARENT_SCOPE)
endfunction()

# _grpc_resilience_shared_properties(<target> <output name>)
function(_grpc_resilience_shared_properties target output_name)
  set_target_properties(${target} PROPERTIES
    OUTPUT_NAME ${output_name}
    VERSION ${PROJECT_VERSION}
    SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
  target_include_directories(${target} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    $<INSTALL_INTERFACE:include>)
  # Every symbol the objects use is resolved at link time (the sanitizers'
  # runtime is the program's, so not under them).
  if(NOT RESILIENCE_SANITIZE)
    target_link_options(${target} PRIVATE -Wl,--no-undefined)
  endif()
  if(NOT PROJECT_IS_TOP_LEVEL)
    set_target_properties(${target} PROPERTIES EXCLUDE_FROM_ALL ON)
  endif()
endfunction()

set(_objects "")
foreach(component IN LISTS _components)
  list(APPEND _objects $<TARGET_OBJECTS:${component}>)
endforeach()
add_library(grpc_resilience_shared SHARED ${_objects})
add_library(grpc_resilience::grpc_resilience ALIAS grpc_resilience_shared)
set_target_properties(grpc_resilience_shared PROPERTIES EXPORT_NAME grpc_resilience)
_grpc_resilience_shared_properties(grpc_resilience_shared grpc_resilience)
# The objects' own dependencies. The public headers use gRPC, protobuf and
# Abseil types, so a program links them too; hiredis stays behind the library.
_grpc_resilience_external_deps(_deps ${_components})
foreach(dep IN LISTS _deps)
  if(dep STREQUAL "PkgConfig::hiredis")
    target_link_libraries(grpc_resilience_shared PRIVATE ${dep})
  else()
    target_link_libraries(grpc_resilience_shared PUBLIC ${dep})
  endif()
endforeach()
set_property(GLOBAL APPEND PROPERTY GRPC_RESILIENCE_SHARED_TARGETS grpc_resilience_shared)

# The components' names, as the static build exports them.
foreach(component client server metrics_http redis_limits)
  if(TARGET grpc_resilience_${component})
    add_library(grpc_resilience_${component}_shared INTERFACE)
    target_link_libraries(grpc_resilience_${component}_shared INTERFACE grpc_resilience_shared)
    set_target_properties(grpc_resilience_${component}_shared PROPERTIES
      EXPORT_NAME ${component})
    set_property(GLOBAL APPEND PROPERTY GRPC_RESILIENCE_SHARED_TARGETS
      grpc_resilience_${component}_shared)
  endif()
endforeach()

if(TARGET grpc_resilience_prometheus_cpp)
  add_library(grpc_resilience_prometheus_cpp_shared SHARED
    $<TARGET_OBJECTS:grpc_resilience_prometheus_cpp>)
  set_target_properties(grpc_resilience_prometheus_cpp_shared PROPERTIES
    EXPORT_NAME prometheus_cpp)
  _grpc_resilience_shared_properties(grpc_resilience_prometheus_cpp_shared
    grpc_resilience_prometheus_cpp)
  _grpc_resilience_external_deps(_deps grpc_resilience_prometheus_cpp)
  target_link_libraries(grpc_resilience_prometheus_cpp_shared PUBLIC
    grpc_resilience_shared ${_deps})
  set_property(GLOBAL APPEND PROPERTY GRPC_RESILIENCE_SHARED_TARGETS
    grpc_resilience_prometheus_cpp_shared)
endif()
