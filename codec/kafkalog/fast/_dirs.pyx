# cython: language_level=3, boundscheck=False, wraparound=False
"""A local directory listed in C: ``open`` and ``getdents64`` (``readdir`` but on Linux) of the directory, ``fstatat`` and ``openat``
relative to it (each file's path is not looked up again from the root, as ``os.scandir``'s
``DirEntry.stat()`` and ``open(path)`` look it up), for :func:`kafkalog.log.source._local_entries`.
Planning lists every partition dir of a backup (100,000 of them) and reads a few small files of
each; in Python that is most of its CPU time.

:func:`list_dir` gives the entries, in the order and with the errors of its plain twin
(``_local_entries``, over ``os.scandir``), and, when asked, the whole bytes of the small files of
the directory's greatest segment that the data-loss check reads next (its indexes, then its
``.log``), read through the same open directory, each as it was when sized (so a ``.log`` is sized
after the indexes that claim its offsets are read: SPEC R-LIVE-02). Those are a guess made from the
names alone: the check (:func:`kafkalog.log.gaps.find_gaps`) takes a file from them only where it
would read that file, and reads any other itself; a file the kernel could not read (gone,
unreadable, larger than asked, not a regular file) is left out, so the check meets what it meets.

It holds the GIL while it lists, but not while it opens the directory or opens and reads a file:
planning lists 100,000 small directories, each a few calls of the C library, and releasing the GIL
around each listing call would cost about as much as it; a file read may wait on its file system.
POSIX only (setup.py builds it nowhere else): without it the plain twin runs.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.exc cimport PyErr_CheckSignals, PyErr_SetFromErrnoWithFilenameObject
from libc.errno cimport EINTR, ENOENT, errno
from libc.stdlib cimport free, realloc
from libc.string cimport memcmp, memcpy, strcmp, strcpy, strlen
from posix.fcntl cimport AT_SYMLINK_NOFOLLOW, O_CLOEXEC, O_NONBLOCK, O_RDONLY, openat
from posix.stat cimport S_ISDIR, S_ISREG, fstat, fstatat, struct_stat
from posix.unistd cimport close, read


cdef extern from "Python.h":
    bytes PyUnicode_EncodeFSDefault(object)
    str PyUnicode_DecodeFSDefaultAndSize(const char *, Py_ssize_t)


cdef extern from "<dirent.h>" nogil:
    enum:
        DT_UNKNOWN
        DT_DIR
        DT_LNK


cdef extern from *:
    """
    /* A directory read entry by entry. On Linux, its file descriptor read with getdents64 into a
       buffer of the size glibc's readdir reads with (32 KiB): opendir opens the directory as this
       does, then asks fstat for a block size that sizes its buffer, a system call each directory
       listed. Elsewhere opendir and readdir. */
    #include <dirent.h>
    #include <errno.h>
    #include <fcntl.h>
    #include <unistd.h>
    #if defined(__linux__)
    #include <sys/syscall.h>
    #endif
    #if defined(__linux__) && defined(SYS_getdents64)
    struct kafkalog_dirent64 { unsigned long long d_ino; long long d_off; unsigned short d_reclen; unsigned char d_type; char d_name[]; };
    typedef struct { int fd; char *pos, *end; long long buf[4096]; } kafkalog_dir;
    static int kafkalog_opendir(kafkalog_dir *k, const char *path) {
        if (!path[0]) { errno = ENOENT; return -1; }  /* as opendir("") */
        k->fd = open(path, O_RDONLY | O_NONBLOCK | O_DIRECTORY | O_CLOEXEC);
        k->pos = k->end = (char *)k->buf;
        return k->fd < 0 ? -1 : 0;
    }
    /* 1: the next entry's name and type; 0: the end; -1: an error (errno) */
    static int kafkalog_readdir(kafkalog_dir *k, const char **name, unsigned char *type) {
        struct kafkalog_dirent64 *e;
        if (k->pos >= k->end) {
            long n = syscall(SYS_getdents64, k->fd, k->buf, sizeof(k->buf));
            if (n < 0) return -1;
            if (n == 0) return 0;
            k->pos = (char *)k->buf;
            k->end = k->pos + n;
        }
        e = (struct kafkalog_dirent64 *)k->pos;
        k->pos += e->d_reclen;
        *name = e->d_name;
        *type = e->d_type;
        return 1;
    }
    static void kafkalog_closedir(kafkalog_dir *k) { close(k->fd); }
    #else
    typedef struct { int fd; DIR *d; } kafkalog_dir;
    static int kafkalog_opendir(kafkalog_dir *k, const char *path) {
        k->d = opendir(path);
        if (k->d == NULL) return -1;
        k->fd = dirfd(k->d);
        return 0;
    }
    static int kafkalog_readdir(kafkalog_dir *k, const char **name, unsigned char *type) {
        struct dirent *e;
        errno = 0;  /* readdir tells its end from its failure by errno alone */
        e = readdir(k->d);
        if (e == NULL) return errno ? -1 : 0;
        *name = e->d_name;
        *type = e->d_type;
        return 1;
    }
    static void kafkalog_closedir(kafkalog_dir *k) { closedir(k->d); }
    #endif
    """
    ctypedef struct kafkalog_dir:
        int fd
    int kafkalog_opendir(kafkalog_dir *k, const char *path) nogil
    int kafkalog_readdir(kafkalog_dir *k, const char **name, unsigned char *type) nogil
    void kafkalog_closedir(kafkalog_dir *k) nogil


#: the most bytes a read asks for at once (None: as many as wanted); set by the tests, which hold
#: the kernel to a file system that answers reads short of a file's end (a FUSE mount may)
cdef Py_ssize_t _read_cap = 0


def cap_reads(cap):
    """Make each read ask for at most ``cap`` bytes (None: no cap); for the tests."""
    global _read_cap
    _read_cap = 0 if cap is None else cap


#: every entry taken as of unknown type (``DT_UNKNOWN``, as some file systems list every entry),
#: so asked for with ``fstatat``; set by the tests
cdef bint _unknown_types = False


def pretend_unknown_types(bint on):
    """Take every entry's type as unknown (``DT_UNKNOWN``) when ``on``; for the tests."""
    global _unknown_types
    _unknown_types = on


