/* hms-cache-proxy bench: a resumable walker over one strict TBinaryProtocol message.
 *
 * The benchmark's raw-bytes client feeds it the bytes of a reply as they arrive off the socket
 * and learns where the reply ends without building any object. The walker keeps its place
 * between calls (an explicit stack, and the bytes of a string still to skip), so each byte is
 * looked at once however the reply is cut into reads. Built once with the C compiler when the
 * benchmark runs (hms_cache_proxy/bench/skipper.py); without one the client falls back to
 * thriftpy2's cython skip.
 */
#include <stdint.h>
#include <string.h>

#define T_STOP 0
#define T_BOOL 2
#define T_BYTE 3
#define T_DOUBLE 4
#define T_I16 6
#define T_I32 8
#define T_I64 10
#define T_STRING 11
#define T_STRUCT 12
#define T_MAP 13
#define T_SET 14
#define T_LIST 15

#define MAX_DEPTH 64

typedef struct {
    int8_t kind;   /* T_STRUCT, T_LIST (lists and sets) or T_MAP */
    int8_t t1, t2; /* element type; a map's key and value types */
    int64_t left;  /* elements still to read (a map counts keys and values) */
} frame;

typedef struct {
    int32_t phase;    /* 0: message header not read; 1: walking the body; 2: done */
    int32_t depth;
    int64_t skip;     /* bytes still to pass over (a string's body, fixed-size elements) */
    frame st[MAX_DEPTH];
} walker;

size_t hms_walker_size(void) { return sizeof(walker); }

void hms_walker_reset(walker *w) { memset(w, 0, sizeof(*w)); }

static int fixed_size(int8_t t) {
    switch (t) {
    case T_BOOL:
    case T_BYTE:
        return 1;
    case T_I16:
        return 2;
    case T_I32:
        return 4;
    case T_I64:
    case T_DOUBLE:
        return 8;
    default:
        return -1;
    }
}

static int32_t be32(const uint8_t *p) {
    return (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) |
                     (uint32_t)p[3]);
}

/* Walk buf[0..len). Returns the bytes consumed (>= 0); *done is set when the message ended
 * there. The bytes not consumed (an incomplete header of at most 8 bytes) must be passed again,
 * followed by the next ones. Returns -1 on a malformed message. */
int64_t hms_walk(walker *w, const uint8_t *buf, int64_t len, int32_t *done) {
    int64_t pos = 0;
    *done = 0;
    if (w->phase == 2) {
        *done = 1;
        return 0;
    }
    for (;;) {
        if (w->skip) {
            int64_t n = len - pos < w->skip ? len - pos : w->skip;
            pos += n;
            w->skip -= n;
            if (w->skip)
                return pos;
        }
        if (w->phase == 0) {
            if (len - pos < 8)
                return pos;
            int32_t version = be32(buf + pos);
            int32_t name_len = be32(buf + pos + 4);
            if (version >= 0 || name_len < 0)
                return -1;
            pos += 8;
            w->skip = (int64_t)name_len + 4; /* the name, then the sequence id */
            w->phase = 1;
            w->depth = 1;
            w->st[0].kind = T_STRUCT;
            continue;
        }
        if (w->depth == 0) {
            w->phase = 2;
            *done = 1;
            return pos;
        }
        frame *f = &w->st[w->depth - 1];
        int8_t vt;
        int64_t head; /* bytes of the field header read along with the value */
        if (f->kind == T_STRUCT) {
            if (len - pos < 1)
                return pos;
            vt = (int8_t)buf[pos];
            if (vt == T_STOP) {
                pos += 1;
                w->depth--;
                continue;
            }
            head = 3;
        } else {
            if (f->left == 0) {
                w->depth--;
                continue;
            }
            vt = f->kind == T_MAP ? ((f->left & 1) ? f->t2 : f->t1) : f->t1;
            head = 0;
        }
        int fs = fixed_size(vt);
        int64_t need;
        if (fs > 0)
            need = fs;
        else if (vt == T_STRING)
            need = 4;
        else if (vt == T_STRUCT)
            need = 0;
        else if (vt == T_LIST || vt == T_SET)
            need = 5;
        else if (vt == T_MAP)
            need = 6;
        else
            return -1;
        if (len - pos < head + need)
            return pos;
        const uint8_t *p = buf + pos + head;
        pos += head + need;
        if (f->kind != T_STRUCT)
            f->left--;
        if (fs > 0)
            continue;
        if (vt == T_STRING) {
            int32_t n = be32(p);
            if (n < 0)
                return -1;
            w->skip = n;
            continue;
        }
        if (w->depth >= MAX_DEPTH)
            return -1;
        frame *g = &w->st[w->depth];
        if (vt == T_STRUCT) {
            g->kind = T_STRUCT;
            w->depth++;
            continue;
        }
        if (vt == T_LIST || vt == T_SET) {
            int8_t et = (int8_t)p[0];
            int32_t n = be32(p + 1);
            if (n < 0)
                return -1;
            int efs = fixed_size(et);
            if (efs > 0) {
                w->skip = (int64_t)n * efs;
                continue;
            }
            g->kind = T_LIST;
            g->t1 = et;
            g->left = n;
            w->depth++;
            continue;
        }
        /* map */
        {
            int32_t n = be32(p + 2);
            if (n < 0)
                return -1;
            g->kind = T_MAP;
            g->t1 = (int8_t)p[0];
            g->t2 = (int8_t)p[1];
            g->left = (int64_t)n * 2;
            w->depth++;
        }
    }
}
