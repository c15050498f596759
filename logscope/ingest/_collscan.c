/*
 * logscope.ingest._collscan: the NCCL COLL lines of a block of log bytes, found and thinned in one
 * compiled pass, so that polars is handed only the lines that can matter.
 *
 * A COLL-heavy log (NCCL_DEBUG_SUBSYS=COLL) is mostly lines such as
 *     gpu-node01:12345:12400 [0] NCCL INFO AllReduce: opCount 1a sendbuff 0x7f.. ... comm 0x55d0c3a0 ...
 * of which the analysis keeps the first and last few per (process, communicator). Splitting every
 * such line in polars is most of what reading a big log costs; here each line costs a few byte
 * searches. The rules are those of the polars path (logscope/parsers/coll_aside.py), which stays
 * the reference and the fallback; tests/test_coll_prefilter.py holds the two to the same events.
 *
 * scan(block, check_cr, max_line) -> (lines, pairs, groups)
 *     Every line of ``block`` (split at '\n'; a last line without one counts) that has the shape of
 *     a COLL line, as coll_aside.coll_surplus's byte tests define it:
 *       - its first " NCCL INFO " stands before its first ": opCount ", which stands before its
 *         first "comm ";
 *       - between " NCCL INFO " and ": opCount " only ASCII letters (the operation), and after it
 *         hex digits and a space, the space within 20 bytes of the end of ": opCount ";
 *       - no '\r' in it when ``check_cr`` (such a line is split into segments by the caller) and
 *         at most ``max_line`` bytes (a longer one is cut for matching by the caller).
 *     Lines are grouped by (the bytes before " NCCL INFO ", the 20 bytes after "comm "): the
 *     grouping of the polars path, except that NCCL's own timestamp in the head is left out of it
 *     (so that a group is not one second of one process) and handed to Python as "[0000-00-00] ".
 *     ``pairs``: for each COLL line in order, four native uint32: its line index, its group id (the
 *     top bit set when the line's stamp may not read as a time: certain_stamp; such a line is never
 *     set aside), and where it starts and ends in ``block`` (its '\n', or the block's end, not
 *     included), so that reduce steps over the lines it sets aside without reading them again.
 *     ``groups``: a (head, comm) bytes tuple per group id. At most MAX_GROUPS groups are made: a
 *     line of a further group is left to the caller, as a line of another shape is.
 *
 * reduce(block, lines, pairs, merged, timed, head, tail, first_line[, with_lines])
 *         -> (kept, kept_count, set_aside[, coll_lines, counts])
 *     ``merged``: per group id, the id (int32) of the group it belongs to once validated and merged
 *     (lines of one process and communicator), or -1 for a group that is not valid; ``timed``: per
 *     group id, 1 when its lines carry a leading time. A valid line is set aside when it is neither
 *     among the first ``head`` nor the last ``tail`` of its merged group in the block, except that in
 *     each run of lines set aside back to back the first and the last timed one stay (the lines
 *     around take their times from them). ``kept``: every other line, as "<number>\x1f<line>", its
 *     number in the file being ``first_line`` + 1 + its index in the block (the caller reads them
 *     with a CSV reader, 0x1f the separator); ``kept_count`` lines; ``set_aside``: how many were.
 *     The lines set aside are stepped over by their spans in ``pairs``, never read again: only the
 *     kept lines are, so that the block is read once, by scan. With ``with_lines`` true, two more:
 *     ``coll_lines``, for each valid line kept, in order, four native uint32: its merged group (its
 *     top bits: TIMED_LINE, the line carries a time, being of a timed group with a certain stamp;
 *     KEPT_LINE, it must stay, being of a timed group with a stamp that is not), its place among
 *     that group's lines in the block, and where it starts and how long it is in ``kept`` (its
 *     number and separator included); and ``counts``, one native uint32 per merged group: its
 *     lines in the block. The caller can then drop kept lines that other blocks make surplus
 *     (drop_across).
 *
 * drop_across(kepts, coll_lines, bounds) -> [(kept, dropped), ...]
 *     A file's consecutive reduced blocks (lists: each block's ``kept`` and ``coll_lines`` from a
 *     reduce with_lines, and its bounds: native int64 pairs, one per merged group), each without
 *     the valid lines whose place p in their merged group m has bounds[2m] <= p < bounds[2m + 1]
 *     and that are not KEPT_LINE, except, as reduce does, the first and the last TIMED_LINE of
 *     each run of such lines back to back in the kept lines (a run goes on from one block's last
 *     kept line to the next block's first): the kept lines around a run take their times from
 *     those. ``dropped``: how many lines of the block were left out.
 *
 * controls(block) -> int
 *     Which of NUL (1), '\r' (2) and 0x1f (4) ``block`` holds, in one pass: the reader's three
 *     questions of every block (NUL bytes to drop, carriage returns to split at, the CSV reader's
 *     separator to replace), each a pass over the block in Python.
 *
 * Nothing here allocates per line; memory is bounded by the block (a block is at most a few tens
 * of MiB, so a uint32 line index cannot overflow: blocks over 4 GiB are refused).
 *
 * Every entry point checks its arguments against the block before one of them sizes a buffer or
 * indexes one, and raises ValueError on what does not fit (a line count no block of that size
 * has, a negative count, a span or a group id out of range): a caller's mistake is an exception,
 * never memory corruption. tests/test_scanner_api.py forges each; .ci/run runs them, the byte
 * pass's tests and a fuzz corpus against a build with -fsanitize=address,undefined
 * (tools/sanitized_scanner.py).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define MAX_GROUPS 65536
/* In a pair's group id: the line's NCCL timestamp may not read as a time (see certain_stamp). */
#define UNSURE_STAMP 0x80000000u
#define GROUP_OF(id) ((id) & ~UNSURE_STAMP)
/* A pair (scan's docstring): four uint32 per COLL line. */
#define PAIR_FIELDS 4
#define LINE_OF(pair, i) ((pair)[PAIR_FIELDS * (i)])
#define ID_OF(pair, i) ((pair)[PAIR_FIELDS * (i) + 1])
#define START_OF(pair, i) ((pair)[PAIR_FIELDS * (i) + 2])
#define END_OF(pair, i) ((pair)[PAIR_FIELDS * (i) + 3])
/* In reduce's coll_lines, over a line's merged group: it carries a time (of a timed group, its
 * stamp certain), or it must stay (of a timed group, its stamp unsure). Merged groups are fewer
 * than MAX_GROUPS. */
#define TIMED_LINE 0x80000000u
#define KEPT_LINE 0x40000000u
#define MERGED_OF(field) ((field) & ~(TIMED_LINE | KEPT_LINE))
#define TABLE_BITS 17 /* 2 * MAX_GROUPS slots: the open-addressing table stays at most half full */
#define COMM_SLICE 20
#define OP_SLICE 20

static const char INFO[] = " NCCL INFO ";
#define INFO_LEN 11
static const char OPCOUNT[] = ": opCount ";
#define OPCOUNT_LEN 10
static const char COMM[] = "comm ";
#define COMM_LEN 5

/* The first occurrence of needle in [hay, hay + len), or NULL. Lines are short: a memchr for one of
 * the needle's rarer bytes (needle[anchor]) and a compare beat memmem's set-up per call. Anchor
 * positions come in the order of the starts, so the first hit is the first occurrence. */
/* Whether the n bytes at a and b are equal, for a needle of 4 to 16 bytes: two word compares
 * that may overlap, no call. */
static inline int same(const char *a, const char *b, Py_ssize_t n) {
    if (n >= 8) {
        uint64_t x, y, u, v;
        memcpy(&x, a, 8);
        memcpy(&y, b, 8);
        memcpy(&u, a + n - 8, 8);
        memcpy(&v, b + n - 8, 8);
        return x == y && u == v;
    }
    uint32_t x, y, u, v;
    memcpy(&x, a, 4);
    memcpy(&y, b, 4);
    memcpy(&u, a + n - 4, 4);
    memcpy(&v, b + n - 4, 4);
    return x == y && u == v;
}

/* needles are 4 to 16 bytes (see same) */
static const char *find(const char *hay, Py_ssize_t len, const char *needle, Py_ssize_t nlen, Py_ssize_t anchor) {
    if (len < nlen)
        return NULL;
    const char *p = hay + anchor;
    const char *last = hay + len - nlen + anchor;
    while (p <= last) {
        p = memchr(p, needle[anchor], (size_t)(last - p + 1));
        if (p == NULL)
            return NULL;
        if (same(p - anchor, needle, nlen))
            return p - anchor;
        p++;
    }
    return NULL;
}

/* Character classes by table: LETTER for [A-Za-z], HEX for [0-9a-fA-F]. */
#define LETTER 1
#define HEX 2
#define MARK 4 /* where wording_of's masks can start (and '#', written as it is) */
static unsigned char classes[256];

