# Cross-building the target side (runtime, agent, their tests) with a GNU
# toolchain: cmake -DCMAKE_TOOLCHAIN_FILE=cmake/cross.cmake
#   -DLP_CROSS_PREFIX=aarch64-linux-gnu-   (the compiler is ${prefix}gcc)
#   -DLP_CROSS_ARCH=aarch64                (aarch64, arm, x86_64, ...)
#   [-DLP_CROSS_SYSROOT=/path/to/sysroot]  (a vendor SDK's sysroot)
# scripts/cross-test does this for Debian's cross toolchains.
set(CMAKE_SYSTEM_NAME Linux)
# the toolchain file is read again in try_compile projects: pass these on
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES LP_CROSS_PREFIX LP_CROSS_ARCH LP_CROSS_SYSROOT)
if(NOT LP_CROSS_PREFIX OR NOT LP_CROSS_ARCH)
  message(FATAL_ERROR "set LP_CROSS_PREFIX (e.g. aarch64-linux-gnu-) and LP_CROSS_ARCH (e.g. aarch64)")
endif()
set(CMAKE_SYSTEM_PROCESSOR ${LP_CROSS_ARCH})
set(CMAKE_C_COMPILER ${LP_CROSS_PREFIX}gcc)
set(CMAKE_ASM_COMPILER ${LP_CROSS_PREFIX}gcc)
if(LP_CROSS_SYSROOT)
  set(CMAKE_SYSROOT ${LP_CROSS_SYSROOT})
  set(CMAKE_FIND_ROOT_PATH ${LP_CROSS_SYSROOT})
endif()
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
# the target side only by default: the host tools run on the developer's
# machine. -DLP_HOST=ON builds the layerprof command too, for a sysroot that
# has elfutils and json-c (scripts/arm-vm builds it so against the test
# guest's root file system, with PKG_CONFIG_SYSROOT_DIR and PKG_CONFIG_LIBDIR)
set(LP_HOST OFF CACHE BOOL "build the host side (layerprof command, needs elfutils)")
