# Writes the linker response file for linking a program with the memory
# tracer's --wrap interposers, of the heap functions and of the wait family
# (`layerprof config --wrap-flags` prints its path): gcc ... -Wl,@<file>.  Run as a script (cmake -P) at build time and
# included at install time, with:
#   OUT      the file to write
#   ARCHIVE  liblayerprof-memwrap.a
#   RUNTIME  liblayerprof.so
#   LIBDIR   the directory the program finds liblayerprof.so in when run
#   SIZE_T   the C++ mangling of size_t: m (64-bit) or j (32-bit)
set(M ${SIZE_T})
set(symbols malloc free calloc realloc reallocarray posix_memalign aligned_alloc memalign valloc pvalloc
  _Znw${M} _Zna${M} _Znw${M}RKSt9nothrow_t _Zna${M}RKSt9nothrow_t _Znw${M}St11align_val_t
  _Zna${M}St11align_val_t _Znw${M}St11align_val_tRKSt9nothrow_t _Zna${M}St11align_val_tRKSt9nothrow_t
  _ZdlPv _ZdaPv _ZdlPv${M} _ZdaPv${M} _ZdlPvRKSt9nothrow_t _ZdaPvRKSt9nothrow_t _ZdlPvSt11align_val_t
  _ZdaPvSt11align_val_t _ZdlPv${M}St11align_val_t _ZdaPv${M}St11align_val_t
  _ZdlPvSt11align_val_tRKSt9nothrow_t _ZdaPvSt11align_val_tRKSt9nothrow_t
  wait waitpid wait3 wait4 waitid)
set(text "")
foreach(sym ${symbols})
  string(APPEND text "--wrap=${sym}\n")
endforeach()
# The interposers whole (the option may come before the objects that need
# them), and the runtime whatever the --as-needed state of the command.
string(APPEND text "--push-state\n--whole-archive\n\"${ARCHIVE}\"\n--no-whole-archive\n--no-as-needed\n"
  "\"${RUNTIME}\"\n--pop-state\n-rpath=\"${LIBDIR}\"\n")
file(WRITE "${OUT}" "${text}")
