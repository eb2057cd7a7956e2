/* libgcl's shared-memory call check (shm_impl.h, "Call check"): every op's
 * call word, written into the member's in line with the op's first flag,
 * and compared with every other member's word of the same op, so that
 * members whose calls differ fail with GCL_ERR_MISMATCH instead of reading
 * each other's staging as if they agreed. */
#include "collectives/shm_impl.h"

#include "collectives/types.h"

#include <stdio.h>

/* Call word layout (64 bits): op number mod 256 (8) | kind (3) | dtype (5) |
 * op + 1 (4, 0: none) | root + 1 mod 256 (8, 0: none) | count (36, folded). */
#define W_NUM(w) ((unsigned)((w) & 0xff))
#define W_KIND(w) ((int)(((w) >> 8) & 0x7))
#define W_DT(w) ((int)(((w) >> 11) & 0x1f))
#define W_OP(w) ((int)(((w) >> 16) & 0xf) - 1)
#define W_ROOT(w) ((int)(((w) >> 20) & 0xff) - 1)
#define W_COUNT(w) ((w) >> 28)
#define COUNT_BITS 36
#define COUNT_MASK ((UINT64_C(1) << COUNT_BITS) - 1)

_Static_assert(K_COUNT <= 8 && GCL_DTYPE_COUNT <= 32 && GCL_OP_COUNT < 15, "a call word holds the fields");


static uint64_t shm_call_word(const gcl_shm_op_t *o)
{
    int red = o->kind == K_ALLREDUCE || o->kind == K_REDUCE || o->kind == K_REDUCE_SCATTER;
    int data = o->kind != K_BARRIER;
    uint64_t count = data ? o->count : 0;
    count = (count ^ (count >> COUNT_BITS)) & COUNT_MASK; /* counts past 2^36 folded in */
    return (uint64_t)(o->num & 0xff) | (uint64_t)o->kind << 8 | (uint64_t)(data ? o->dt : 0) << 11 |
           (uint64_t)(red ? (int)o->op + 1 : 0) << 16 | (uint64_t)((o->root + 1) & 0xff) << 20 |
           count << 28;
}

void shm_call_post(gcl_shm_op_t *o)
{
    gcl_shm_t *s = o->shm;
    if (o->nseg == 0) { /* one member, or nothing to move: nothing read from the others */
        o->checked = 1;
        return;
    }
    o->num = ++s->nops;
    o->word = shm_call_word(o);
    s->call_word = o->word;
    s->call_pend = 1;
}

static const char *dt_name(int d)
{
    const gcl_dtype_info_t *t = gcl_dtype_info((gcl_dtype_t)d);
    return t ? t->long_name : "?";
}

static const char *op_name(int op)
{
    const char *n = op >= 0 ? gcl_op_name((gcl_op_t)op) : NULL;
    return n ? n : "none";
}

/* The first field in which member j's word w differs from mine, into
 * s->mismatch. */
static void describe(gcl_shm_op_t *o, int j, uint64_t w)
{
    gcl_shm_t *s = o->shm;
    uint64_t m = o->word;
    char f[160];
    if (W_KIND(w) != W_KIND(m))
        snprintf(f, sizeof f, "called gcl_%s, this rank gcl_%s", shm_kind_name(W_KIND(w)),
                 shm_kind_name(W_KIND(m)));
    else if (W_COUNT(w) != W_COUNT(m) && o->count <= COUNT_MASK && W_COUNT(w) <= COUNT_MASK)
        snprintf(f, sizeof f, "passed count %llu, this rank count %zu", (unsigned long long)W_COUNT(w),
                 o->count);
    else if (W_COUNT(w) != W_COUNT(m))
        snprintf(f, sizeof f, "passed another count, this rank count %zu", o->count);
    else if (W_DT(w) != W_DT(m))
        snprintf(f, sizeof f, "passed dtype %s, this rank dtype %s", dt_name(W_DT(w)), dt_name(W_DT(m)));
    else if (W_OP(w) != W_OP(m))
        snprintf(f, sizeof f, "passed op %s, this rank op %s", op_name(W_OP(w)), op_name(W_OP(m)));
    else
        snprintf(f, sizeof f, "passed root %d, this rank root %d", W_ROOT(w), W_ROOT(m));
    snprintf(s->mismatch, sizeof s->mismatch,
             "the members' calls differ at call %u on this host's segment: rank %d of %d on this host %s "
             "(the segment is unusable from here on)", o->num, j, s->size, f);
}

/* Member j's word w against op o's: 0 the same op (compare), 1 its next op
 * (j completed o's: the words matched), else j has not started it yet. */
static unsigned ahead(const gcl_shm_op_t *o, uint64_t w)
{
    return (W_NUM(w) - o->num) & 0xff;
}

int shm_call_seen(const gcl_shm_op_t *o, int j)
{
    return ahead(o, atomic_load_explicit(&in_line(o->shm, j)->call, memory_order_acquire)) <= 1;
}

int shm_call_check(gcl_shm_op_t *o)
{
    gcl_shm_t *s = o->shm;
    for (; o->ck < s->size; o->ck++) {
        int j = o->ck;
        if (j == s->rank)
            continue;
        uint64_t w = atomic_load_explicit(&in_line(s, j)->call, memory_order_acquire);
        unsigned d = ahead(o, w);
        if (d > 1)
            return 0; /* j has not started op num yet */
        if (d == 0 && w != o->word) {
            if (s->call_pend) /* the others find the difference too */
                shm_call_flush(s);
            describe(o, j, w);
            s->broken = 4;
            return -1;
        }
    }
    o->checked = 1;
    return 1;
}