static void fill_classes(void) {
    for (int c = 0; c < 256; c++)
        classes[c] = (unsigned char)((((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')) ? LETTER : 0)
                                     | (((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')) ? HEX
                                                                                                                    : 0)
                                     | ((c >= '0' && c <= '9') || c == 'T' || c == '_' || c == 'I' || c == 'W'
                                                || c == 'E' || c == 'F' || c == '#' ? MARK : 0));
}

static uint64_t hash_bytes(uint64_t h, const char *p, Py_ssize_t n) {
    /* Over 8-byte words; the last 8 bytes of a longer text are read as one more word (they may
     * overlap the one before), a short text byte by byte. Equal texts hash equal: groups are few,
     * and a collision only costs a compare. */
    const char *end = p + n;
    if (n >= 8) {
        for (; end - p > 8; p += 8) {
            uint64_t w;
            memcpy(&w, p, 8);
            h = (h ^ w) * 0x100000001b3ULL;
            h ^= h >> 29;
        }
        uint64_t w;
        memcpy(&w, end - 8, 8);
        return ((h ^ w) * 0x100000001b3ULL) ^ (uint64_t)n;
    }
    for (; p < end; p++)
        h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
    return h ^ (uint64_t)n;
}

/* A group: its head in two parts, around NCCL's own timestamp when it holds one (the stamp left
 * out: it changes every second), and its comm slice. */
typedef struct {
    const char *head;
    Py_ssize_t head_len;  /* the whole head, or what stands before the stamp */
    const char *after;    /* what follows the stamp, NULL without one */
    Py_ssize_t after_len;
    const char *comm;
    Py_ssize_t comm_len;
} Group;

static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* Where NCCL's timestamp (NCCL_DEBUG_TIMESTAMP_FORMAT's default "[%F %T] ") stands in a head: the
 * leftmost "[dddd-dd-dd...] ", as coll_aside.py's _NCCL_STAMP finds it (with ASCII digits; a
 * head whose stamp has others is not split here, and coll_aside splits it). Returns its start and
 * sets *after to the byte after its "] ", or returns NULL. */
static const char *nccl_stamp(const char *head, const char *end, const char **after) {
    const char *p = head;
    while ((p = memchr(p, '[', (size_t)(end - p))) != NULL) {
        if (end - p >= 11 && is_digit(p[1]) && is_digit(p[2]) && is_digit(p[3]) && is_digit(p[4]) && p[5] == '-'
            && is_digit(p[6]) && is_digit(p[7]) && p[8] == '-' && is_digit(p[9]) && is_digit(p[10])) {
            const char *close = memchr(p + 11, ']', (size_t)(end - p - 11));
            if (close != NULL && close + 1 < end && close[1] == ' ') {
                *after = close + 2;
                return p;
            }
        }
        p++;
    }
    return NULL;
}

static int two_digits(const char *p, int low, int high) {
    if (!is_digit(p[0]) || !is_digit(p[1]))
        return 0;
    int value = (p[0] - '0') * 10 + (p[1] - '0');
    return value >= low && value <= high;
}

/* Whether the stamp from '[' at ``stamp`` to the "] " before ``after`` certainly reads as a time:
 * "[YYYY-MM-DD HH:MM:SS] " (or 'T'/'_' between date and time, a fraction of 1 to 9 digits after
 * ".") with a year of 1900-2999 and a date and time that exist, which the timestamp parser
 * (time_forms.ISO_FORM) always reads. The grouping leaves the stamp out, so the lines of a timed
 * group may hold other stamps (a byte lost or changed in a crash): such a line may carry no time
 * and is never set aside, lest it stand as the time of the lines around it in place of one that
 * has a time (reduce's runs). */
static int certain_stamp(const char *stamp, const char *after) {
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    const char *p = stamp + 1;
    if (after - stamp < 22 || !two_digits(p, 19, 29) || !two_digits(p + 2, 0, 99) || p[4] != '-'
        || !two_digits(p + 5, 1, 12) || p[7] != '-' || (p[10] != ' ' && p[10] != 'T' && p[10] != '_')
        || !two_digits(p + 11, 0, 23) || p[13] != ':' || !two_digits(p + 14, 0, 59) || p[16] != ':'
        || !two_digits(p + 17, 0, 59))
        return 0;
    int year = (p[0] - '0') * 1000 + (p[1] - '0') * 100 + (p[2] - '0') * 10 + (p[3] - '0');
    int month = (p[5] - '0') * 10 + (p[6] - '0');
    int leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    if (!two_digits(p + 8, 1, days[month - 1] + (month == 2 && leap)))
        return 0;
    const char *q = p + 19;
    if (*q == '.' || *q == ',') {
        const char *digits = ++q;
        while (q < after && is_digit(*q))
            q++;
        if (q == digits || q - digits > 9)
            return 0;
    }
    return q == after - 2;
}

/* Stands for every stamp in the heads handed to Python: coll_aside splits a head at it as at the
 * real one, and the checks read what is around it, never its time. */
static const char CANONICAL_STAMP[] = "[0000-00-00] ";

/* Whether [s, e) is a COLL line; if so, where its head ends and its comm slice lies. */
static int coll_shape(const char *s, const char *e, int check_cr, Py_ssize_t max_line, const char **info_at,
                      const char **comm_at, Py_ssize_t *comm_len) {
    Py_ssize_t len = e - s;
    if (len > max_line)
        return 0;
    /* The polars path takes the first occurrence of each literal in the line; here each is looked
     * for where it can matter, and its absence is checked where it cannot stand. */
    const char *info = find(s, len, INFO, INFO_LEN, 1); /* 'N' */
    if (info == NULL)
        return 0;
    /* No ": opCount " may start before " NCCL INFO " (the first one must follow it). One that
     * starts less than OPCOUNT_LEN - 1 bytes before it would overlap its " N" with ' ' and a letter
     * that is no 'N', so only those wholly before its first byte's end are looked for: the search
     * then stops short of NCCL's two 'C's, the anchor. */
    if (find(s, info - s + 1, OPCOUNT, OPCOUNT_LEN, 4) != NULL) /* 'C' */
        return 0;
    /* The operation: letters from " NCCL INFO " to the first ": opCount ", which no letter holds,
     * so it must follow them at once. */
    const char *name = info + INFO_LEN;
    const char *op = name;
    while (op < e && classes[(unsigned char)*op] & LETTER)
        op++;
    if (op == name || e - op < OPCOUNT_LEN || !same(op, OPCOUNT, OPCOUNT_LEN))
        return 0;
    /* The first "comm " of the line must start after the ": opCount ". */
    const char *comm = find(s, len, COMM, COMM_LEN, 2); /* 'm' */
    if (comm == NULL || comm <= op)
        return 0;
    const char *window_end = op + OPCOUNT_LEN + OP_SLICE < e ? op + OPCOUNT_LEN + OP_SLICE : e;
    const char *digits = op + OPCOUNT_LEN;
    const char *p = digits;
    while (p < window_end && classes[(unsigned char)*p] & HEX)
        p++;
    if (p == digits || p >= window_end || *p != ' ')
        return 0;
    if (check_cr && memchr(s, '\r', (size_t)len) != NULL)
        return 0;
    *info_at = info;
    *comm_at = comm + COMM_LEN;
    *comm_len = e - *comm_at < COMM_SLICE ? e - *comm_at : COMM_SLICE;
    return 1;
}

static PyObject *scan(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer block;
    int check_cr;
    Py_ssize_t max_line;
    if (!PyArg_ParseTuple(args, "y*pn", &block, &check_cr, &max_line))
        return NULL;
    PyObject *result = NULL, *pairs = NULL, *groups = NULL;
    Group *table_groups = NULL;
    int32_t *slots = NULL;
    if (block.len >= (Py_ssize_t)UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "block too big");
        goto done;
    }
    if (max_line < 0) {
        PyErr_SetString(PyExc_ValueError, "max_line must not be negative");
        goto done;
    }
    /* A COLL line holds at least INFO + OPCOUNT + COMM + a letter, a digit and a space. */
    Py_ssize_t most = block.len / (INFO_LEN + OPCOUNT_LEN + COMM_LEN + 3) + 1;
    pairs = PyBytes_FromStringAndSize(NULL, most * PAIR_FIELDS * 4);
    table_groups = PyMem_Malloc(sizeof(Group) * MAX_GROUPS);
    slots = PyMem_Calloc((size_t)1 << TABLE_BITS, sizeof(int32_t));
    if (pairs == NULL || table_groups == NULL || slots == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    uint32_t *out = (uint32_t *)PyBytes_AS_STRING(pairs);
    Py_ssize_t found = 0, n_groups = 0;
    uint32_t line = 0;
    const char *text = block.buf;
    const char *s = text;
    const char *end = text + block.len;
    const char *certain = NULL; /* the last stamp certain_stamp accepted */
    Py_ssize_t certain_len = -1;
    Py_BEGIN_ALLOW_THREADS;
    while (s < end) {
        const char *e = memchr(s, '\n', (size_t)(end - s));
        if (e == NULL)
            e = end;
        const char *info, *comm;
        Py_ssize_t comm_len;
        if (coll_shape(s, e, check_cr, max_line, &info, &comm, &comm_len)) {
            const char *after = NULL;
            const char *stamp = nccl_stamp(s, info, &after);
            Py_ssize_t head_len = (stamp ? stamp : info) - s, after_len = stamp ? info - after : 0;
            uint64_t h = hash_bytes(hash_bytes(0xcbf29ce484222325ULL, s, head_len), comm, comm_len);
            if (stamp)
                h = hash_bytes(h ^ 0x9E3779B97F4A7C15ULL, after, after_len);
            size_t mask = ((size_t)1 << TABLE_BITS) - 1;
            size_t slot = (size_t)(h ^ (h >> 32)) & mask;
            int32_t gid = -1;
            for (;;) {
                int32_t at = slots[slot];
                if (at == 0) {
                    if (n_groups < MAX_GROUPS) {
                        table_groups[n_groups] = (Group){s, head_len, after, after_len, comm, comm_len};
                        slots[slot] = (int32_t)(n_groups + 1);
                        gid = (int32_t)n_groups++;
                    }
                    break;
                }
                Group *g = &table_groups[at - 1];
                if (g->head_len == head_len && g->comm_len == comm_len && (g->after == NULL) == (after == NULL)
                    && g->after_len == after_len && memcmp(g->head, s, (size_t)head_len) == 0
                    && memcmp(g->comm, comm, (size_t)comm_len) == 0
                    && (after == NULL || memcmp(g->after, after, (size_t)after_len) == 0)) {
                    gid = at - 1;
                    break;
                }
                slot = (slot + 1) & mask;
            }
            if (gid >= 0) {
                uint32_t unsure = 0;
                if (stamp) {
                    /* A stamp changes once a second: the last one found certain answers most lines. */
                    Py_ssize_t stamp_len = after - stamp;
                    if (stamp_len != certain_len || memcmp(stamp, certain, (size_t)stamp_len) != 0) {
                        if (certain_stamp(stamp, after)) {
                            certain = stamp;
                            certain_len = stamp_len;
                        } else {
                            unsure = UNSURE_STAMP;
                        }
                    }
                }
                LINE_OF(out, found) = line;
                ID_OF(out, found) = (uint32_t)gid | unsure;
                START_OF(out, found) = (uint32_t)(s - text);
                END_OF(out, found) = (uint32_t)(e - text);
                found++;
            }
        }
        line++;
        s = e + 1;
    }
    Py_END_ALLOW_THREADS;
    if (_PyBytes_Resize(&pairs, found * PAIR_FIELDS * 4) < 0)
        goto done;
    groups = PyList_New(n_groups);
    if (groups == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < n_groups; i++) {
        Group *g = &table_groups[i];
        PyObject *item;
        if (g->after == NULL) {
            item = Py_BuildValue("(y#y#)", g->head, g->head_len, g->comm, g->comm_len);
        } else {
            Py_ssize_t stamp_len = (Py_ssize_t)sizeof(CANONICAL_STAMP) - 1;
            PyObject *head = PyBytes_FromStringAndSize(NULL, g->head_len + stamp_len + g->after_len);
            if (head == NULL)
                goto done;
            char *to = PyBytes_AS_STRING(head);
            memcpy(to, g->head, (size_t)g->head_len);
            memcpy(to + g->head_len, CANONICAL_STAMP, (size_t)stamp_len);
            memcpy(to + g->head_len + stamp_len, g->after, (size_t)g->after_len);
            item = Py_BuildValue("(Ny#)", head, g->comm, g->comm_len);
        }
        if (item == NULL)
            goto done;
        PyList_SET_ITEM(groups, i, item);
    }
    result = Py_BuildValue("(kOO)", (unsigned long)line, pairs, groups);
done:
    Py_XDECREF(pairs);
    Py_XDECREF(groups);
    PyMem_Free(table_groups);
    PyMem_Free(slots);
    PyBuffer_Release(&block);
    return result;
}

/* A kept line's number in its file and the separator after it, "<number>\x1f", written at ``to``
 * (at most 21 bytes); returns how many. */
static int line_number(char *to, unsigned long long number) {
    char digits[24];
    int n = 0, written = 0;
    do {
        digits[n++] = (char)('0' + number % 10);
        number /= 10;
    } while (number);
    while (n)
        to[written++] = digits[--n];
    to[written++] = '\x1f';
    return written;
}

static PyObject *reduce(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer block, pairs, merged, timed;
    Py_ssize_t lines, head, tail, first_line;
    int with_lines = 0;
    if (!PyArg_ParseTuple(args, "y*ny*y*y*nnn|p", &block, &lines, &pairs, &merged, &timed, &head, &tail, &first_line,
                          &with_lines))
        return NULL;
    PyObject *result = NULL, *kept = NULL, *coll_lines = NULL, *counts = NULL;
    uint32_t *count = NULL, *position = NULL, *place = NULL;
    unsigned char *aside = NULL;
    Py_ssize_t n_pairs = pairs.len / (PAIR_FIELDS * 4), n_groups = merged.len / 4;
    const uint32_t *pair = pairs.buf;
    const int32_t *merge = merged.buf;
    const unsigned char *is_timed = timed.buf;
    if (timed.len != n_groups || pairs.len % (PAIR_FIELDS * 4) || merged.len % 4) {
        PyErr_SetString(PyExc_ValueError, "pairs, merged and timed do not fit together");
        goto done;
    }
    /* What the arguments may be, checked before any of them sizes a buffer or an index: scan's
     * count of a block's lines (split at '\n', a last line without one counted) is at most its
     * bytes + 1, and below 2^32 (a block is under 4 GiB: scan); each kept line's number
     * (first_line + 1 + its index) must fit a Py_ssize_t; head and tail are counts; a merged id
     * is a group's (below the groups' count) or -1. So the kept lines' buffer (the block, and 22
     * bytes a line for its number and separator) cannot overflow its size. */
    if (block.len >= (Py_ssize_t)UINT32_MAX || lines < 0 || lines > block.len + 1) {
        PyErr_SetString(PyExc_ValueError, "lines is not a count of the block's lines");
        goto done;
    }
    if (head < 0 || tail < 0 || first_line < 0 || first_line > PY_SSIZE_T_MAX - lines - 1) {
        PyErr_SetString(PyExc_ValueError, "head, tail and first_line must be counts of lines");
        goto done;
    }
    for (Py_ssize_t g = 0; g < n_groups; g++) {
        if (merge[g] < -1 || merge[g] >= n_groups) {
            PyErr_SetString(PyExc_ValueError, "a merged group id out of range");
            goto done;
        }
    }
    /* Each pair's span within the block, after the one before. The walk below steps over a line
     * set aside by its span, unread (reading a byte of each would cost about what reading the
     * block again does: a cache miss a line), and counts the lines between, which must come out
     * as the pairs say: a span that does not start at a line's start or end at its end leaves a
     * piece of a line that is counted as one more. */
    const char *text = block.buf;
    for (Py_ssize_t i = 0; i < n_pairs; i++) {
        uint32_t start = START_OF(pair, i), stop = END_OF(pair, i);
        if (GROUP_OF(ID_OF(pair, i)) >= (uint32_t)n_groups || LINE_OF(pair, i) >= (uint64_t)lines
            || (i && (LINE_OF(pair, i) <= LINE_OF(pair, i - 1) || start <= END_OF(pair, i - 1)))
            || start > stop || (Py_ssize_t)stop > block.len) {
            PyErr_SetString(PyExc_ValueError, "pairs out of order or out of range");
            goto done;
        }
    }
    int32_t most = -1;
    for (Py_ssize_t g = 0; g < n_groups; g++)
        most = merge[g] > most ? merge[g] : most;
    count = PyMem_Calloc((size_t)most + 2, sizeof(uint32_t));
    position = PyMem_Calloc((size_t)most + 2, sizeof(uint32_t));
    aside = PyMem_Calloc((size_t)n_pairs + 1, 1);
    place = PyMem_Calloc((size_t)n_pairs + 1, sizeof(uint32_t)); /* each valid line's place in its group */
    if (count == NULL || position == NULL || aside == NULL || place == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n_pairs; i++) {
        int32_t m = merge[GROUP_OF(ID_OF(pair, i))];
        if (m >= 0)
            count[m]++;
    }
    Py_ssize_t n_aside = 0;
    int any_timed = 0;
    for (Py_ssize_t i = 0; i < n_pairs; i++) {
        uint32_t gid = GROUP_OF(ID_OF(pair, i));
        int32_t m = merge[gid];
        if (m < 0)
            continue;
        uint32_t p = position[m]++;
        place[i] = p;
        /* A line of a timed group whose own stamp may not read as a time stays (see UNSURE_STAMP). */
        if (ID_OF(pair, i) & UNSURE_STAMP && is_timed[gid])
            continue;
        if ((Py_ssize_t)p >= head && (Py_ssize_t)p < (Py_ssize_t)count[m] - tail) {
            aside[i] = 1;
            n_aside++;
            any_timed |= is_timed[gid];
        }
    }
    if (any_timed) {
        /* Runs of valid lines set aside back to back: in each, the first and last timed line stay. */
        Py_ssize_t first = -1, last = -1, previous = -1;
        for (Py_ssize_t i = 0; i <= n_pairs; i++) {
            int continues = 0;
            if (i < n_pairs) {
                if (merge[GROUP_OF(ID_OF(pair, i))] < 0)
                    continue; /* not a row of the polars path's frame */
                continues = aside[i] && previous >= 0 && aside[previous]
                            && LINE_OF(pair, i) == LINE_OF(pair, previous) + 1;
            }
            if (!continues) {
                if (first >= 0) {
                    aside[first] = 0;
                    aside[last] = 0;
                    n_aside -= first == last ? 1 : 2;
                }
                first = last = -1;
            }
            if (i == n_pairs)
                break;
            if (aside[i] && is_timed[GROUP_OF(ID_OF(pair, i))]) {
                if (first < 0)
                    first = i;
                last = i;
            }
            previous = i;
        }
    }
    /* Each kept line written as "<number>\x1f<line>": its number in the file (first_line + 1 + its
     * index) and the separator the caller's CSV reader splits at (0x1f occurs nowhere else). */
    Py_ssize_t n_kept = lines - n_aside;
    if (n_aside == 0) { /* nothing to drop: the caller reads the block as it is */
        result = with_lines ? Py_BuildValue("(y#nny#y#)", "", (Py_ssize_t)0, n_kept, n_aside, "", (Py_ssize_t)0, "",
                                            (Py_ssize_t)0)
                            : Py_BuildValue("(y#nn)", "", (Py_ssize_t)0, n_kept, n_aside);
        goto done;
    }
    /* coll_lines hold where each kept line starts in ``kept`` as a uint32 */
    if (with_lines && block.len + n_kept * 22 > (Py_ssize_t)UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "block too big for coll_lines");
        goto done;
    }
    kept = PyBytes_FromStringAndSize(NULL, block.len + n_kept * 22);
    if (with_lines) {
        coll_lines = PyBytes_FromStringAndSize(NULL, (n_pairs - n_aside) * 16);
        counts = PyBytes_FromStringAndSize(NULL, ((Py_ssize_t)most + 1) * 4);
    }
    if (kept == NULL || (with_lines && (coll_lines == NULL || counts == NULL)))
        goto done;
    char *to = PyBytes_AS_STRING(kept);
    uint32_t *valid_kept = with_lines ? (uint32_t *)PyBytes_AS_STRING(coll_lines) : NULL;
    if (with_lines)
        memcpy(PyBytes_AS_STRING(counts), count, ((size_t)most + 1) * 4);
    Py_ssize_t written = 0, counted = 0, n_valid_kept = 0;
    uint32_t line = 0;
    int fit = 1; /* the lines came out as the pairs say */
    Py_BEGIN_ALLOW_THREADS;
    const char *s = text;
    const char *end = text + block.len;
    Py_ssize_t next = 0; /* the next pair set aside */
    Py_ssize_t at = 0;   /* the next pair (with_lines) */
    for (;;) {
        while (next < n_pairs && !aside[next])
            next++;
        /* The lines before the next one set aside (or before the block's end) are kept; the one
         * set aside is then stepped over by its span, unread. */
        const char *stop = next < n_pairs ? text + START_OF(pair, next) : end;
        while (s < stop) {
            const char *e = memchr(s, '\n', (size_t)(stop - s));
            e = e == NULL ? stop : e + 1;
            if (counted == n_kept) {
                fit = 0;
                break;
            }
            Py_ssize_t starts = written;
            written += line_number(to + written, (unsigned long long)first_line + 1 + line);
            memcpy(to + written, s, (size_t)(e - s));
            written += e - s;
            counted++;
            if (with_lines) {
                while (at < n_pairs && LINE_OF(pair, at) < line)
                    at++;
                if (at < n_pairs && LINE_OF(pair, at) == line && merge[GROUP_OF(ID_OF(pair, at))] >= 0
                    && n_valid_kept < n_pairs - n_aside) {
                    uint32_t *out = valid_kept + 4 * n_valid_kept++;
                    uint32_t gid = GROUP_OF(ID_OF(pair, at));
                    uint32_t flags = !is_timed[gid] ? 0 : ID_OF(pair, at) & UNSURE_STAMP ? KEPT_LINE : TIMED_LINE;
                    out[0] = (uint32_t)merge[gid] | flags;
                    out[1] = place[at];
                    out[2] = (uint32_t)starts;
                    out[3] = (uint32_t)(written - starts);
                }
            }
            line++;
            s = e;
        }
        if (!fit || next == n_pairs)
            break;
        if (LINE_OF(pair, next) != line) {
            fit = 0;
            break;
        }
        s = text + END_OF(pair, next) + ((Py_ssize_t)END_OF(pair, next) < block.len); /* past its '\n' */
        line++;
        next++;
    }
    Py_END_ALLOW_THREADS;
    if (!fit || line != (uint32_t)lines || counted != n_kept) {
        PyErr_SetString(PyExc_ValueError, "the block's lines are not those scan counted");
        goto done;
    }
    if (_PyBytes_Resize(&kept, written) < 0)
        goto done;
    if (!with_lines) {
        result = Py_BuildValue("(Onn)", kept, n_kept, n_aside);
        goto done;
    }
    if (_PyBytes_Resize(&coll_lines, n_valid_kept * 16) < 0)
        goto done;
    result = Py_BuildValue("(OnnOO)", kept, n_kept, n_aside, coll_lines, counts);
done:
    Py_XDECREF(kept);
    Py_XDECREF(coll_lines);
    Py_XDECREF(counts);
    PyMem_Free(count);
    PyMem_Free(position);
    PyMem_Free(place);
    PyMem_Free(aside);
    PyBuffer_Release(&block);
    PyBuffer_Release(&pairs);
    PyBuffer_Release(&merged);
    PyBuffer_Release(&timed);
    return result;
}

/* One block of drop_across: its buffers, and what to drop of its coll lines. */
typedef struct {
    Py_buffer kept, lines, bounds;
    int held; /* how many of the three buffers are held */
    unsigned char *drop;
} Across;

/* Whether a block's coll lines and bounds fit its kept lines. */
static int fits(const Across *block) {
    const uint32_t *line = block->lines.buf;
    Py_ssize_t n_lines = block->lines.len / 16, n_groups = block->bounds.len / 16;
    if (block->lines.len % 16 || block->bounds.len % 16)
        return 0;
    for (Py_ssize_t i = 0; i < n_lines; i++)
        if (MERGED_OF(line[4 * i]) >= (uint64_t)n_groups
            || (Py_ssize_t)line[4 * i + 2] + line[4 * i + 3] > block->kept.len
            || (i && line[4 * i + 2] < line[4 * i - 2] + line[4 * i - 1]))
            return 0;
    return 1;
}

static PyObject *drop_across(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *kepts, *lines_list, *bounds_list;
    if (!PyArg_ParseTuple(args, "O!O!O!", &PyList_Type, &kepts, &PyList_Type, &lines_list, &PyList_Type,
                          &bounds_list))
        return NULL;
    Py_ssize_t n_blocks = PyList_GET_SIZE(kepts);
    if (PyList_GET_SIZE(lines_list) != n_blocks || PyList_GET_SIZE(bounds_list) != n_blocks) {
        PyErr_SetString(PyExc_ValueError, "kepts, coll_lines and bounds do not fit together");
        return NULL;
    }
    PyObject *result = NULL;
    Across *blocks = PyMem_Calloc((size_t)n_blocks + 1, sizeof(Across));
    if (blocks == NULL)
        return PyErr_NoMemory();
    for (Py_ssize_t b = 0; b < n_blocks; b++) {
        Across *block = &blocks[b];
        if (PyObject_GetBuffer(PyList_GET_ITEM(kepts, b), &block->kept, PyBUF_SIMPLE) < 0)
            goto done;
        block->held++;
        if (PyObject_GetBuffer(PyList_GET_ITEM(lines_list, b), &block->lines, PyBUF_SIMPLE) < 0)
            goto done;
        block->held++;
        if (PyObject_GetBuffer(PyList_GET_ITEM(bounds_list, b), &block->bounds, PyBUF_SIMPLE) < 0)
            goto done;
        block->held++;
        if (!fits(block)) {
            PyErr_SetString(PyExc_ValueError, "coll_lines out of order or out of range");
            goto done;
        }
        block->drop = PyMem_Calloc((size_t)block->lines.len / 16 + 1, 1);
        if (block->drop == NULL) {
            PyErr_NoMemory();
            goto done;
        }
    }
    /* The run of lines dropped back to back so far: whether its first timed line was met (it
     * stays), and its last timed line after that, to stay when the run ends. */
    int first_met = 0;
    unsigned char *last_timed = NULL;
    for (Py_ssize_t b = 0; b < n_blocks; b++) {
        Across *block = &blocks[b];
        const uint32_t *line = block->lines.buf;
        const int64_t *bound = block->bounds.buf;
        Py_ssize_t n_lines = block->lines.len / 16, at = 0; /* kept bytes up to the end of the line before */
        for (Py_ssize_t i = 0; i <= n_lines; i++) {
            const uint32_t *l = line + 4 * i;
            int surplus = 0;
            if (i < n_lines) {
                uint32_t m = MERGED_OF(l[0]);
                surplus = !(l[0] & KEPT_LINE) && (int64_t)l[1] >= bound[2 * m] && (int64_t)l[1] < bound[2 * m + 1];
            }
            /* Another kept line before this one (or after the block's last), or one that stays, ends the run. */
            int ends = i < n_lines ? (Py_ssize_t)l[2] != at || !surplus : at != block->kept.len;
            if (ends) {
                if (last_timed != NULL)
                    *last_timed = 0;
                first_met = 0;
                last_timed = NULL;
            }
            if (i == n_lines)
                break;
            at = (Py_ssize_t)l[2] + l[3];
            if (!surplus)
                continue;
            block->drop[i] = 1;
            if (l[0] & TIMED_LINE) {
                if (!first_met) {
                    first_met = 1;
                    block->drop[i] = 0;
                } else {
                    last_timed = &block->drop[i];
                }
            }
        }
    }
    if (last_timed != NULL)
        *last_timed = 0;
    result = PyList_New(n_blocks);
    if (result == NULL)
        goto done;
    for (Py_ssize_t b = 0; b < n_blocks; b++) {
        Across *block = &blocks[b];
        const uint32_t *line = block->lines.buf;
        Py_ssize_t n_lines = block->lines.len / 16, written = 0, copied_to = 0, dropped = 0;
        PyObject *out = PyBytes_FromStringAndSize(NULL, block->kept.len);
        if (out == NULL) {
            Py_CLEAR(result);
            goto done;
        }
        char *to = PyBytes_AS_STRING(out);
        const char *from = block->kept.buf;
        for (Py_ssize_t i = 0; i < n_lines; i++) {
            const uint32_t *l = line + 4 * i;
            if (!block->drop[i])
                continue;
            memcpy(to + written, from + copied_to, (size_t)(l[2] - copied_to));
            written += l[2] - copied_to;
            copied_to = (Py_ssize_t)l[2] + l[3];
            dropped++;
        }
        memcpy(to + written, from + copied_to, (size_t)(block->kept.len - copied_to));
        written += block->kept.len - copied_to;
        PyObject *item = NULL;
        if (_PyBytes_Resize(&out, written) == 0)
            item = Py_BuildValue("(Nn)", out, dropped);
        if (item == NULL) {
            Py_CLEAR(result);
            goto done;
        }
        PyList_SET_ITEM(result, b, item);
    }
done:
    for (Py_ssize_t b = 0; b < n_blocks; b++) {
        Across *block = &blocks[b];
        if (block->held > 0)
            PyBuffer_Release(&block->kept);
        if (block->held > 1)
            PyBuffer_Release(&block->lines);
        if (block->held > 2)
            PyBuffer_Release(&block->bounds);
        PyMem_Free(block->drop);
    }
    PyMem_Free(blocks);
    return result;
}

static PyObject *controls(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer block;
    if (!PyArg_ParseTuple(args, "y*", &block))
        return NULL;
    const unsigned char *p = block.buf;
    Py_ssize_t n = block.len, i = 0;
    int found = 0;
    Py_BEGIN_ALLOW_THREADS;
#ifdef __SSE2__
    const __m128i nul = _mm_setzero_si128(), cr = _mm_set1_epi8('\r'), us = _mm_set1_epi8(0x1f),
                  esc = _mm_set1_epi8(0x1b);
    __m128i seen_nul = _mm_setzero_si128(), seen_cr = _mm_setzero_si128(), seen_us = _mm_setzero_si128(),
            seen_esc = _mm_setzero_si128();
    for (; i + 16 <= n; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(p + i));
        seen_nul = _mm_or_si128(seen_nul, _mm_cmpeq_epi8(v, nul));
        seen_cr = _mm_or_si128(seen_cr, _mm_cmpeq_epi8(v, cr));
        seen_us = _mm_or_si128(seen_us, _mm_cmpeq_epi8(v, us));
        seen_esc = _mm_or_si128(seen_esc, _mm_cmpeq_epi8(v, esc));
    }
    found = (_mm_movemask_epi8(seen_nul) ? 1 : 0) | (_mm_movemask_epi8(seen_cr) ? 2 : 0)
            | (_mm_movemask_epi8(seen_us) ? 4 : 0) | (_mm_movemask_epi8(seen_esc) ? 8 : 0);
#endif
    for (; i < n; i++)
        found |= p[i] == 0 ? 1 : p[i] == '\r' ? 2 : p[i] == 0x1f ? 4 : p[i] == 0x1b ? 8 : 0;
    Py_END_ALLOW_THREADS;
    PyBuffer_Release(&block);
    return PyLong_FromLong(found);
}

/* ---- wordings: what a restart loop repeats (logscope/parsers/repeats.py) ----
 *
 * wordings(text[, needles, max_line, max_lines, hashed]) -> (hashes, flags, held, end)
 *     For each line of ``text`` (split at '\n'; the last line, with or without one, counts: a text
 *     of n newlines has n + 1 lines; only the first ``max_lines`` when it is not 0, and ``end``
 *     is where the next would start, len(text) when none is left), one native uint64 in ``hashes``: a hash of the line with what
 *     changes between the attempts of a loop masked, as repeats.VARYING's replace_all(MASKED)
 *     masks it (the same alternatives, tried in the same order at each place, leftmost first), so
 *     that two lines hash alike when, and only when (up to a hash collision), their masked texts
 *     are equal. And one byte in ``flags``: 1 when the line goes on the one before it
 *     (repeats.CONTINUATION), 2 when it holds a time of day anywhere (repeats.TIME_OF_DAY), 4
 *     (LONG_LINE) when it is longer than ``max_line`` bytes (when that is not 0). And one native
 *     uint32 in ``held``: bit i set when the line holds ``needles[i]`` (at most MAX_NEEDLES byte
 *     strings of two bytes or more: the catalogue's progress triggers grow with it). With
 *     ``hashed`` false, only ``held`` and LONG_LINE are found (each hash 0, no other flag): what
 *     the lines hold, at a quarter of the cost.
 *     tests/test_repeats.py holds the two ways to the same partition of lines and the same flags.
 */
static inline int is_word(unsigned char c) { return is_digit((char)c) || (classes[c] & LETTER) || c == '_'; }
static inline int is_hex(unsigned char c) { return (classes[c] & HEX) != 0; }
static inline int is_space(unsigned char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

/* The end of the run of digits from p (p itself where none is). */
static Py_ssize_t digits_end(const unsigned char *s, Py_ssize_t p, Py_ssize_t n) {
    while (p < n && is_digit((char)s[p]))
        p++;
    return p;
}

/* The end of a fraction "(?:\.\d+)?" (or "(?:[.,]\d+)?" with ``comma``) at q: q itself where none is. */
static Py_ssize_t fraction_end(const unsigned char *s, Py_ssize_t q, Py_ssize_t n, int comma) {
    if (q + 1 < n && (s[q] == '.' || (comma && s[q] == ',')) && is_digit((char)s[q + 1]))
        return digits_end(s, q + 2, n);
    return q;
}

/* The end of a time of day "\d\d?:\d\d:\d\d(?:[.,]\d+)?" starting at p, or 0. */
static Py_ssize_t time_at(const unsigned char *s, Py_ssize_t p, Py_ssize_t n) {
    if (p >= n || !is_digit(s[p]))
        return 0;
    Py_ssize_t q = p + 1;
    if (q < n && is_digit(s[q]) && q + 1 < n && s[q + 1] == ':')
        q++;  /* two digits for the hour, when a ':' follows them (the regex backtracks otherwise) */
    if (q + 6 > n || s[q] != ':' || !is_digit(s[q + 1]) || !is_digit(s[q + 2]) || s[q + 3] != ':'
        || !is_digit(s[q + 4]) || !is_digit(s[q + 5]))
        return 0;
    return fraction_end(s, q + 6, n, 1);
}

/* The end of "(?:\b|[T_])<time>" at p (the [T_] consumed), or 0. */
static Py_ssize_t stamp_at(const unsigned char *s, Py_ssize_t p, Py_ssize_t n) {
    Py_ssize_t end;
    if ((p == 0 || !is_word(s[p - 1])) && (end = time_at(s, p, n)))
        return end;
    if (s[p] == 'T' || s[p] == '_')
        return time_at(s, p + 1, n);
    return 0;
}

/* Whether the k bytes at s are all digits. */
static int digits(const unsigned char *s, Py_ssize_t k) {
    for (Py_ssize_t i = 0; i < k; i++)
        if (!is_digit((char)s[i]))
            return 0;
    return 1;
}

/* The end of a glog head's date and time "\b[IWEF]\d{4} +\d\d:\d\d:\d\d(?:\.\d+)?" at p, or 0. */
static Py_ssize_t glog_at(const unsigned char *s, Py_ssize_t p, Py_ssize_t n) {
    if ((p > 0 && is_word(s[p - 1])) || p + 6 > n || !digits(s + p + 1, 4) || s[p + 5] != ' ')
        return 0;
    Py_ssize_t q = p + 5;
    while (q < n && s[q] == ' ')
        q++;
    if (q + 8 > n || !digits(s + q, 2) || s[q + 2] != ':' || !digits(s + q + 3, 2) || s[q + 5] != ':'
        || !digits(s + q + 6, 2))
        return 0;
    return fraction_end(s, q + 8, n, 0);
}

#define LONG_LINE 4
#define MAX_NEEDLES 32

/* A line's masked text, hashed as it is written: into a buffer, absorbed 8 bytes at a time when
 * full, so that the hash is one of the text alone, whatever pieces it was written in (equal
 * masked texts hash alike). Hashing each piece as it came cost a multiply chain per piece, and
 * pieces are short (a masked text is cut at every digit). */
#define MASKED_BYTES 64
typedef struct {
    uint64_t h;
    uint64_t len;  /* the bytes absorbed */
    int fill;
    unsigned char buf[MASKED_BYTES + 16];  /* 16 more: runs are written 16 bytes at a time */
} Masked;

static inline uint64_t absorb_word(uint64_t h, const unsigned char *p) {
    uint64_t w;
    memcpy(&w, p, 8);
    h = (h ^ w) * 0x9e3779b97f4a7c15ull;
    return h ^ (h >> 31);
}

static inline void absorb(Masked *m) {  /* the buffer's first MASKED_BYTES, the rest moved up */
    for (int i = 0; i < MASKED_BYTES; i += 8)
        m->h = absorb_word(m->h, m->buf + i);
    m->len += MASKED_BYTES;
    m->fill -= MASKED_BYTES;
    memmove(m->buf, m->buf + MASKED_BYTES, (size_t)m->fill);
}

#ifdef __SSE2__
/* The lanes of ``v`` that hold an ASCII digit (all ones), the others zero. */
static inline __m128i digit_lanes(__m128i v) {
    __m128i t = _mm_sub_epi8(v, _mm_set1_epi8('0'));
    return _mm_cmpeq_epi8(_mm_min_epu8(t, _mm_set1_epi8(9)), t);
}

/* Of the 16 bytes ``v`` (``next``: whether the byte after them is a digit), those where wording_of
 * must look, by bit: each digit, and each 'T', '_' or glog letter before one (where none follows,
 * nothing starts at them, and they are written as they are, as '#' is). */
static inline uint32_t marks_of(__m128i v, int next) {
    uint32_t digit = (uint32_t)_mm_movemask_epi8(digit_lanes(v));
    __m128i letter = _mm_cmpeq_epi8(v, _mm_set1_epi8('T'));
    static const char others[] = "_IWEF";
    for (int i = 0; i < 5; i++)
        letter = _mm_or_si128(letter, _mm_cmpeq_epi8(v, _mm_set1_epi8(others[i])));
    uint32_t before_digit = (digit >> 1) | (uint32_t)next << 15;
    return digit | ((uint32_t)_mm_movemask_epi8(letter) & before_digit);
}
#endif

static inline void put(Masked *m, unsigned char c) {
    m->buf[m->fill++] = c;
    if (m->fill == MASKED_BYTES)
        absorb(m);
}

/* ``n`` bytes from ``p`` written; ``limit``: how far from ``p`` bytes may be read (the text's end),
 * so that they are copied 16 at a time where 16 can be read. */
static inline void put_run(Masked *m, const unsigned char *p, Py_ssize_t n, const unsigned char *limit) {
#ifdef __SSE2__
    while (n > 0 && limit - p >= 16) {
        _mm_storeu_si128((__m128i *)(m->buf + m->fill), _mm_loadu_si128((const __m128i *)p));
        Py_ssize_t k = MASKED_BYTES - m->fill;
        if (k > 16)
            k = 16;
        if (k > n)
            k = n;
        m->fill += (int)k;
        p += k;
        n -= k;
        if (m->fill == MASKED_BYTES)
            absorb(m);
    }
#else
    (void)limit;
#endif
    while (n > 0) {
        Py_ssize_t k = MASKED_BYTES - m->fill;
        if (k > n)
            k = n;
        memcpy(m->buf + m->fill, p, (size_t)k);
        m->fill += (int)k;
        p += k;
        n -= k;
        if (m->fill == MASKED_BYTES)
            absorb(m);
    }
}

static inline void masked_start(Masked *m) {
    m->h = 0xcbf29ce484222325ull;
    m->len = 0;
    m->fill = 0;
}

/* How wording_of wrote a line's masked text, to write another line of its shape the same way
 * (see Plans): pairs of int32, (start, length) for bytes of the line written as they are, (-1, 0)
 * for a '#'. ``ops`` holds ``cap`` pairs; a plan that would need more is ``failed``. */
typedef struct {
    int32_t *ops;
    Py_ssize_t count, cap;
    int failed;
} Plan;

static inline void plan_kept(Plan *r, Py_ssize_t start, Py_ssize_t len) {
    if (r == NULL || len <= 0)
        return;
    if (r->count && r->ops[2 * r->count - 2] >= 0 && r->ops[2 * r->count - 2] + r->ops[2 * r->count - 1] == start) {
        r->ops[2 * r->count - 1] += (int32_t)len;  /* it goes on the bytes before */
        return;
    }
    if (r->count == r->cap) {
        r->failed = 1;
        return;
    }
    r->ops[2 * r->count] = (int32_t)start;
    r->ops[2 * r->count + 1] = (int32_t)len;
    r->count++;
}

static inline void plan_masked(Plan *r) {
    if (r == NULL)
        return;
    if (r->count == r->cap) {
        r->failed = 1;
        return;
    }
    r->ops[2 * r->count] = -1;
    r->ops[2 * r->count + 1] = 0;
    r->count++;
}

static uint64_t masked_hash(Masked *m) {
    int i = 0;
    for (; i + 8 <= m->fill; i += 8)
        m->h = absorb_word(m->h, m->buf + i);
    uint64_t w = 0;
    memcpy(&w, m->buf + i, (size_t)(m->fill - i));
    uint64_t h = (m->h ^ w ^ ((m->len + (uint64_t)m->fill) << 32)) * 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 33);
}

/* Whether a time of day starts anywhere in the line: each ':' can be the one after the hour, its
 * hour one or two digits before it, a 'T' or '_' maybe before those. */
static int holds_time(const unsigned char *s, Py_ssize_t n) {
    if (n <= 0)
        return 0;
    for (const unsigned char *c = memchr(s, ':', (size_t)n); c != NULL;
         c = memchr(c + 1, ':', (size_t)(s + n - c - 1))) {
        Py_ssize_t colon = c - s;
        for (Py_ssize_t p = colon - 3; p < colon; p++)
            if (p >= 0 && stamp_at(s, p, n))
                return 1;
        if (c + 1 >= s + n)
            break;
    }
    return 0;
}

static void wording_of(const unsigned char *s, Py_ssize_t n, uint64_t *hash, unsigned char *flag, Plan *plan) {
    Masked m;
    masked_start(&m);
    unsigned char f = 0;
    /* repeats.CONTINUATION: the leading non-space run is empty or ends in ':' or ']', and after it
     * an optional space, then two spaces or a tab. */
    Py_ssize_t w = 0;
    while (w < n && !is_space(s[w]))
        w++;
    if (w == 0 || s[w - 1] == ':' || s[w - 1] == ']') {
        const unsigned char *q = s + w, *end = s + n;
        /* two spaces or a tab at q, or a space and then two spaces or a tab */
        if ((end - q >= 2 && q[0] == ' ' && q[1] == ' ') || (end - q >= 1 && q[0] == '\t')
            || (end - q >= 2 && q[0] == ' ' && q[1] == '\t'))
            f |= 1;
    }
    if (holds_time(s, n))
        f |= 2;
    Py_ssize_t p = 0;
    while (p < n) {
        unsigned char c = s[p];
        Py_ssize_t end;
        if (!(classes[c] & MARK)) {
            /* A run of bytes where no mask can start: written as it is, 16 bytes at a time while
             * the line has them (SSE2), then up to the buffer's end at a time (the test of each
             * byte and its copy in one loop). */
            Py_ssize_t from = p;
#ifdef __SSE2__
            while (p + 16 <= n) {
                __m128i v = _mm_loadu_si128((const __m128i *)(s + p));
                _mm_storeu_si128((__m128i *)(m.buf + m.fill), v);
                uint32_t marks = marks_of(v, p + 16 < n && is_digit((char)s[p + 16]));
                int run = marks ? __builtin_ctz(marks) : 16;
                m.fill += run;
                p += run;
                if (m.fill >= MASKED_BYTES)
                    absorb(&m);
                if (marks)
                    break;
            }
            if (p + 16 <= n) {
                plan_kept(plan, from, p - from);
                continue;  /* at a digit, or a letter before one */
            }
#endif
            while (p < n) {
                Py_ssize_t stop = p + (MASKED_BYTES - m.fill);
                if (stop > n)
                    stop = n;
                unsigned char *to = m.buf + m.fill;
                Py_ssize_t q = p;
                while (q < stop && !(classes[s[q]] & MARK))
                    *to++ = s[q++];
                m.fill += (int)(q - p);
                p = q;
                if (m.fill == MASKED_BYTES)
                    absorb(&m);
                else
                    break;
                if (p < n && (classes[s[p]] & MARK))
                    break;
            }
            plan_kept(plan, from, p - from);
            continue;
        }
        if ((c == 'I' || c == 'W' || c == 'E' || c == 'F') && (end = glog_at(s, p, n))) {
            put(&m, c);  /* the level letter stays */
            put(&m, '#');
            plan_kept(plan, p, 1);
            plan_masked(plan);
            p = end;
            continue;
        }
        if (!is_digit((char)c) && c != 'T' && c != '_') {  /* a glog letter that heads none, or '#' */
            put(&m, c);
            plan_kept(plan, p, 1);
            p++;
            continue;
        }
        if (is_digit((char)c)) {
            /* Its run of digits read once: what can start at p follows from its length and the
             * byte after it (a time of day's hour is one or two digits and a ':', a date's year
             * four and a '-'), so most runs are none of those without looking further. */
            Py_ssize_t run = digits_end(s, p, n), fraction = fraction_end(s, run, n, 0);
            int boundary = p == 0 || !is_word(s[p - 1]);
            end = 0;
            if (boundary && run - p <= 2 && run < n && s[run] == ':')
                end = time_at(s, p, n);  /* a time of day */
            if (!end && boundary && run - p == 4 && p + 10 <= n && s[run] == '-' && digits(s + p + 5, 2)
                && s[p + 7] == '-' && digits(s + p + 8, 2))
                end = p + 10;  /* a date */
            if (end) {
            } else if (boundary && run - p >= 10) {  /* epoch seconds */
                end = fraction;
            } else if (fraction > run) {  /* a decimal: kept */
                plan_kept(plan, p, fraction - p);
                plan_masked(plan);
                for (; p < fraction; p++)
                    put(&m, s[p]);
                put(&m, '#');
                continue;
            } else if (boundary && c == '0' && p + 2 < n && s[p + 1] == 'x' && is_hex(s[p + 2])) {  /* hex */
                end = p + 2;
                while (end < n && is_hex(s[end]))
                    end++;
            } else if (boundary && run - p >= 4 && (run == n || !is_word(s[run]))) {  /* a long number */
                end = run;
            } else {
                /* Nothing starts at p, nor anywhere else in its run of digits: none of them has a
                 * word boundary before it, and a decimal from any of them ends where this one's would. */
                plan_kept(plan, p, run - p);
                for (; p < run; p++)
                    put(&m, s[p]);
                continue;
            }
            put(&m, '#');
            plan_masked(plan);
            p = end;
            continue;
        }
        end = stamp_at(s, p, n);  /* a time of day after a 'T' or '_' */
        if (!end && c == '_') {  /* a long number after an underscore, up to one after it or a word's end */
            Py_ssize_t run = digits_end(s, p + 1, n);
            if (run - p - 1 >= 4 && (run == n || s[run] == '_' || !is_word(s[run])))
                end = run < n && s[run] == '_' ? run + 1 : run;
        }
        if (end) {
            put(&m, '#');
            plan_masked(plan);
            p = end;
        } else {
            put(&m, c);
            plan_kept(plan, p, 1);
            p++;
        }
    }
    *hash = masked_hash(&m);
    *flag = f;
}

/* Lines of one shape are worded alike: what wording_of masks, and how, follows from where a
 * line's digits are (every mask is of digits in some places around fixed bytes, a word boundary
 * is one whatever its digit) and from which '0' comes before an 'x' (a hex number's start), never
 * from the other digits' values. A line's shape is its bytes with each digit read as '0' (as '1':
 * a digit but '0' before an 'x'), so that lines of one shape are lines of one plan (Plan): the
 * first of a shape is worded and its plan kept, the others written by it. In a restart loop's
 * block 98-99% of the bytes are of lines whose shape came before. Lines longer than
 * PLAN_MAX_LINE are worded each. Shapes are compared whole, not by their hash.
 *
 * A hex number that wording_of certainly masks whole ("0x" and a hex digit, the '0' after a byte
 * that is neither a word's nor a '.' or ',' that a decimal or a time's fraction may have taken it
 * with) is read as 'f's in the shape, its own digits and letters alike: nothing wording_of decides
 * outside it looks at what it holds (the byte after it is never a word boundary, a time never
 * starts inside it, nor reaches into it), and a C++ backtrace's addresses (``+ 0x5e (0x7f3a...
 * in libc10.so)``) made each line of a crash loop's traceback a shape of its own: 33,000 shapes
 * in a 64 MB block, the plans full after 8,192 and the rest worded each. */
#define PLAN_MAX_LINE 4096
#define PLAN_BITS 14
#define PLAN_SLOTS (1 << PLAN_BITS)  /* at most half full */
#define PLAN_BYTES (4 << 20)         /* the shapes and plans one call keeps, at most */
#define PLAN_MIN_TEXT (64 * 1024)    /* a shorter text is worded line by line: the plans cost their zeroed slots */

typedef struct {
    uint64_t hash;
    uint32_t at;   /* where its shape is in ``arena``, then its plan's pairs (4-byte aligned) */
    uint32_t ops;  /* its plan's pairs */
    uint32_t held; /* the needles its lines hold, where HELD_KNOWN (see wordings) */
    uint16_t len;  /* its lines' length */
    unsigned char flag;  /* wording_of's flags of its lines */
    unsigned char used;  /* PLAN_USED, and HELD_KNOWN once held is known */
} PlanEntry;
#define PLAN_USED 1
#define HELD_KNOWN 2

typedef struct {
    PlanEntry slot[PLAN_SLOTS];
    int entries;
    size_t fill;
    unsigned char shape[PLAN_MAX_LINE];
    int32_t ops[2 * (PLAN_MAX_LINE + 1)];  /* a plan never has more pairs than its line bytes, and one */
    unsigned char arena[PLAN_BYTES];
} Plans;

/* Worded by its shape's plan, or worded and its plan kept; the plan's entry (NULL for a line worded
 * alone), and in ``digits_alone`` whether the line differs from its shape in its digits alone (no
 * hex number's letters read as 'f'): then it holds what every such line of its shape holds of
 * needles without a digit (see wordings). */
static PlanEntry *worded(Plans *plans, const unsigned char *s, Py_ssize_t n, const unsigned char *limit,
                         uint64_t *hash, unsigned char *flag, int *digits_alone) {
    *digits_alone = 0;
    if (plans == NULL || n == 0 || n > PLAN_MAX_LINE) {
        wording_of(s, n, hash, flag, NULL);
        return NULL;
    }
    unsigned char *shape = plans->shape;
    Py_ssize_t i = 0;
#ifdef __SSE2__
    const __m128i zero = _mm_set1_epi8('0');
    for (; i + 16 <= n; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(s + i)), digit = digit_lanes(v);
        _mm_storeu_si128((__m128i *)(shape + i), _mm_or_si128(_mm_andnot_si128(digit, v), _mm_and_si128(digit, zero)));
    }
#endif
    for (; i < n; i++)
        shape[i] = is_digit((char)s[i]) ? '0' : s[i];
    int letters = 0;  /* a hex number's digits read as 'f's */
    for (const unsigned char *x = memchr(s + 1, 'x', (size_t)(n - 1)); x != NULL;
         x = x + 1 < s + n ? memchr(x + 1, 'x', (size_t)(s + n - x - 1)) : NULL)
        if (x[-1] >= '1' && x[-1] <= '9')
            shape[x - s - 1] = '1';
        else if (x[-1] == '0' && x + 1 < s + n && is_hex(x[1])
                 && (x - 1 == s || (!is_word(x[-2]) && x[-2] != '.' && x[-2] != ','))) {
            for (const unsigned char *q = x + 1; q < s + n && is_hex(*q); q++)
                shape[q - s] = 'f';
            letters = 1;
        }
    *digits_alone = !letters;
    uint64_t key = hash_bytes(0x9e3779b97f4a7c15ull, (const char *)shape, n);
    size_t shape_bytes = (size_t)(n + 3) & ~(size_t)3;  /* in the arena: the plan's pairs follow, aligned */
    for (i = (Py_ssize_t)(key >> (64 - PLAN_BITS)); plans->slot[i].used; i = (i + 1) & (PLAN_SLOTS - 1)) {
        PlanEntry *e = &plans->slot[i];
        if (e->hash != key || e->len != n || memcmp(plans->arena + e->at, shape, (size_t)n) != 0)
            continue;
        const int32_t *op = (const int32_t *)(plans->arena + e->at + shape_bytes);
        Masked m;
        masked_start(&m);
        for (uint32_t k = 0; k < e->ops; k++) {
            if (op[2 * k] < 0)
                put(&m, '#');
            else
                put_run(&m, s + op[2 * k], op[2 * k + 1], limit);
        }
        *hash = masked_hash(&m);
        *flag = e->flag;
        return e;
    }
    Plan plan = {plans->ops, 0, PLAN_MAX_LINE + 1, 0};
    wording_of(s, n, hash, flag, &plan);
    size_t need = shape_bytes + (size_t)plan.count * 2 * sizeof(int32_t);
    if (plan.failed || plans->entries >= PLAN_SLOTS / 2 || plans->fill + need > PLAN_BYTES)
        return NULL;
    PlanEntry *e = &plans->slot[i];
    e->hash = key;
    e->at = (uint32_t)plans->fill;
    e->ops = (uint32_t)plan.count;
    e->held = 0;
    e->len = (uint16_t)n;
    e->flag = *flag;
    e->used = PLAN_USED;
    memcpy(plans->arena + plans->fill, shape, (size_t)n);
    memcpy(plans->arena + plans->fill + shape_bytes, plan.ops, (size_t)plan.count * 2 * sizeof(int32_t));
    plans->fill += need;
    plans->entries++;
    return e;
}

