# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The record-object walker in C: :class:`kafkalog.format.records.record.Record` objects made
straight from a v2 record area: offsets and timestamps as R-REC-01 and R-V2-10/R-V2-12 say (Java's
long arithmetic), sizes as R-REC-02, sequences as R-V2-16 (Java's int arithmetic), header keys as
R-REC-09, varints as R-PRIM-04; anything R-REC-03 calls malformed is the plain decoder's to report.

The walk reads the record area through a ``Py_buffer`` (no copy) and checks every byte it reads
against the end of the record it is in (itself inside the area): a record is read only when its
length varint, every field and every header lie inside it and it ends exactly where its length says.
Anything else (a structural problem of any kind, a header key that is not well-formed UTF-8, an
offset past int64) stops the walk: it returns the records made before that record and the plain
decoder (``RecordBatch.records_plain``) takes the batch from there, so records and errors (class,
file, position, offset) are the plain decoder's by construction.

Objects are made as a C extension makes them: keys, values and header values with
``PyBytes_FromStringAndSize``, header keys with ``PyUnicode_DecodeUTF8`` (strict: valid UTF-8
decodes as Java decodes it; the rest is the plain decoder's, R-REC-09), integers with
``PyLong_FromLongLong``, a record as ``tuple.__new__(Record, ...)`` allocates it, filled in place and
left out of the cyclic collector (it holds only ints, bytes, None and tuples of those: no cycle). Values shared by many records (``None``, ``()``, a repeated timestamp, the
batch's LogAppendTime) are one object referenced again.

Varints are read as Kafka's ByteUtils reads them (R-PRIM-04): a varint keeps the low 32 bits of at
most 5 bytes, a varlong the low 64 bits of at most 10; a longer encoding is an error.
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.ref cimport Py_INCREF, PyObject
from libc.stdint cimport INT32_MAX, INT64_MAX, INT64_MIN, int32_t, int64_t, uint32_t, uint64_t

from kafkalog.fast._varint cimport read_varint


cdef extern from "Python.h":
    void PyTuple_SET_ITEM(object t, Py_ssize_t i, PyObject* o)  # steals o
    void PyList_SET_ITEM(object l, Py_ssize_t i, PyObject* o)  # steals o
    object PyBytes_FromStringAndSize(const char* s, Py_ssize_t n)
    object PyLong_FromLongLong(long long v)
    object PyTuple_New(Py_ssize_t n)
    object PyList_New(Py_ssize_t n)
    int PyList_SetSlice(object l, Py_ssize_t low, Py_ssize_t high, PyObject* items) except -1
    PyObject* PyUnicode_DecodeUTF8(const char* s, Py_ssize_t n, const char* errors)  # NULL on error
    void PyErr_Clear()


cdef extern from *:
    """
    /* A record: an instance of the tuple subtype `type` holding the 9 new references in `items`
       (stolen). Allocated as tuple.__new__(type, ...) allocates it, except that it is not tracked
       by the cyclic collector: it holds only ints, bytes, None and tuples of str and bytes, which
       can form no cycle (the collector would untrack it at its first pass, as it does such tuples).
       Nothing can fail between the allocation and the last item, so no slot is ever read unset.
       On failure every item is released and NULL returned (MemoryError set). */
    static PyObject *kafkalog_record(PyObject *type, PyObject **items) {
        PyTupleObject *t = PyObject_GC_NewVar(PyTupleObject, (PyTypeObject *)type, 9);
        if (t == NULL) {
            for (int i = 0; i < 9; i++) Py_DECREF(items[i]);
            return NULL;
        }
        for (int i = 0; i < 9; i++) t->ob_item[i] = items[i];
        return (PyObject *)t;
    }
    """
    object kafkalog_record(object type, PyObject** items)


cdef extern from *:
    """
    #include <stddef.h>
    #include <structmember.h>
    #define KAFKALOG_MAX_FIELDS 16
    static PyMemberDef kafkalog_fields[KAFKALOG_MAX_FIELDS];
    static PyObject *kafkalog_field_strings = NULL;  /* the names and docs the definitions point into: kept */

    /* Read-only member descriptors for the first items of a tuple subtype's instances: descriptor i
       reads the object at ob_item[i] (a T_OBJECT_EX member at that offset; tuple items are set
       when the tuple is made and never NULL after). CPython's attribute cache specializes reads of
       such members (LOAD_ATTR_SLOT), which it does not do for namedtuple's _tuplegetter. */
    static PyObject *kafkalog_item_members(PyObject *type, PyObject *names, PyObject *docs) {
        if (!PyType_Check(type) || !PyType_IsSubtype((PyTypeObject *)type, &PyTuple_Type)
                || ((PyTypeObject *)type)->tp_itemsize != sizeof(PyObject *)
                || !PyTuple_Check(names) || !PyTuple_Check(docs) || PyTuple_GET_SIZE(names) != PyTuple_GET_SIZE(docs)
                || PyTuple_GET_SIZE(names) > KAFKALOG_MAX_FIELDS || kafkalog_field_strings != NULL) {
            PyErr_SetString(PyExc_ValueError, "item members are made once, for a tuple subtype, from names and docs of one length");
            return NULL;
        }
        Py_ssize_t n = PyTuple_GET_SIZE(names);
        for (Py_ssize_t i = 0; i < n; i++) {
            const char *name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(names, i));
            const char *doc = PyUnicode_AsUTF8(PyTuple_GET_ITEM(docs, i));
            if (name == NULL || doc == NULL) return NULL;
            kafkalog_fields[i].name = name;
            kafkalog_fields[i].type = T_OBJECT_EX;
            kafkalog_fields[i].offset = offsetof(PyTupleObject, ob_item) + i * sizeof(PyObject *);
            kafkalog_fields[i].flags = READONLY;
            kafkalog_fields[i].doc = doc;
        }
        PyObject *out = PyTuple_New(n);
        if (out == NULL) return NULL;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *d = PyDescr_NewMember((PyTypeObject *)type, &kafkalog_fields[i]);
            if (d == NULL) { Py_DECREF(out); return NULL; }
            PyTuple_SET_ITEM(out, i, d);
        }
        kafkalog_field_strings = PyTuple_Pack(2, names, docs);
        if (kafkalog_field_strings == NULL) { Py_DECREF(out); return NULL; }
        return out;
    }
    """
    object kafkalog_item_members(object type, object names, object docs)


def item_members(object record_type, tuple names, tuple docs):
    """Read-only attribute descriptors for ``record_type`` (a tuple subtype, such as
    :class:`kafkalog.format.records.record.Record`): the one named ``names[i]`` (documented
    ``docs[i]``) returns item ``i``, as ``collections``' ``_tuplegetter`` does, but as a member
    descriptor, whose reads CPython specializes (a field read costs about a fifth as much).
    Made once per process."""
    return kafkalog_item_members(record_type, names, docs)


#: No v2 record is shorter: length varint, attributes, timestamp and offset deltas, key and value
#: lengths, header count (one byte each). A count past bytes / 7 is wrong before any record is read.
cdef Py_ssize_t MIN_RECORD = 7

cdef int64_t _I32_MAX = INT32_MAX
cdef int64_t _I64_MAX = INT64_MAX
cdef int64_t _I64_MIN = INT64_MIN


cdef inline int64_t _int32(int64_t v) noexcept nogil:
    """``v`` as a Java int: its low 32 bits, signed."""
    return <int32_t>(<uint32_t>(<uint64_t>v & 0xFFFFFFFFU))


cdef inline PyObject* _ref(object v) noexcept:
    """A new reference to ``v``, for a slot that steals it."""
    Py_INCREF(v)
    return <PyObject*>v


cdef inline void _set(object t, Py_ssize_t i, object v) noexcept:
    """Fill slot ``i`` of a tuple just made (so empty), giving it a reference to ``v``."""
    Py_INCREF(v)
    PyTuple_SET_ITEM(t, i, <PyObject*>v)


cdef object _headers(const unsigned char* b, Py_ssize_t* pos, Py_ssize_t end, int64_t nh):
    """The ``nh`` headers from ``b[*pos:end]`` as a tuple of (str, bytes | None) pairs, or None
    (nothing made) when one does not fit or its key is not well-formed UTF-8."""
    cdef object out = PyTuple_New(nh)
    cdef object pair, value
    cdef PyObject* key
    cdef Py_ssize_t p = pos[0]
    cdef int64_t hk, hv
    cdef Py_ssize_t h
    for h in range(nh):
        p = read_varint(b, p, end, 5, &hk)
        if p < 0 or hk < 0 or hk > end - p:
            return None
        key = PyUnicode_DecodeUTF8(<const char*>b + p, <Py_ssize_t>hk, NULL)
        if key == NULL:
            PyErr_Clear()  # ill-formed: the plain decoder replaces it as Java does (R-REC-09)
            return None
        pair = PyTuple_New(2)
        PyTuple_SET_ITEM(pair, 0, key)  # the pair owns the new string
        p += <Py_ssize_t>hk
        p = read_varint(b, p, end, 5, &hv)
        if p < 0:
            return None
        if hv < 0:
            _set(pair, 1, None)
        else:
            if hv > end - p:
                return None
            value = PyBytes_FromStringAndSize(<const char*>b + p, <Py_ssize_t>hv)
            _set(pair, 1, value)
            p += <Py_ssize_t>hv
        _set(out, h, pair)
    pos[0] = p
    return out


cdef class _Walk:
    """The state of a walk over one record area: the buffer, where the next record starts, the
    batch fields records are made from, the objects shared between records."""

    cdef Py_buffer view
    cdef bint held
    cdef const unsigned char* b
    cdef Py_ssize_t n, pos
    cdef int64_t base_offset, base_timestamp, base_sequence, last_ts
    cdef bint lat, have_ts
    cdef object log_append_time, ts_obj, record_type, empty

    def __cinit__(self, object data, Py_ssize_t start, int64_t base_offset, int64_t base_timestamp,
                  object log_append_time, int64_t base_sequence, object record_type):
        if not (isinstance(record_type, type) and issubclass(record_type, tuple)):
            raise TypeError(f"record_type must be a tuple subclass, not {record_type!r}")
        PyObject_GetBuffer(data, &self.view, PyBUF_SIMPLE)
        self.held = True
        self.b = <const unsigned char*>self.view.buf
        self.n = self.view.len
        self.pos = start if 0 <= start <= self.n else -1
        self.base_offset = base_offset
        self.base_timestamp = base_timestamp
        self.base_sequence = base_sequence
        self.lat = log_append_time is not None
        self.log_append_time = log_append_time
        self.have_ts = False
        self.record_type = record_type
        self.empty = ()

    cdef void release(self) noexcept:
        if self.held:
            PyBuffer_Release(&self.view)
            self.held = False

    def __dealloc__(self):
        self.release()

    cdef bint fits(self, Py_ssize_t count) noexcept:
        """Whether ``count`` more records can fit in the bytes left (each takes at least 7)."""
        return self.pos >= 0 and 0 <= count <= (self.n - self.pos) // MIN_RECORD

    cdef object record(self):
        """The record at ``pos`` (and ``pos`` moved past it), or None (``pos`` unchanged) when it
        cannot be read here."""
        cdef const unsigned char* b = self.b
        cdef Py_ssize_t pos = self.pos, end, record_start = self.pos
        cdef int64_t length, ts_delta, off_delta, klen, vlen, nh, ts, seq
        cdef int attrs
        cdef object rec, key, value, headers, ts_obj, offset_obj, seq_obj, size_obj, attrs_obj
        cdef PyObject* items[9]
        if pos < 0:
            return None
        pos = read_varint(b, pos, self.n, 5, &length)
        if pos < 0 or length <= 0 or length > self.n - pos:
            return None
        end = pos + <Py_ssize_t>length
        attrs = b[pos]
        pos += 1
        pos = read_varint(b, pos, end, 10, &ts_delta)
        if pos < 0:
            return None
        pos = read_varint(b, pos, end, 5, &off_delta)
        if pos < 0:
            return None
        if (off_delta > 0 and self.base_offset > _I64_MAX - off_delta) or (off_delta < 0 and self.base_offset < _I64_MIN - off_delta):
            return None  # the offset leaves int64: the plain decoder's Python ints say what it is
        pos = read_varint(b, pos, end, 5, &klen)
        if pos < 0:
            return None
        if klen < 0:
            key = None
        elif klen > end - pos:
            return None
        else:
            key = PyBytes_FromStringAndSize(<const char*>b + pos, <Py_ssize_t>klen)
            pos += <Py_ssize_t>klen
        pos = read_varint(b, pos, end, 5, &vlen)
        if pos < 0:
            return None
        if vlen < 0:
            value = None
        elif vlen > end - pos:
            return None
        else:
            value = PyBytes_FromStringAndSize(<const char*>b + pos, <Py_ssize_t>vlen)
            pos += <Py_ssize_t>vlen
        pos = read_varint(b, pos, end, 5, &nh)
        if pos < 0 or nh < 0 or nh > end - pos:
            return None
        if nh == 0:
            headers = self.empty
        else:
            headers = _headers(b, &pos, end, nh)
            if headers is None:
                return None
        if pos != end:
            return None
        ts = <int64_t>(<uint64_t>self.base_timestamp + <uint64_t>ts_delta)  # Java's long arithmetic wraps
        if not self.have_ts or ts != self.last_ts:
            self.ts_obj = PyLong_FromLongLong(ts)
            self.last_ts = ts
            self.have_ts = True
        ts_obj = self.ts_obj
        if self.base_sequence < 0:
            seq = -1
        elif self.base_sequence > _int32(_I32_MAX - off_delta):  # DefaultRecordBatch.incrementSequence, in Java ints
            seq = _int32(off_delta - (_I32_MAX - self.base_sequence) - 1)
        else:
            seq = _int32(self.base_sequence + off_delta)
        offset_obj = PyLong_FromLongLong(self.base_offset + off_delta)
        seq_obj = PyLong_FromLongLong(seq)
        size_obj = PyLong_FromLongLong(pos - record_start)
        attrs_obj = PyLong_FromLongLong(attrs)
        items[0] = _ref(offset_obj)
        items[1] = _ref(self.log_append_time if self.lat else ts_obj)
        items[2] = _ref(key)
        items[3] = _ref(value)
        items[4] = _ref(headers)
        items[5] = _ref(seq_obj)
        items[6] = _ref(size_obj)
        items[7] = _ref(attrs_obj)
        items[8] = _ref(ts_obj)
        rec = kafkalog_record(self.record_type, items)
        self.pos = pos
        return rec


def walk(
    object data,
    Py_ssize_t start,
    Py_ssize_t count,
    int64_t base_offset,
    int64_t base_timestamp,
    object log_append_time,
    int64_t base_sequence,
    object record_type,
):
    """(records, position): the ``count`` records of the record area ``data[start:]`` as
    ``record_type`` objects, and the position after them. When a record cannot be read here the
    position is -1 and the list holds the records before it (the plain decoder takes over there).

    ``log_append_time`` is the batch's max timestamp under LogAppendTime (the timestamp every
    record reports, R-V2-12), else None; ``base_sequence`` is -1 without a producer."""
    cdef _Walk w = _Walk(data, start, base_offset, base_timestamp, log_append_time, base_sequence, record_type)
    cdef object out, rec
    cdef Py_ssize_t i
    try:
        if not w.fits(count):
            return [], -1  # more records than the bytes can hold: the plain decoder says what is wrong
        out = PyList_New(count)
        for i in range(count):
            rec = w.record()
            if rec is None:
                PyList_SetSlice(out, i, count, NULL)  # the slots never filled (NULL) go
                return out, -1
            Py_INCREF(rec)
            PyList_SET_ITEM(out, i, <PyObject*>rec)
        return out, w.pos
    finally:
        w.release()


cdef class Records:
    """An iterator over a batch's records, each made as iteration reaches it (so that the memory
    of records already used is reused at once). Where the walk cannot read a record, or bytes are
    left after the last one, the rest comes from ``plain()`` (the plain decoder's list of every
    record, or its error), from the same index on."""

    cdef _Walk walk
    cdef Py_ssize_t done, count
    cdef object plain, rest

    def __cinit__(self, object data, Py_ssize_t start, Py_ssize_t count, int64_t base_offset, int64_t base_timestamp,
                  object log_append_time, int64_t base_sequence, object record_type, object plain):
        self.walk = _Walk(data, start, base_offset, base_timestamp, log_append_time, base_sequence, record_type)
        self.count = count
        self.done = 0
        self.plain = plain
        self.rest = None
        if not self.walk.fits(count):
            self.walk.pos = -1  # a count the bytes cannot hold: the plain decoder says what is wrong

    def __iter__(self):
        return self

    def __next__(self):
        cdef object rec
        if self.rest is None:
            if self.done < self.count:
                rec = self.walk.record()
                if rec is not None:
                    self.done += 1
                    return rec
            elif self.walk.pos == self.walk.n:
                self.walk.release()
                raise StopIteration
            self.walk.release()
            self.rest = iter(self.plain()[self.done:])
        return next(self.rest)
