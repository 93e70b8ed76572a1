# Writes the linker response file for linking a program with the sync
# tracer's --wrap interposers (gcc ... -Wl,@<file>).  Run as a script
# (cmake -P) at build time and included at install time, with:
#   OUT      the file to write
#   ARCHIVE  liblayerprof-syncwrap.a
#   RUNTIME  liblayerprof.so
#   LIBDIR   the directory the program finds liblayerprof.so in when run
#   TIME64   set on a 32-bit target: the C library's __*64 time entries too
set(symbols
  pthread_mutex_lock pthread_mutex_trylock pthread_mutex_timedlock pthread_mutex_clocklock pthread_mutex_unlock
  pthread_rwlock_rdlock pthread_rwlock_tryrdlock pthread_rwlock_timedrdlock pthread_rwlock_clockrdlock
  pthread_rwlock_wrlock pthread_rwlock_trywrlock pthread_rwlock_timedwrlock pthread_rwlock_clockwrlock
  pthread_rwlock_unlock pthread_spin_lock pthread_spin_trylock pthread_spin_unlock
  pthread_cond_wait pthread_cond_timedwait pthread_cond_clockwait pthread_cond_signal pthread_cond_broadcast
  pthread_barrier_wait pthread_join pthread_tryjoin_np pthread_timedjoin_np pthread_clockjoin_np
  sem_wait sem_trywait sem_timedwait sem_clockwait sem_post pthread_create)
# a 32-bit C library's 64-bit time entries (synchook.c's LP_SYNC_TIME64)
if(TIME64)
  list(APPEND symbols __pthread_mutex_timedlock64 __pthread_mutex_clocklock64 __pthread_rwlock_timedrdlock64
    __pthread_rwlock_clockrdlock64 __pthread_rwlock_timedwrlock64 __pthread_rwlock_clockwrlock64
    __pthread_cond_timedwait64 __pthread_cond_clockwait64 __pthread_timedjoin_np64 __pthread_clockjoin_np64
    __sem_timedwait64 __sem_clockwait64)
endif()
set(text "")
foreach(sym ${symbols})
  string(APPEND text "--wrap=${sym}\n")
endforeach()
# The interposers whole (the option may come before the objects that need
# them), and the runtime whatever the --as-needed state of the command.
string(APPEND text "--push-state\n--whole-archive\n\"${ARCHIVE}\"\n--no-whole-archive\n--no-as-needed\n"
  "\"${RUNTIME}\"\n--pop-state\n-rpath=\"${LIBDIR}\"\n")
file(WRITE "${OUT}" "${text}")