/* Where the needles may start in a text: the places whose first bytes are some needle's (its
 * first three, two for a needle of two bytes), found 16 places at a time over the whole text,
 * lines and all (SSE2), and given one after the other in the order they are asked for. A needle
 * never holds a line's '\n' where it is found: each is then compared whole within its line. */
typedef struct {
    const unsigned char *s;
    Py_ssize_t n;
    int count;
    const Py_buffer *needle;
    int digit_free;  /* no needle holds a digit */
    uint64_t pairs[1024];  /* a bit for each two bytes (the first in the low byte) a needle starts with */
    uint16_t starts[MAX_NEEDLES];  /* each needle's first two bytes */
    int third[MAX_NEEDLES];  /* its third byte, -1 for a needle of two */
    Py_ssize_t base;  /* the places [base, base + 16) ... */
    uint32_t mask;    /* ... that may start a needle and were not given yet, by bit */
#ifdef __SSE2__
    __m128i first[MAX_NEEDLES], second[MAX_NEEDLES], third_of[MAX_NEEDLES];
#endif
} Finder;

static void finder_start(Finder *f, const unsigned char *s, Py_ssize_t n, const Py_buffer *needle, int count) {
    f->s = s;
    f->n = n;
    f->count = count;
    f->needle = needle;
    memset(f->pairs, 0, sizeof f->pairs);
    f->digit_free = 1;
    for (int i = 0; i < count; i++) {
        const unsigned char *b = needle[i].buf;
        for (Py_ssize_t k = 0; k < needle[i].len; k++)
            if (is_digit((char)b[k]))
                f->digit_free = 0;
        f->starts[i] = (uint16_t)(b[0] | (unsigned)b[1] << 8);
        f->pairs[f->starts[i] >> 6] |= 1ull << (f->starts[i] & 63);
        f->third[i] = needle[i].len >= 3 ? b[2] : -1;
#ifdef __SSE2__
        f->first[i] = _mm_set1_epi8((char)b[0]);
        f->second[i] = _mm_set1_epi8((char)b[1]);
        f->third_of[i] = _mm_set1_epi8((char)(needle[i].len >= 3 ? b[2] : 0));
#endif
    }
    f->base = -16;
    f->mask = 0;
}

