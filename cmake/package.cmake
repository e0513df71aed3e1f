# The Debian package (CPack's DEB generator): `cpack -G DEB` in a build
# folder configured with -DBUILD_SHARED_LIBS=ON -DCMAKE_INSTALL_PREFIX=/usr
# (scripts/package.sh) makes grpc-resilience-dev_<version>_<arch>.deb: the
# shared libraries, the public headers, the CMake package and the pkg-config
# files, under /usr. One package: `apt-get install ./grpc-resilience-dev_...deb`
# installs it with what it needs from Debian.
#
# Its dependencies: the exact gRPC C++ library it was built against (the
# library reads gRPC 1.51's private members behind a version check, so another
# build of libgrpc++ must not be swapped in underneath), the other shared
# libraries it links (dpkg-shlibdeps), and the -dev packages whose headers and
# CMake files the public headers and grpc_resilienceConfig.cmake use.

# _grpc_resilience_dpkg_version(<out> <package>): the installed version of a Debian package,
# empty when there is none (or no dpkg).
function(_grpc_resilience_dpkg_version out package)
  set(version "")
  find_program(_dpkg_query dpkg-query)
  if(_dpkg_query)
    execute_process(COMMAND ${_dpkg_query} -W -f=\${Version} ${package}
      OUTPUT_VARIABLE version ERROR_QUIET RESULT_VARIABLE failed)
    if(failed)
      set(version "")
    endif()
  endif()
  set(${out} "${version}" PARENT_SCOPE)
endfunction()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME grpc-resilience-dev)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "grpc-resilience")
set(CPACK_PACKAGE_CONTACT "grpc-resilience maintainers <grpc-resilience@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "resilience interceptors for gRPC C++: retry, timeouts, circuit breakers, server throttling")
set(CPACK_PACKAGE_DESCRIPTION
    "Per-method policies from one JSON file for gRPC C++ clients (retry, timeout, circuit breaker, bulkhead) and servers (throttling, fault injection, drain). Shared libraries, headers, CMake package (find_package(grpc_resilience)) and pkg-config files.")
set(CPACK_RESOURCE_FILE_LICENSE "${PROJECT_SOURCE_DIR}/LICENSE")
set(CPACK_PACKAGING_INSTALL_PREFIX "${CMAKE_INSTALL_PREFIX}")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # grpc-resilience-dev_0.3.0_amd64.deb
set(CPACK_DEBIAN_PACKAGE_SECTION libdevel)
# The shlibs file and the ldconfig trigger for the shared libraries.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY "=")
find_program(_dpkg_shlibdeps dpkg-shlibdeps)
if(_dpkg_shlibdeps)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
endif()

_grpc_resilience_dpkg_version(_grpc_version libgrpc++-dev)
set(_depends "")
if(_grpc_version)
  list(APPEND _depends "libgrpc++1.51 (= ${_grpc_version})" "libgrpc++-dev (= ${_grpc_version})")
else()
  message(STATUS "grpc_resilience package: libgrpc++-dev is not a Debian package here; "
                 "the .deb names no exact gRPC version")
  list(APPEND _depends "libgrpc++-dev")
endif()
list(APPEND _depends libprotobuf-dev libabsl-dev)
if(TARGET grpc_resilience_prometheus_cpp)
  list(APPEND _depends prometheus-cpp-dev)
endif()
list(JOIN _depends ", " CPACK_DEBIAN_PACKAGE_DEPENDS)

include(CPack)
