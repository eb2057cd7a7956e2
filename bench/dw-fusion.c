/* dw-fusion: is oneDNN's fused depthwise post-op (dnnl_post_ops_append_dw)
 * worth fusing MobileNet's expand block into one primitive? Times, on this
 * thread's OpenMP team, a 1x1 convolution IC -> C with a Clip(0, 6) post-op
 * followed by a 3x3 depthwise convolution (stride S, pad 1) with its own
 * Clip, as two primitives, against one 1x1 primitive carrying the Clip, the
 * depthwise convolution and its Clip as post-ops. Each in the layouts
 * oneDNN prefers for it (format_tag any), buffers reused, the best of 5
 * rounds of 20 runs. Prints both implementations and times, or that the
 * fused form has no implementation here.
 *
 *   OMP_NUM_THREADS=1 taskset -c 1 bench/dw-fusion N IC C H S
 *   (e.g. 8 16 96 112 2: MobileNetV2's features.2 at batch 8)
 * Exit status 0; 2 on bad arguments, 1 when oneDNN fails. */
#include <oneapi/dnnl/dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CK(x)                                                                  \
    do {                                                                       \
        dnnl_status_t s_ = (x);                                                \
        if (s_ != dnnl_success) {                                              \
            fprintf(stderr, "dw-fusion: %s: oneDNN status %d\n", #x, (int)s_); \
            exit(1);                                                           \
        }                                                                      \
    } while (0)

enum { ROUNDS = 5, REPS = 20 };

static dnnl_engine_t eng;
static dnnl_stream_t strm;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static dnnl_memory_desc_t md_any(int nd, const dnnl_dims_t dims)
{
    dnnl_memory_desc_t md;
    CK(dnnl_memory_desc_init_by_tag(&md, nd, dims, dnnl_f32, nd == 1 ? dnnl_x : dnnl_format_tag_any));
    return md;
}

/* attributes: Clip(0, 6), then (dw_stride > 0) the depthwise convolution
 * and another Clip(0, 6) */
static dnnl_primitive_attr_t clip_attr(int dw_stride)
{
    dnnl_primitive_attr_t a;
    dnnl_post_ops_t po;
    CK(dnnl_primitive_attr_create(&a));
    CK(dnnl_post_ops_create(&po));
    CK(dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_clip, 0.0f, 6.0f));
    if (dw_stride > 0) {
        CK(dnnl_post_ops_append_dw(po, dnnl_f32, dnnl_f32, dnnl_f32, 3, dw_stride, 1, 0, 0, NULL));
        CK(dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_clip, 0.0f, 6.0f));
    }
    CK(dnnl_primitive_attr_set_post_ops(a, po));
    CK(dnnl_post_ops_destroy(po));
    return a;
}

static dnnl_memory_t mem(const dnnl_primitive_desc_t pd, int arg)
{
    dnnl_memory_t m;
    const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, arg);
    CK(dnnl_memory_create(&m, md, eng, DNNL_MEMORY_ALLOCATE));
    float *p;
    CK(dnnl_memory_get_data_handle(m, (void **)&p));
    for (size_t i = 0; i < dnnl_memory_desc_get_size(md) / sizeof(float); i++)
        p[i] = (float)(i % 7) * 0.1f;
    return m;
}

static const char *impl(const_dnnl_primitive_desc_t pd)
{
    const char *s;
    CK(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &s));
    return s;
}