/* The places of [base, base + 16) that may start a needle, by bit. */
static uint32_t finder_window(const Finder *f, Py_ssize_t base) {
    const unsigned char *s = f->s;
    uint32_t mask = 0;
#ifdef __SSE2__
    if (base + 18 <= f->n) {
        __m128i v0 = _mm_loadu_si128((const __m128i *)(s + base)),
                v1 = _mm_loadu_si128((const __m128i *)(s + base + 1)),
                v2 = _mm_loadu_si128((const __m128i *)(s + base + 2));
        __m128i any = _mm_setzero_si128();
        for (int i = 0; i < f->count; i++) {
            __m128i hit = _mm_and_si128(_mm_cmpeq_epi8(v0, f->first[i]), _mm_cmpeq_epi8(v1, f->second[i]));
            if (f->third[i] >= 0)
                hit = _mm_and_si128(hit, _mm_cmpeq_epi8(v2, f->third_of[i]));
            any = _mm_or_si128(any, hit);
        }
        return (uint32_t)_mm_movemask_epi8(any);
    }
#endif
    for (Py_ssize_t i = 0; i < 16 && base + i + 1 < f->n; i++) {
        unsigned pair = s[base + i] | (unsigned)s[base + i + 1] << 8;
        if (f->pairs[pair >> 6] >> (pair & 63) & 1)
            mask |= 1u << i;
    }
    return mask;
}