cdef object _raise_errno(object filename):
    PyErr_SetFromErrnoWithFilenameObject(OSError, filename)


cdef Py_ssize_t _read_whole(int dirfd, const char *name, Py_ssize_t most, char **buf, Py_ssize_t *room) except -2:
    """The bytes of regular file ``name`` under ``dirfd`` read into ``buf`` (grown as needed): their
    count, or -1 when the file is not a regular file, holds more than ``most`` bytes, or could not
    be opened or read (the caller then reads it itself, and meets what it meets). The file is
    opened (without waiting: a FIFO's open would wait for a writer), then sized through that open
    file (``fstat``: the size is the bytes' own file's, even if another is renamed over the name
    meanwhile), and read as it was then: exactly that many bytes (read on past a read that comes
    back short, as a FUSE file system's may; fewer if it shrank meanwhile), with no read to tell its
    end; one that grew meanwhile is read as it was sized, as a reader that came a moment earlier
    would have read it. A file sized empty is not read (the usual last segment's trimmed
    ``.index``), one sized above ``most`` is not read either (an active segment's index is
    preallocated to 10 MiB), nor is anything but a regular file. One that cannot be opened is left
    to the caller, as an empty one too: it meets what one process meets. A pseudo-file that says it
    is empty and is not (``/proc``) is taken as empty: no Kafka file is one. The GIL is released
    around each call that may wait on the file system (a FUSE mount, NFS)."""
    cdef int fd, r
    cdef Py_ssize_t n = 0, want, size
    cdef ssize_t got
    cdef char *grown
    cdef struct_stat st
    with nogil:
        fd = openat(dirfd, name, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
    if fd < 0:
        return -1
    try:
        with nogil:
            r = fstat(fd, &st)
        if r != 0 or not S_ISREG(st.st_mode) or st.st_size > most:
            return -1
        size = <Py_ssize_t>st.st_size
        if size > room[0]:
            want = max(size, room[0] * 2, 4096)
            grown = <char *>realloc(buf[0], want)
            if grown == NULL:
                raise MemoryError()
            buf[0], room[0] = grown, want
        while n < size:
            want = size - n
            if _read_cap and want > _read_cap:
                want = _read_cap
            with nogil:
                got = read(fd, buf[0] + n, want)
            if got < 0:
                if errno == EINTR:
                    if PyErr_CheckSignals() < 0:
                        return -2
                    continue
                return -1
            if got == 0:
                break  # it shrank since it was sized
            n += got
        return n
    finally:
        close(fd)


cdef object _tuple_new = tuple.__new__

#: the kinds of segment file the data-loss check reads of the last segment, in its order
cdef const char *_HELD_SUFFIXES[4]
_HELD_SUFFIXES[:] = [".index", ".timeindex", ".txnindex", ".log"]


def list_dir(str path, list subdirs, object entry, object skip, Py_ssize_t held_bytes=0):
    """The entries of local directory ``path``, as :func:`kafkalog.log.source._local_entries` gives
    them (each an ``entry``, a tuple type, of ``(path, size, is_dir, name)``; a file's size only for
    ``.log`` and ``.log.swap``), and the bytes it read of the greatest segment's files (name -> bytes; None
    when ``held_bytes`` is 0). With ``subdirs``, only the files are given, the paths of the
    directories (but those whose name ``skip`` finds a match in) added to ``subdirs``.

    ``held_bytes``: read the greatest 20-digit stem's ``.index``, ``.timeindex``, ``.txnindex`` and
    ``.log`` (in that order, as the data-loss check reads them) each holding at most that many
    bytes. Errors as ``os.scandir`` raises them: the directory's, and an entry's ``stat`` (its
    type, for a symbolic link or an entry of unknown type, or its size) other than one removed."""
    cdef bytes bpath = PyUnicode_EncodeFSDefault(path)  # as os.fsencode, as os.scandir encodes it
    cdef const char *cpath = PyBytes_AS_STRING(bpath)
    cdef Py_ssize_t plen = PyBytes_GET_SIZE(bpath)
    cdef int fd
    cdef kafkalog_dir d
    cdef unsigned char etype
    cdef const char *cname
    cdef Py_ssize_t nlen, i, got
    cdef struct_stat st
    cdef int r, dtype
    cdef bint is_dir, stat_gone, have_st
    cdef char best[20]
    cdef char fname[32]  # the greatest stem and a suffix of _HELD_SUFFIXES, NUL-ended
    cdef int kinds = 0, k
    cdef list best_names = None  # the names listed of the greatest stem's kinds, by place
    cdef char *buf = NULL
    cdef Py_ssize_t room = 0
    cdef list out = []
    cdef object name, size
    cdef dict held = None
    cdef str prefix
    if <Py_ssize_t>strlen(cpath) != plen:
        raise ValueError("embedded null byte")  # as os.scandir
    prefix = path if (plen == 0 or cpath[plen - 1] == b"/") else path + "/"  # as DirEntry.path joins them
    with nogil:
        r = kafkalog_opendir(&d, cpath)
    if r != 0:
        _raise_errno(path)
    fd = d.fd
    try:
        while True:
            r = kafkalog_readdir(&d, &cname, &etype)
            if r <= 0:
                if r < 0:
                    _raise_errno(path)
                break
            if cname[0] == b"." and (cname[1] == 0 or (cname[1] == b"." and cname[2] == 0)):
                continue
            nlen = strlen(cname)
            name = PyUnicode_DecodeFSDefaultAndSize(cname, nlen)
            dtype = DT_UNKNOWN if _unknown_types else etype
            have_st = stat_gone = is_dir = False
            if dtype == DT_DIR:
                is_dir = True
            elif dtype == DT_LNK or dtype == DT_UNKNOWN:  # as DirEntry.is_dir(): the type of what the link names
                r = fstatat(fd, cname, &st, 0)
                if r == 0:
                    have_st = True
                    is_dir = S_ISDIR(st.st_mode)
                elif errno == ENOENT:
                    is_dir = False  # gone, or a link to nothing
                    stat_gone = True
                else:
                    _raise_errno(prefix + name)
            else:
                is_dir = False
            if is_dir:
                if subdirs is None:
                    out.append(_tuple_new(entry, (prefix + name, 0, True, name)))
                elif skip(name) is None:
                    subdirs.append(prefix + name)
                continue
            size = None
            if _ends(cname, nlen, b".log", 4) or _ends(cname, nlen, b".log.swap", 9):  # the names of _SIZED, as the decoded name ends
                if stat_gone:
                    continue  # removed while listed
                if not have_st:
                    r = fstatat(fd, cname, &st, AT_SYMLINK_NOFOLLOW)
                    if r != 0:
                        if errno == ENOENT:
                            continue  # removed while listed
                        _raise_errno(prefix + name)
                size = st.st_size
            out.append(_tuple_new(entry, (prefix + name, size, False, name)))
            if held_bytes and nlen > 21 and cname[20] == b"." and _digits20(cname):
                k = _kind(cname + 20)
                if k >= 0:
                    r = memcmp(cname, best, 20) if kinds else 1
                    if r > 0:
                        memcpy(best, cname, 20)
                        kinds = 0
                        best_names = [None, None, None, None]
                    if r >= 0:
                        kinds |= 1 << k
                        best_names[k] = name  # the held file's key: the listing's own name, not made again
        if held_bytes and kinds:
            held = {}
            for i in range(4):
                if not kinds & (1 << i):
                    continue
                memcpy(fname, best, 20)
                strcpy(fname + 20, _HELD_SUFFIXES[i])
                got = _read_whole(fd, fname, held_bytes, &buf, &room)
                if got >= 0:
                    held[best_names[i]] = PyBytes_FromStringAndSize(buf, got)
    finally:
        free(buf)
        kafkalog_closedir(&d)
    return out, held


cdef inline bint _ends(const char *name, Py_ssize_t nlen, const char *suffix, Py_ssize_t slen) noexcept:
    """Whether ``name`` (``nlen`` bytes) ends with ``suffix``: an ASCII suffix ends the bytes as it
    ends the name they decode to (the file system encoding keeps ASCII bytes as they are)."""
    return nlen >= slen and memcmp(name + nlen - slen, suffix, slen) == 0


cdef inline bint _digits20(const char *p) noexcept:
    cdef int i
    for i in range(20):
        if p[i] < b"0" or p[i] > b"9":
            return False
    return True


cdef inline int _kind(const char *suffix) noexcept:
    """The place in :data:`_HELD_SUFFIXES` of the kind that ``suffix`` (NUL-ended) names; -1: none."""
    cdef int i
    for i in range(4):
        if strcmp(suffix, _HELD_SUFFIXES[i]) == 0:
            return i
    return -1