/* the best seconds per run of prims[0..n) with their args */
static double best(int n, dnnl_primitive_t *prims, const int *nargs, dnnl_exec_arg_t *const *args)
{
    double b = 1e30;
    for (int r = 0; r < ROUNDS; r++) {
        double t0 = now();
        for (int i = 0; i < REPS; i++)
            for (int k = 0; k < n; k++)
                CK(dnnl_primitive_execute(prims[k], strm, nargs[k], args[k]));
        CK(dnnl_stream_wait(strm));
        double t = (now() - t0) / REPS;
        b = t < b ? t : b;
    }
    return b;
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: dw-fusion N IC C H S\n");
        return 2;
    }
    long N = atol(argv[1]), IC = atol(argv[2]), C = atol(argv[3]), H = atol(argv[4]), S = atol(argv[5]);
    if (N < 1 || IC < 1 || C < 1 || H < 3 || (S != 1 && S != 2)) {
        fprintf(stderr, "dw-fusion: N, IC, C >= 1, H >= 3, S 1 or 2\n");
        return 2;
    }
    CK(dnnl_engine_create(&eng, dnnl_cpu, 0));
    CK(dnnl_stream_create(&strm, eng, dnnl_stream_default_flags));
    const long HO = (H + 2 - 3) / S + 1;
    const dnnl_dims_t src_d = {N, IC, H, H}, w_d = {C, IC, 1, 1}, b_d = {C}, mid_d = {N, C, H, H},
                      dw_d = {C, 1, 1, 3, 3}, out_d = {N, C, HO, HO};
    const dnnl_dims_t one = {1, 1}, dws = {S, S}, no_pad = {0, 0}, pad = {1, 1};
    dnnl_memory_desc_t src = md_any(4, src_d), w = md_any(4, w_d), b = md_any(1, b_d),
                       mid = md_any(4, mid_d), dw_w = md_any(5, dw_d), out = md_any(4, out_d);

    /* two primitives: the 1x1 convolution, then the depthwise one on its output */
    dnnl_convolution_desc_t c1, c2;
    dnnl_primitive_desc_t pd1, pd2, pd3;
    CK(dnnl_convolution_forward_desc_init(&c1, dnnl_forward_inference, dnnl_convolution_direct, &src, &w,
                                          &b, &mid, one, no_pad, no_pad));
    CK(dnnl_primitive_desc_create(&pd1, &c1, clip_attr(0), eng, NULL));
    const dnnl_memory_desc_t *mid_md = dnnl_primitive_desc_query_md(pd1, dnnl_query_dst_md, 0);
    CK(dnnl_convolution_forward_desc_init(&c2, dnnl_forward_inference, dnnl_convolution_direct, mid_md,
                                          &dw_w, &b, &out, dws, pad, pad));
    CK(dnnl_primitive_desc_create(&pd2, &c2, clip_attr(0), eng, NULL));
    printf("separate: %s + %s\n", impl(pd1), impl(pd2));
    dnnl_memory_t s1 = mem(pd1, DNNL_ARG_SRC), w1 = mem(pd1, DNNL_ARG_WEIGHTS), b1 = mem(pd1, DNNL_ARG_BIAS),
                  d1 = mem(pd1, DNNL_ARG_DST), w2 = mem(pd2, DNNL_ARG_WEIGHTS), d2 = mem(pd2, DNNL_ARG_DST);
    dnnl_exec_arg_t a1[] = {{DNNL_ARG_SRC, s1}, {DNNL_ARG_WEIGHTS, w1}, {DNNL_ARG_BIAS, b1}, {DNNL_ARG_DST, d1}};
    dnnl_exec_arg_t a2[] = {{DNNL_ARG_SRC, d1}, {DNNL_ARG_WEIGHTS, w2}, {DNNL_ARG_BIAS, b1}, {DNNL_ARG_DST, d2}};
    dnnl_primitive_t p[2];
    CK(dnnl_primitive_create(&p[0], pd1));
    CK(dnnl_primitive_create(&p[1], pd2));
    const int n12[] = {4, 4};
    dnnl_exec_arg_t *const a12[] = {a1, a2};
    double t_sep = best(2, p, n12, a12);
    printf("separate: %.3f ms\n", t_sep * 1e3);

    /* one primitive with the depthwise convolution as a post-op */
    if (dnnl_primitive_desc_create(&pd3, &c1, clip_attr((int)S), eng, NULL) != dnnl_success) {
        printf("fused: no implementation here\n");
        return 0;
    }
    printf("fused: %s\n", impl(pd3));
    dnnl_memory_t s3 = mem(pd3, DNNL_ARG_SRC), w3 = mem(pd3, DNNL_ARG_WEIGHTS), d3 = mem(pd3, DNNL_ARG_DST),
                  dww = mem(pd3, DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS);
    dnnl_exec_arg_t a3[] = {{DNNL_ARG_SRC, s3}, {DNNL_ARG_WEIGHTS, w3}, {DNNL_ARG_BIAS, b1}, {DNNL_ARG_DST, d3},
                            {DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS, dww},
                            {DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_BIAS, b1}};
    dnnl_primitive_t pf;
    CK(dnnl_primitive_create(&pf, pd3));
    const int n3[] = {6};
    dnnl_exec_arg_t *const a33[] = {a3};
    double t_fused = best(1, &pf, n3, a33);
    printf("fused: %.3f ms (separate / fused %.2f)\n", t_fused * 1e3, t_sep / t_fused);
    return 0;
}
