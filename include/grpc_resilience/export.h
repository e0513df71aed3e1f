/// \file include/grpc_resilience/export.h
///
/// GRPC_RESILIENCE_EXPORT, the mark of the public API in the shared library.
/// The library is compiled with -fvisibility=hidden and
/// -fvisibility-inlines-hidden: in libgrpc_resilience.so (a build with
/// BUILD_SHARED_LIBS=ON) only the classes and functions marked here are
/// visible to a program, everything of src/ stays internal
/// (scripts/check_exported_symbols.sh checks the library's dynamic symbols
/// against the public headers). In the static libraries the mark changes
/// nothing.

#ifndef GRPC_RESILIENCE_EXPORT_H_
#define GRPC_RESILIENCE_EXPORT_H_

/// Marks a public class (all of its members) or a public free function as
/// exported from the shared library (GCC and Clang, the compilers the
/// library builds with).
#define GRPC_RESILIENCE_EXPORT __attribute__((visibility("default")))

/// Marks a class of the library's own, nested in an exported class and
/// defined in its sources (a pimpl's `Impl`), as not exported: a nested
/// class otherwise takes the visibility of the class around it.
#define GRPC_RESILIENCE_NO_EXPORT __attribute__((visibility("hidden")))

#endif  // GRPC_RESILIENCE_EXPORT_H_
