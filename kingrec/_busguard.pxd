# cython: language_level=3
# The SIGBUS guard of the compiled readers that read a file mapped in memory (the batch
# checker's check_frames, the frame walk of _frames_c): the one place it is written. A file
# cut short under its mapping loses pages; reading one raises SIGBUS, which would end the
# process. Under the guard the read jumps back instead, and the reader says so.

cdef extern from *:
    """
    #include <setjmp.h>
    #include <signal.h>
    #include <string.h>
    typedef int (*kr_body)(void* run);

    /* While a guarded body reads a mapping, a SIGBUS (a page of the file that is no longer
       there) jumps back to kr_guarded, which returns -2; any other SIGBUS goes to the
       handler there was before (the fault repeats under it). One guarded body at a time
       per thread; the handler is ours only while a body is guarded. A body's progress that
       is read back after a SIGBUS must be volatile. */
    static __thread sigjmp_buf* kr_bus_jump = NULL;
    static struct sigaction kr_bus_before;
    static int kr_bus_depth = 0;

    static void kr_on_bus(int sig, siginfo_t* info, void* context) {
        sigjmp_buf* jump = kr_bus_jump;
        (void)info; (void)context;
        if (jump != NULL) {
            kr_bus_jump = NULL;
            siglongjmp(*jump, 1);
        }
        sigaction(sig, &kr_bus_before, NULL);
    }

    static int kr_guarded(kr_body body, void* run) {
        sigjmp_buf jump;
        struct sigaction ours;
        int result;
        if (kr_bus_depth++ == 0) {
            memset(&ours, 0, sizeof ours);
            ours.sa_sigaction = kr_on_bus;
            ours.sa_flags = SA_SIGINFO | SA_NODEFER;
            sigemptyset(&ours.sa_mask);
            if (sigaction(SIGBUS, &ours, &kr_bus_before) != 0) {
                kr_bus_depth--;
                PyErr_SetFromErrno(PyExc_OSError);
                return -1;
            }
        }
        if (sigsetjmp(jump, 1) == 0) {
            kr_bus_jump = &jump;
            result = body(run);
        } else {
            result = -2;
        }
        kr_bus_jump = NULL;
        if (--kr_bus_depth == 0)
            sigaction(SIGBUS, &kr_bus_before, NULL);
        return result;
    }
    """
    ctypedef int (*Body "kr_body")(void* run) except -1
    # body(run) under the guard: its result, or -2 after a SIGBUS (-1: an error raised).
    int guarded "kr_guarded"(Body body, void* run) except -1