/* The first place at ``from`` or after it that may start a needle (places are asked for in
 * ascending order), or the text's length. */
static Py_ssize_t finder_next(Finder *f, Py_ssize_t from) {
    if (from >= f->base + 16) {
        f->base = from;
        f->mask = finder_window(f, from);
    } else if (from > f->base) {
        f->mask &= ~0u << (from - f->base);
    }
    while (f->mask == 0) {
        f->base += 16;
        if (f->base + 1 >= f->n)
            return f->n;
        f->mask = finder_window(f, f->base);
    }
    Py_ssize_t at = f->base + __builtin_ctz(f->mask);
    return at < f->n ? at : f->n;
}

/* The needles the line [start, end) of the finder's text holds, as a bitmask (needle i: bit i),
 * each found anywhere in it. */
static uint32_t held_by(Finder *f, Py_ssize_t start, Py_ssize_t end) {
    uint32_t held = 0;
    const unsigned char *s = f->s;
    for (Py_ssize_t p = finder_next(f, start); p + 1 < end; p = finder_next(f, p + 1)) {
        unsigned pair = s[p] | (unsigned)s[p + 1] << 8;
        for (int i = 0; i < f->count; i++)
            if (f->starts[i] == pair && f->needle[i].len <= end - p
                && memcmp(s + p, f->needle[i].buf, (size_t)f->needle[i].len) == 0)
                held |= (uint32_t)1 << i;
    }
    return held;
}

