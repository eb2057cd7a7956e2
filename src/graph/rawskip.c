/* Large embedded weights left out of protobuf-c's parse (load_internal.h).
 *
 * protobuf-c copies every bytes field while it unpacks, so a model with its
 * weights inside the .onnx file cost the file plus a copy of every weight on
 * every rank. Here the bytes of the model are rewritten without the raw_data
 * of large initializers (ModelProto.graph = field 7, GraphProto.initializer
 * = field 5, TensorProto.raw_data = field 9; onnx.proto of libonnx-dev),
 * recording where each one lies in the file; the loader then points the
 * initializer at the file's mapping and copies only the ones a rank keeps.
 * Wire format: protobuf encoding spec ("Message Structure", varints and
 * length-delimited records); a message field given twice is merged by the
 * parser, so every occurrence is rewritten. Anything this walk does not
 * understand makes it give up (the caller then parses the file as it is,
 * and protobuf-c reports what is wrong). */
#include "graph/load_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    const uint8_t *base; /* the whole file */
    uint8_t *out;
    size_t pos, min_bytes;
    ipu_rawref_t *refs;
    size_t n_refs, cap_refs;
    size_t n_init; /* initializers seen so far (their index in the graph) */
} strip_t;

static int get_varint(const uint8_t *p, size_t n, size_t *at, uint64_t *v)
{
    uint64_t r = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (*at >= n)
            return -1;
        uint8_t b = p[(*at)++];
        r |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = r;
            return 0;
        }
    }
    return -1;
}

static size_t put_varint(uint8_t *p, uint64_t v)
{
    size_t k = 0;
    do {
        p[k++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    return k;
}

enum { M_MODEL, M_GRAPH, M_TENSOR };

static int rewrite(strip_t *s, const uint8_t *p, size_t n, int kind);

/* Write the field key, then the rewritten sub-message, then fix its length. */
static int rewrite_sub(strip_t *s, uint64_t key, const uint8_t *sub, size_t len, int kind)
{
    s->pos += put_varint(s->out + s->pos, key);
    size_t hdr = s->pos, body = hdr + 10; /* room for the longest length */
    s->pos = body;
    if (rewrite(s, sub, len, kind) != 0)
        return -1;
    size_t blen = s->pos - body;
    size_t k = put_varint(s->out + hdr, blen);
    memmove(s->out + hdr + k, s->out + body, blen);
    s->pos = hdr + k + blen;
    return 0;
}

static int add_ref(strip_t *s, size_t off, size_t len)
{
    if (s->n_refs == s->cap_refs) {
        size_t cap = s->cap_refs ? 2 * s->cap_refs : 64;
        ipu_rawref_t *r = realloc(s->refs, cap * sizeof(*r));
        if (r == NULL)
            return -1;
        s->refs = r;
        s->cap_refs = cap;
    }
    s->refs[s->n_refs++] = (ipu_rawref_t){.init_index = s->n_init, .offset = off, .len = len};
    return 0;
}

static int rewrite(strip_t *s, const uint8_t *p, size_t n, int kind)
{
    size_t at = 0;
    int raw_seen = 0;
    while (at < n) {
        size_t start = at;
        uint64_t key, v;
        if (get_varint(p, n, &at, &key) != 0)
            return -1;
        uint64_t field = key >> 3;
        switch (key & 7) {
        case 0:
            if (get_varint(p, n, &at, &v) != 0)
                return -1;
            break;
        case 1:
            at += 8;
            break;
        case 5:
            at += 4;
            break;
        case 2: {
            if (get_varint(p, n, &at, &v) != 0 || v > n - at)
                return -1;
            const uint8_t *sub = p + at;
            at += (size_t)v;
            if (kind == M_MODEL && field == 7)
                if (rewrite_sub(s, key, sub, (size_t)v, M_GRAPH) != 0)
                    return -1;
            if (kind == M_GRAPH && field == 5) {
                if (rewrite_sub(s, key, sub, (size_t)v, M_TENSOR) != 0)
                    return -1;
                s->n_init++;
            }
            /* raw_data twice in one tensor (the parser keeps the last, of
             * whatever size): give up, the parser copes */
            if (kind == M_TENSOR && field == 9 && raw_seen++)
                return -1;
            if (kind == M_TENSOR && field == 9 && v >= s->min_bytes) {
                if (add_ref(s, (size_t)(sub - s->base), (size_t)v) != 0)
                    return -1;
                continue;
            }
            if ((kind == M_MODEL && field == 7) || (kind == M_GRAPH && field == 5))
                continue;
            break;
        }
        default: /* groups: not in onnx.proto */
            return -1;
        }
        if (at > n)
            return -1;
        memcpy(s->out + s->pos, p + start, at - start);
        s->pos += at - start;
    }
    return 0;
}

int ipu_rawskip_strip(const uint8_t *buf, size_t len, size_t min_bytes, uint8_t **out,
                      size_t *out_len, ipu_rawref_t **refs, size_t *n_refs)
{
    *out = NULL;
    *refs = NULL;
    *n_refs = 0;
    /* the rewrite never grows a record: the same size plus slack for the
     * 10-byte length room of the deepest open sub-message */
    strip_t s = {.base = buf, .min_bytes = min_bytes, .out = malloc(len + 64)};
    if (s.out == NULL)
        return -1;
    if (rewrite(&s, buf, len, M_MODEL) != 0 || s.n_refs == 0) {
        free(s.out);
        free(s.refs);
        return -1;
    }
    *out = s.out;
    *out_len = s.pos;
    *refs = s.refs;
    *n_refs = s.n_refs;
    return 0;
}