/* The lines of s (split at '\n'; the last, with or without one, counts: n newlines make n + 1
 * lines), at most max_lines when it is not 0: what wordings and shapes give a value each. */
static Py_ssize_t count_lines(const unsigned char *s, Py_ssize_t n, Py_ssize_t max_lines) {
    Py_ssize_t lines = 1;
    for (const unsigned char *q = s; (max_lines == 0 || lines < max_lines)
                                     && (q = memchr(q, '\n', (size_t)(s + n - q))) != NULL; q++)
        lines++;
    return lines;
}

static PyObject *wordings(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer text;
    PyObject *needles = NULL;
    Py_ssize_t max_line = 0, max_lines = 0;
    int hashed = 1;
    if (!PyArg_ParseTuple(args, "y*|Onnp", &text, &needles, &max_line, &max_lines, &hashed))
        return NULL;
    Py_buffer needle[MAX_NEEDLES];
    int count = 0;
    PyObject *result = NULL, *hashes = NULL, *flags = NULL, *held = NULL;
    Finder *finder = NULL;
    Plans *plans = NULL;
    if (needles != NULL) {
        PyObject *seq = PySequence_Fast(needles, "needles must be a sequence of bytes");
        if (seq == NULL)
            goto done;
        Py_ssize_t given = PySequence_Fast_GET_SIZE(seq);
        if (given > MAX_NEEDLES) {
            Py_DECREF(seq);
            PyErr_SetString(PyExc_ValueError, "at most 32 needles");
            goto done;
        }
        for (; count < given; count++) {
            if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(seq, count), &needle[count], PyBUF_SIMPLE) < 0)
                break;
            if (needle[count].len < 2) {
                PyBuffer_Release(&needle[count]);
                PyErr_SetString(PyExc_ValueError, "a needle of fewer than two bytes");
                break;
            }
        }
        Py_DECREF(seq);
        if (count < given)
            goto done;
    }
    if (max_line < 0 || max_lines < 0) {
        PyErr_SetString(PyExc_ValueError, "max_line and max_lines must not be negative");
        goto done;
    }
    const unsigned char *s = text.buf;
    Py_ssize_t n = text.len, lines = count_lines(s, n, max_lines);
    if (count && (finder = PyMem_Malloc(sizeof *finder)) == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (finder)
        finder_start(finder, s, n, needle, count);
    if (hashed && n > PLAN_MIN_TEXT && (plans = PyMem_Malloc(sizeof *plans)) == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (plans) {
        memset(plans->slot, 0, sizeof plans->slot);
        plans->entries = 0;
        plans->fill = 0;
    }
    hashes = PyBytes_FromStringAndSize(NULL, lines * (Py_ssize_t)sizeof(uint64_t));
    flags = hashes ? PyBytes_FromStringAndSize(NULL, lines) : NULL;
    held = flags ? PyBytes_FromStringAndSize(NULL, lines * (Py_ssize_t)sizeof(uint32_t)) : NULL;
    if (!held)
        goto done;
    uint64_t *h = (uint64_t *)PyBytes_AS_STRING(hashes);
    unsigned char *f = (unsigned char *)PyBytes_AS_STRING(flags), *k = (unsigned char *)PyBytes_AS_STRING(held);
    /* Lines that differ from their shape in their digits alone hold the same needles, where no
     * needle holds a digit: each of them has the same other bytes in the same places. Looked for in
     * the first of them only (the finder cost as much as the wordings). */
    int digit_free = finder == NULL || finder->digit_free;
    Py_ssize_t start = 0, line = 0;
    Py_BEGIN_ALLOW_THREADS;
    while (line < lines) {
        const unsigned char *nl = memchr(s + start, '\n', (size_t)(n - start));
        Py_ssize_t end = nl ? nl - s : n;
        uint64_t value = 0;
        f[line] = 0;
        PlanEntry *entry = NULL;
        int digits_alone = 0;
        if (hashed)
            entry = worded(plans, s + start, end - start, s + n, &value, &f[line], &digits_alone);
        if (max_line && end - start > max_line)
            f[line] |= LONG_LINE;
        int shared = entry != NULL && digits_alone && digit_free;
        uint32_t holds;
        if (shared && (entry->used & HELD_KNOWN)) {
            holds = entry->held;
        } else {
            holds = finder ? held_by(finder, start, end) : 0;
            if (shared) {
                entry->held = holds;
                entry->used |= HELD_KNOWN;
            }
        }
        memcpy(k + line * (Py_ssize_t)sizeof holds, &holds, sizeof holds);
        memcpy(&h[line], &value, sizeof value);
        line++;
        start = end < n ? end + 1 : n;
    }
    Py_END_ALLOW_THREADS;
    result = Py_BuildValue("(OOOn)", hashes, flags, held, start);
done:
    PyMem_Free(finder);
    PyMem_Free(plans);
    Py_XDECREF(hashes);
    Py_XDECREF(flags);
    Py_XDECREF(held);
    for (int i = 0; i < count; i++)
        PyBuffer_Release(&needle[i]);
    PyBuffer_Release(&text);
    return result;
}

/* ---- shapes: lines alike but for their digits (logscope/ingest/progress_prefilter.py) ----
 *
 * shapes(text[, max_lines]) -> (hashes, end, starts)
 *     For each line of ``text`` (split at '\n' as wordings splits it, the first ``max_lines`` when
 *     it is not 0; ``end`` as wordings'), one native uint64: a hash of the line with each ASCII
 *     digit read as '0', its length included, so that two lines hash alike when, and only when (up
 *     to a hash collision), they are of one length and differ in their digits alone, digit for
 *     digit: the lines of a training loop's progress line, step after step and rank after rank.
 *     ``starts``: for each line, where it starts in ``text`` (a native uint64), so that the
 *     caller can read the bytes at given places of given lines.
 */
static uint64_t shape_of(const unsigned char *s, Py_ssize_t n) {
    uint64_t h = 0xcbf29ce484222325ull ^ ((uint64_t)n * 0x9e3779b97f4a7c15ull);
    Py_ssize_t p = 0;
    for (; n - p >= 8; p += 8) {
        uint64_t w;
        memcpy(&w, s + p, 8);
        /* each byte that is an ASCII digit (0x30..0x39) becomes '0', eight at a time: a byte's
         * high bit is set in ``low`` when its low seven bits are at least 0x30, in ``high`` when
         * at least 0x3a (no sum carries into the next byte), and a digit's own high bit is 0 */
        const uint64_t ones = 0x0101010101010101ull, seven = 0x7f7f7f7f7f7f7f7full;
        uint64_t low = (w & seven) + (0x80 - 0x30) * ones, high = (w & seven) + (0x80 - 0x3a) * ones;
        uint64_t digit = ((low & ~high & ~w & 0x8080808080808080ull) >> 7) * 0xff;
        w = (w & ~digit) | (0x30 * ones & digit);
        h = (h ^ w) * 0x9e3779b97f4a7c15ull;
        h ^= h >> 31;
    }
    uint64_t w = 0;
    for (Py_ssize_t i = 0; p + i < n; i++) {
        unsigned char c = s[p + i];
        w |= (uint64_t)(c >= '0' && c <= '9' ? '0' : c) << (8 * i);
    }
    h = (h ^ w) * 0xff51afd7ed558ccdull;
    return h ^ (h >> 29);
}

static PyObject *shapes(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer text;
    Py_ssize_t max_lines = 0;
    if (!PyArg_ParseTuple(args, "y*|n", &text, &max_lines))
        return NULL;
    if (max_lines < 0) {
        PyBuffer_Release(&text);
        PyErr_SetString(PyExc_ValueError, "max_lines must not be negative");
        return NULL;
    }
    const unsigned char *s = text.buf;
    Py_ssize_t n = text.len, lines = count_lines(s, n, max_lines);
    PyObject *result = NULL, *hashes = PyBytes_FromStringAndSize(NULL, lines * (Py_ssize_t)sizeof(uint64_t));
    PyObject *starts = hashes ? PyBytes_FromStringAndSize(NULL, lines * (Py_ssize_t)sizeof(uint64_t)) : NULL;
    if (starts != NULL) {
        uint64_t *h = (uint64_t *)PyBytes_AS_STRING(hashes), *at = (uint64_t *)PyBytes_AS_STRING(starts);
        Py_ssize_t start = 0;
        Py_BEGIN_ALLOW_THREADS;
        for (Py_ssize_t line = 0; line < lines; line++) {
            const unsigned char *nl = memchr(s + start, '\n', (size_t)(n - start));
            Py_ssize_t end = nl ? nl - s : n;
            uint64_t value = shape_of(s + start, end - start), place = (uint64_t)start;
            memcpy(&h[line], &value, sizeof value);
            memcpy(&at[line], &place, sizeof place);
            start = end < n ? end + 1 : n;
        }
        Py_END_ALLOW_THREADS;
        result = Py_BuildValue("(OnO)", hashes, start, starts);
    }
    Py_XDECREF(hashes);
    Py_XDECREF(starts);
    PyBuffer_Release(&text);
    return result;
}

/* ---- aside: which groups of lines a restart loop repeats (repeats._surplus's rule) ----
 *
 * aside(hashes, flags, own, head, tail) -> (rows, counted_rows, counts)
 *     ``hashes`` and ``flags`` as wordings gives them (one per line), ``own``: native uint32 line
 *     indices, ascending, of lines another rule keeps the ends of. Lines are grouped: a line and
 *     the lines after it that go on it (flag 1). A group's key is the sequence of its lines'
 *     hashes; a group with an own line, or a LONG_LINE, has none and is never set aside. A group
 *     is set aside when at least ``head`` groups of its key come before it and ``tail`` after it,
 *     but in each run of groups set aside back to back the first and the last that hold a time
 *     (flag 2) stay, the first where the group kept before the run ends in a line with no time,
 *     the last where the group kept after it starts with one (or the run starts, or ends, the
 *     lines), and each where the other stays and its lines past (before) its time have none.
 *     ``rows``: native uint32, the lines set aside, ascending. Each is counted
 *     against the line at its place in the first group of its key: ``counted_rows`` (ascending)
 *     and ``counts``, native uint32 each, those lines and how many are counted against each.
 *     With ``with_groups`` true, a fourth: for each group kept, in order, GROUP_RECORD native
 *     uint32: its first line, its lines, its first line's place among the lines kept, its place
 *     among the groups of its key, how many groups its key has, its flags (1: a line of it holds
 *     a time, 2: it has no key, 4: its first line holds a time, 8: its last line does; from bit 4
 *     on, its key's number in the block, in the order the block's keys first come), and its key
 *     (a native uint64 in the last two), so that the
 *     caller can set aside what other blocks of the file make repeats too (repeat_prefilter).
 */
/* A block's keys are numbered as they first come (a loop has a few thousand in ~400,000 lines):
 * each number's facts in a dense array (KeyEntry), found from the key through a table of
 * (key, number + 1) slots that grows as keys come, never more than half full. A table sized for
 * every line instead (32 MB for a 32 MB block) had each key on a page of its own: a TLB miss a
 * line, ~50 ms a block of a real log's 8,000 keys, now ~10. */
typedef struct {
    uint64_t key;
    uint32_t count, seen, first_start;
} KeyEntry;

typedef struct {
    uint64_t key;
    uint32_t number; /* the key's number + 1; 0: a free slot */
} KeySlot;

typedef struct {
    KeySlot *slot;
    Py_ssize_t size;  /* a power of two */
    KeyEntry *entry;  /* by number */
    uint32_t keys, capacity;
} Keys;

/* The slot of ``slot`` (``size`` of them, a power of two) that holds ``key``, or the free one it
 * would take. */
static Py_ssize_t key_slot(const KeySlot *slot, Py_ssize_t size, uint64_t key) {
    Py_ssize_t at = (Py_ssize_t)(key & (uint64_t)(size - 1));
    while (slot[at].number && slot[at].key != key)
        at = (at + 1) & (size - 1);
    return at;
}

/* The number of ``key`` (a new one numbered next, first at ``first_start``), or UINT32_MAX when
 * out of memory. */
static uint32_t key_number(Keys *k, uint64_t key, uint32_t first_start) {
    Py_ssize_t at = key_slot(k->slot, k->size, key);
    if (k->slot[at].number)
        return k->slot[at].number - 1;
    if (k->keys == k->capacity) {
        uint32_t capacity = k->capacity ? 2 * k->capacity : 1024;
        KeyEntry *entry = PyMem_Realloc(k->entry, (size_t)capacity * sizeof(KeyEntry));
        if (!entry)
            return UINT32_MAX;
        k->entry = entry;
        k->capacity = capacity;
    }
    if (2 * ((Py_ssize_t)k->keys + 1) > k->size) {  /* the table twice as big, its keys put again */
        Py_ssize_t size = 2 * k->size;
        KeySlot *slot = PyMem_Calloc((size_t)size, sizeof(KeySlot));
        if (!slot)
            return UINT32_MAX;
        for (Py_ssize_t i = 0; i < k->size; i++)
            if (k->slot[i].number)
                slot[key_slot(slot, size, k->slot[i].key)] = k->slot[i];
        PyMem_Free(k->slot);
        k->slot = slot;
        k->size = size;
        at = key_slot(slot, size, key);
    }
    uint32_t number = k->keys++;
    k->slot[at].key = key;
    k->slot[at].number = number + 1;
    KeyEntry *e = &k->entry[number];
    e->key = key;
    e->count = e->seen = 0;
    e->first_start = first_start;
    return number;
}

#define GROUP_RECORD 8 /* uint32s a kept group's record takes: see aside */
#define NO_KEY UINT32_MAX /* a group's entry when it has no key */

static uint64_t finish_mix(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 33);
}

static PyObject *aside(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer hashes, flags, own;
    Py_ssize_t head, tail;
    int with_groups = 0;
    if (!PyArg_ParseTuple(args, "y*y*y*nn|p", &hashes, &flags, &own, &head, &tail, &with_groups))
        return NULL;
    PyObject *result = NULL, *rows = NULL, *counted = NULL, *counts = NULL, *kept_groups = NULL;
    uint32_t *start = NULL, *entry_of = NULL, *tally = NULL, *place_of = NULL;
    unsigned char *state = NULL;
    Keys table = {NULL, 4096, NULL, 0, 0};
    Py_ssize_t lines = flags.len, n_own = own.len / 4;
    /* (a key's number takes a record's flags from bit 4 on: fewer than 2^28 lines) */
    if (hashes.len != lines * 8 || own.len % 4 || head < 0 || tail < 0 || lines >= ((Py_ssize_t)1 << 28)) {
        PyErr_SetString(PyExc_ValueError, "hashes, flags and own do not fit one another");
        goto done;
    }
    const unsigned char *f = flags.buf;
    const uint32_t *own_rows = own.buf;
    for (Py_ssize_t i = 0; i < n_own; i++)
        if (own_rows[i] >= (uint64_t)lines || (i && own_rows[i] <= own_rows[i - 1])) {
            PyErr_SetString(PyExc_ValueError, "own rows out of range or not ascending");
            goto done;
        }
    table.slot = PyMem_Calloc((size_t)table.size, sizeof(KeySlot));
    start = PyMem_Malloc(((size_t)lines + 1) * sizeof(uint32_t));
    entry_of = PyMem_Malloc(((size_t)lines + 1) * sizeof(uint32_t));
    state = PyMem_Calloc((size_t)lines + 1, 1);
    tally = PyMem_Calloc((size_t)lines + 1, sizeof(uint32_t));
    place_of = PyMem_Calloc((size_t)lines + 1, sizeof(uint32_t));
    if (!start || !entry_of || !state || !tally || !place_of || !table.slot) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t groups = 0, n_aside = 0, n_counted = 0, n_aside_groups = 0;
    int out_of_memory = 0;
    Py_BEGIN_ALLOW_THREADS;
    /* The groups, their keys (NO_KEY: none) and the entries of their keys. */
    Py_ssize_t next_own = 0;
    for (Py_ssize_t i = 0; i < lines;) {
        Py_ssize_t j = i + 1;
        while (j < lines && (f[j] & 1))
            j++;
        uint64_t key = 0x9e3779b97f4a7c15ull;
        int keyless = 0;
        for (Py_ssize_t r = i; r < j; r++) {
            uint64_t value;
            memcpy(&value, (const char *)hashes.buf + 8 * r, 8);
            key = finish_mix(key ^ value) + (uint64_t)(r - i);
            if (f[r] & LONG_LINE)
                keyless = 1;
        }
        while (next_own < n_own && own_rows[next_own] < (uint64_t)i)
            next_own++;
        if (next_own < n_own && own_rows[next_own] < (uint64_t)j)
            keyless = 1;
        start[groups] = (uint32_t)i;
        if (keyless) {
            entry_of[groups] = NO_KEY;
        } else {
            key = finish_mix(key ^ (uint64_t)(j - i));
            uint32_t number = key_number(&table, key, (uint32_t)i);
            if (number == UINT32_MAX) {
                out_of_memory = 1;
                break;
            }
            table.entry[number].count++;
            entry_of[groups] = number;
        }
        groups++;
        i = j;
    }
    start[groups] = (uint32_t)lines;
    if (out_of_memory)
        goto grouped;
    /* Which groups go (state 1), and which hold a time (state 2). */
    for (Py_ssize_t g = 0; g < groups; g++) {
        for (uint32_t r = start[g]; r < start[g + 1]; r++)
            if (f[r] & 2)
                state[g] = 2;
        if (entry_of[g] == NO_KEY)
            continue;
        KeyEntry *e = &table.entry[entry_of[g]];
        uint32_t place = place_of[g] = e->seen++;
        if ((Py_ssize_t)place >= head && (Py_ssize_t)e->count - (Py_ssize_t)place > tail)
            state[g] |= 1;
    }
    /* In each run of groups set aside back to back, the first and the last with a time stay: the
     * first unless the group kept before the run ends in a line holding a time, the last unless the
     * group kept after it starts with one (an untimed line kept next to a run takes the time of the
     * timed line nearest it: that group's, then, not one of an attempt hours away), and each where
     * the other stays with lines that hold no time on its side of its timed line. */
    for (Py_ssize_t g = 0; g < groups;) {
        if (!(state[g] & 1)) {
            g++;
            continue;
        }
        Py_ssize_t end = g;
        while (end < groups && (state[end] & 1))
            end++;
        Py_ssize_t first = -1, last = -1;
        for (Py_ssize_t x = g; x < end; x++)
            if (state[x] & 2) {
                if (first < 0)
                    first = x;
                last = x;
            }
        if (first >= 0) {
            /* (a group kept next to the run whose line there holds a time times its own lines;
             * a kept end whose lines past its time have none keeps the other end for them) */
            int keep_first = !(g > 0 && (f[start[g] - 1] & 2)), keep_last = !(end < groups && (f[start[end]] & 2));
            if (first != last && keep_first && !(f[start[first + 1] - 1] & 2))
                keep_last = 1;
            if (first != last && keep_last && !(f[start[last]] & 2))
                keep_first = 1;
            if (keep_first)
                state[first] &= (unsigned char)~1;
            if (keep_last)
                state[last] &= (unsigned char)~1;
        }
        g = end;
    }
    for (Py_ssize_t g = 0; g < groups; g++)
        if (state[g] & 1) {
            n_aside_groups++;
            uint32_t first_start = table.entry[entry_of[g]].first_start;
            for (uint32_t r = start[g]; r < start[g + 1]; r++) {
                uint32_t counterpart = first_start + (r - start[g]);
                n_aside++;
                if (counterpart < (uint32_t)lines && tally[counterpart]++ == 0)
                    n_counted++;
            }
        }
grouped:
    Py_END_ALLOW_THREADS;
    if (out_of_memory) {
        PyErr_NoMemory();
        goto done;
    }
    rows = PyBytes_FromStringAndSize(NULL, n_aside * 4);
    counted = rows ? PyBytes_FromStringAndSize(NULL, n_counted * 4) : NULL;
    counts = counted ? PyBytes_FromStringAndSize(NULL, n_counted * 4) : NULL;
    if (!counts)
        goto done;
    uint32_t *out = (uint32_t *)PyBytes_AS_STRING(rows), *at_row = (uint32_t *)PyBytes_AS_STRING(counted),
             *at_count = (uint32_t *)PyBytes_AS_STRING(counts);
    for (Py_ssize_t g = 0; g < groups; g++)
        if (state[g] & 1)
            for (uint32_t r = start[g]; r < start[g + 1]; r++)
                *out++ = r;
    for (Py_ssize_t r = 0; r < lines; r++)
        if (tally[r]) {
            *at_row++ = (uint32_t)r;
            *at_count++ = tally[r];
        }
    if (!with_groups) {
        result = PyTuple_Pack(3, rows, counted, counts);
        goto done;
    }
    kept_groups = PyBytes_FromStringAndSize(NULL, (groups - n_aside_groups) * GROUP_RECORD * 4);
    if (!kept_groups)
        goto done;
    uint32_t *record = (uint32_t *)PyBytes_AS_STRING(kept_groups), kept_lines = 0;
    for (Py_ssize_t g = 0; g < groups; g++) {
        if (state[g] & 1)
            continue;
        int keyless = entry_of[g] == NO_KEY, timed = (state[g] & 2) != 0;
        uint64_t key = keyless ? 0 : table.entry[entry_of[g]].key;
        record[0] = start[g];
        record[1] = start[g + 1] - start[g];
        record[2] = kept_lines;
        record[3] = keyless ? 0 : place_of[g];
        record[4] = keyless ? 0 : table.entry[entry_of[g]].count;
        record[5] = (uint32_t)(timed | keyless << 1 | (f[start[g]] & 2) << 1 | (f[start[g + 1] - 1] & 2) << 2)
                    | (keyless ? 0 : entry_of[g] << 4);
        memcpy(record + 6, &key, 8);
        kept_lines += record[1];
        record += GROUP_RECORD;
    }
    result = PyTuple_Pack(4, rows, counted, counts, kept_groups);
done:
    Py_XDECREF(rows);
    Py_XDECREF(counted);
    Py_XDECREF(counts);
    Py_XDECREF(kept_groups);
    PyMem_Free(start);
    PyMem_Free(entry_of);
    PyMem_Free(state);
    PyMem_Free(tally);
    PyMem_Free(place_of);
    PyMem_Free(table.slot);
    PyMem_Free(table.entry);
    PyBuffer_Release(&hashes);
    PyBuffer_Release(&flags);
    PyBuffer_Release(&own);
    return result;
}

/* ---- lines_of: some lines of a block, numbered or joined ----
 *
 * lines_of(block, rows, keep, first_line) -> (text, count)
 *     ``rows``: native uint32 line indices of ``block`` (split at '\n', as wordings splits it),
 *     ascending. With ``keep`` false, the lines at ``rows``, joined by '\n'; with it true, every
 *     other line, each as "<number>\x1f<line>\n" (its number ``first_line`` + 1 + its index, as
 *     reduce writes kept lines; with ``first_line`` -1, each as "<line>\n": the lines of a text so
 *     numbered already). ``count``: the lines written.
 *     ``starts`` (optional, with ``keep`` false): where each line of ``block`` starts (native uint64
 *     each, as ``shapes`` gives them), so that the lines at ``rows`` are copied without reading
 *     the lines before them: a few lines of a 32 MB block cost ~5 ms, their bytes alone so.
 */
/* Where line ``r`` of ``lines`` ends (its '\n', or the block's end ``n`` for the last), ``start``
 * where each starts. */
static inline uint64_t line_end(const uint64_t *start, Py_ssize_t lines, uint32_t r, Py_ssize_t n) {
    return r + 1 < (uint64_t)lines ? start[r + 1] - 1 : (uint64_t)n;
}

static PyObject *lines_at_starts(Py_buffer *block, Py_buffer *rows, Py_buffer *starts) {
    const char *s = block->buf;
    Py_ssize_t n = block->len, n_rows = rows->len / 4, lines = starts->len / 8, size = 0;
    const uint32_t *row = rows->buf;
    const uint64_t *start = starts->buf;
    int fits = rows->len % 4 == 0 && starts->len % 8 == 0;
    for (Py_ssize_t i = 0; fits && i < n_rows; i++) {
        uint32_t r = row[i];
        fits = r < (uint64_t)lines && (i == 0 || r > row[i - 1]);
        if (!fits)
            break;
        uint64_t end = line_end(start, lines, r, n);
        fits = start[r] <= end && end <= (uint64_t)n;
        size += (Py_ssize_t)(end - start[r]) + (i > 0);
    }
    if (!fits) {
        PyErr_SetString(PyExc_ValueError, "rows out of range or not ascending, or starts not of the block");
        return NULL;
    }
    PyObject *text = PyBytes_FromStringAndSize(NULL, size);
    if (text == NULL)
        return NULL;
    char *to = PyBytes_AS_STRING(text);
    for (Py_ssize_t i = 0; i < n_rows; i++) {
        uint32_t r = row[i];
        uint64_t end = line_end(start, lines, r, n);
        if (i > 0)
            *to++ = '\n';
        memcpy(to, s + start[r], (size_t)(end - start[r]));
        to += end - start[r];
    }
    PyObject *result = Py_BuildValue("(On)", text, n_rows);
    Py_DECREF(text);
    return result;
}

static PyObject *lines_of(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer block, rows, starts = {0};
    int keep;
    Py_ssize_t first_line;
    if (!PyArg_ParseTuple(args, "y*y*pn|y*", &block, &rows, &keep, &first_line, &starts))
        return NULL;
    PyObject *result = NULL, *text = NULL;
    if (starts.buf != NULL && !keep) {
        result = lines_at_starts(&block, &rows, &starts);
        goto done;
    }
    const char *s = block.buf;
    Py_ssize_t n = block.len, n_rows = rows.len / 4, lines = PY_SSIZE_T_MAX;
    const uint32_t *row = rows.buf;
    if (keep) {  /* every other line is written: all are counted first. The lines asked alone are
                  * read up to the last of them (the first of a 32 MB block: not the whole block) */
        lines = 1;
        for (const char *q = s; (q = memchr(q, '\n', (size_t)(s + n - q))) != NULL; q++)
            lines++;
    }
    int fits = rows.len % 4 == 0 && first_line >= -1 && (!keep || first_line < PY_SSIZE_T_MAX - lines);
    for (Py_ssize_t i = 0; fits && i < n_rows; i++)
        fits = (!keep || row[i] < (uint64_t)lines) && (i == 0 || row[i] > row[i - 1]);
    if (!fits) {
        PyErr_SetString(PyExc_ValueError, "rows out of range or not ascending");
        goto done;
    }
    Py_ssize_t count = keep ? lines - n_rows : n_rows;
    text = PyBytes_FromStringAndSize(NULL, n + (keep ? count * 22 : 0) + 1);
    if (text == NULL)
        goto done;
    char *to = PyBytes_AS_STRING(text);
    Py_ssize_t written = 0, next = 0, begin = 0;
    int past = 0;  /* the block's last line was read */
    Py_BEGIN_ALLOW_THREADS;
    for (Py_ssize_t line = 0; keep ? line < lines : next < n_rows && !past; line++) {
        const char *nl = memchr(s + begin, '\n', (size_t)(n - begin));
        past = nl == NULL;
        Py_ssize_t end = nl ? nl - s : n;
        int listed = next < n_rows && row[next] == (uint32_t)line;
        next += listed;
        if (listed != keep) {
            if (keep && first_line >= 0) {
                written += line_number(to + written, (unsigned long long)first_line + 1 + (unsigned long long)line);
            } else if (!keep && next > 1) {  /* between two lines joined */
                to[written++] = '\n';
            }
            memcpy(to + written, s + begin, (size_t)(end - begin));
            written += end - begin;
            if (keep)
                to[written++] = '\n';
        }
        begin = end < n ? end + 1 : n;
    }
    Py_END_ALLOW_THREADS;
    if (next < n_rows && !keep) {  /* a row past the block's lines */
        PyErr_SetString(PyExc_ValueError, "rows out of range or not ascending");
        goto done;
    }
    if (_PyBytes_Resize(&text, written) < 0)
        goto done;
    result = Py_BuildValue("(On)", text, count);
done:
    Py_XDECREF(text);
    PyBuffer_Release(&block);
    PyBuffer_Release(&rows);
    if (starts.buf != NULL)
        PyBuffer_Release(&starts);
    return result;
}

static PyMethodDef methods[] = {
    {"drop_across", drop_across, METH_VARARGS, "A file's reduced blocks without the kept lines other blocks make "
                                               "surplus: [(kept, dropped), ...]."},
    {"wordings", wordings, METH_VARARGS, "Per line, the hash of its text with what a restart loop changes masked, "
                                         "its flags (1: goes on the line before, 2: holds a time, 4: longer than "
                                         "max_line) and the needles it holds: (hashes, flags, held, end)."},
    {"shapes", shapes, METH_VARARGS,
     "Per line, the hash of its text with each digit read as '0', and where it starts: (hashes, end, starts)."},
    {"aside", aside, METH_VARARGS, "The lines a restart loop repeats, and what they are counted against: "
                                   "(rows, counted_rows, counts)."},
    {"lines_of", lines_of, METH_VARARGS, "A block's lines at rows joined, or its other lines numbered: "
                                         "(text, count)."},
    {"controls", controls, METH_VARARGS, "Which of NUL (1), CR (2), 0x1f (4) and ESC (8) the block holds."},
    {"scan", scan, METH_VARARGS, "The COLL lines of a block and their groups: (lines, pairs, groups)."},
    {"reduce", reduce, METH_VARARGS, "The block's numbered lines but the COLL lines set aside: (kept, kept_count, "
                                     "set_aside[, coll_lines, counts])."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_collscan", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__collscan(void) {
    fill_classes();
    return PyModule_Create(&module);
}
