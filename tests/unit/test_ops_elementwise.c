/* Unit tests of the elementwise-style op families: unary.c, binary.c,
 * cast.c, softmax.c, norm.c, reduce.c (through the one-op harness, so both
 * the folded and the run-time path are exercised).
 *
 * Float references were computed independently with numpy/torch by this
 * script (/usr/bin/python3 gen.py > refs), pasted below; integer, bool and
 * error cases are worked out by hand in the tests.
 *
 *   import numpy as np, torch, math
 *   np.set_printoptions(precision=9)
 *   def arr(name, a, ctype='float'):
 *       a = np.asarray(a)
 *       if ctype == 'float':
 *           fmt = lambda v: ('%.9g' % v) + ('' if any(ch in '%.9g' % v for ch in '.e') else '.0') + 'f'
 *           vals = ', '.join(fmt(v) if np.isfinite(v) else ('-INFINITY' if v < 0 else 'INFINITY')
 *                            for v in a.ravel().astype(np.float64))
 *       else:
 *           vals = ', '.join('%d' % v for v in a.ravel())
 *       print('static const %s %s[] = {%s};' % (ctype, name, vals))
 *   f = lambda *s: np.arange(np.prod(s), dtype=np.float32).reshape(s)
 *   # binary broadcast: [2,1,3] + [4,1] ; [3] rank-0
 *   a = (f(2,1,3) - 2.5) * 0.7; b = (f(4,1) + 1) * 0.3
 *   arr('bc_a', a); arr('bc_b', b); arr('bc_add', a + b); arr('bc_sub', a - b); arr('bc_div', a / b)
 *   x = (f(2,3) - 3) * 1.5
 *   arr('sc_x', x); arr('sc_div', x / np.float32(0.4)); arr('sc_rsub', np.float32(2) - x)
 *   # pow: general and scalar 2
 *   pb = np.abs(x) + 0.5; arr('pw_b', pb); arr('pw_e', np.array([0.5, 1.5, 2., -1., 3., 0.25], np.float32))
 *   arr("pw_gen", pb ** np.array([0.5, 1.5, 2., -1., 3., 0.25], np.float32).reshape(2,3)); arr('pw_sq', pb ** 2)
 *   # unary on u
 *   u = np.array([-3.5, -1.25, -0.5, 0.0, 0.3, 0.5, 1.5, 2.5, 4.0, -7.0], np.float32)
 *   t = torch.tensor(u)
 *   arr('un_x', u)
 *   arr('un_sigmoid', torch.sigmoid(t)); arr('un_tanh', torch.tanh(t)); arr('un_erf', torch.erf(t))
 *   arr('un_exp', torch.exp(t)); arr('un_log', torch.log(torch.abs(t) + 0.1))
 *   arr('un_softplus', torch.nn.functional.softplus(t)); arr('un_elu', torch.nn.functional.elu(t, 0.7))
 *   arr('un_selu', torch.selu(t)); arr('un_hsig', torch.clamp(0.3 * t + 0.4, 0, 1))
 *   arr('un_hswish', torch.nn.functional.hardswish(t)); arr('un_leaky', torch.nn.functional.leaky_relu(t, 0.1))
 *   arr('un_softsign', torch.nn.functional.softsign(t)); arr('un_round', np.round(u))
 *   arr('un_sqrt', np.sqrt(np.abs(u))); arr('un_sin', np.sin(u)); arr('un_cos', np.cos(u))
 *   # prelu [1,2,2,2] slope [2,1,1]
 *   px = (f(1,2,2,2) - 4); sl = np.array([0.1, -2.0], np.float32).reshape(2,1,1)
 *   arr('pr_x', px); arr('pr_y', np.where(px < 0, px * sl, px))
 *   # softmax [2,2,3]
 *   sx = np.array([[[1, 2, 3], [-1, 0, 5]], [[0.5, 0.5, -2], [3, -np.inf, 1]]], np.float32)
 *   ts = torch.tensor(sx)
 *   arr('sm_x', sx)
 *   arr('sm_13', torch.softmax(ts, -1)); arr('sm_11', torch.softmax(ts.reshape(2, 6), 1).reshape(2,2,3))
 *   arr('sm_ax1', torch.softmax(ts, 1)); arr('lsm_13', torch.log_softmax(ts, -1))
 *   arr('lsm_ax0', torch.log_softmax(ts, 0))
 *   # layernorm [2,2,3]
 *   lx = np.array([[[1, 2, 4], [-1, 0, 5]], [[0.5, 0.25, -2], [3, 7, 1]]], np.float32)
 *   tl = torch.tensor(lx); sc = torch.tensor([0.5, 1.0, 2.0]); bi = torch.tensor([0.1, 0.2, -0.3])
 *   arr('ln_x', lx)
 *   arr('ln_last', torch.nn.functional.layer_norm(tl, (3,), sc, bi, 1e-5))
 *   sc2 = sc.expand(2, 3); arr('ln_m2', torch.nn.functional.layer_norm(tl, (2, 3), sc2, None, 1e-3))
 *   arr('ln_mean2', tl.mean(dim=(1, 2))); arr('ln_inv2', 1 / torch.sqrt(tl.var(dim=(1, 2), unbiased=False) + 1e-3))
 *   # batchnorm / instancenorm on ln_x viewed as [2,2,3] (N=2,C=2,L=3)
 *   bm = torch.tensor([0.5, -1.0]); bv = torch.tensor([2.0, 0.5]); bs = torch.tensor([1.5, -0.5]); bb = torch.tensor([0.1, 0.2])
 *   arr('bn_y', torch.nn.functional.batch_norm(tl, bm, bv, bs, bb, False, 0.1, 1e-5))
 *   arr('in_y', torch.nn.functional.instance_norm(tl, None, None, bs, bb, eps=1e-5))
 *   # reduce on rx [2,3,4]
 *   rx = ((f(2,3,4) * 7) % 11 - 5) * 0.5
 *   tr = torch.tensor(rx)
 *   arr('rd_x', rx)
 *   arr('rd_mean_last', rx.mean(-1, keepdims=True)); arr('rd_sum_02', rx.sum((0, 2)))
 *   arr('rd_max_all', rx.max(keepdims=True)); arr('rd_l2_1', np.sqrt((rx ** 2).sum(1)))
 *   arr('rd_lse_1', torch.logsumexp(tr, 1)); arr('rd_prod_0', rx.prod(0))
 *   arr('rd_min_02', rx.min((0, 2), keepdims=True)); arr('rd_l1_12', np.abs(rx).sum((1, 2)))
 *   arr('rd_sumsq_1', (rx ** 2).sum(1, keepdims=True))
 */
#include "harness.h"
#include "exec/ops/ew.h"

#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

static const float bc_a[] = {-1.75f, -1.04999995f, -0.349999994f, 0.349999994f, 1.04999995f, 1.75f};
static const float bc_b[] = {0.300000012f, 0.600000024f, 0.900000036f, 1.20000005f};
static const float bc_add[] = {-1.45000005f, -0.74999994f, -0.0499999821f, -1.14999998f, -0.449999928f, 0.25000003f, -0.849999964f, -0.149999917f, 0.550000072f, -0.549999952f, 0.150000095f, 0.850000024f, 0.649999976f, 1.3499999f, 2.04999995f, 0.950000048f, 1.64999998f, 2.3499999f, 1.25f, 1.95000005f, 2.6500001f, 1.55000007f, 2.25f, 2.95000005f};
static const float bc_sub[] = {-2.04999995f, -1.3499999f, -0.649999976f, -2.3499999f, -1.64999998f, -0.950000048f, -2.6500001f, -1.95000005f, -1.25f, -2.95000005f, -2.25f, -1.55000007f, 0.0499999821f, 0.74999994f, 1.45000005f, -0.25000003f, 0.449999928f, 1.14999998f, -0.550000072f, 0.149999917f, 0.849999964f, -0.850000024f, -0.150000095f, 0.549999952f};
static const float bc_div[] = {-5.83333302f, -3.49999976f, -1.16666663f, -2.91666651f, -1.74999988f, -0.583333313f, -1.94444442f, -1.16666663f, -0.388888866f, -1.45833325f, -0.87499994f, -0.291666657f, 1.16666663f, 3.49999976f, 5.83333302f, 0.583333313f, 1.74999988f, 2.91666651f, 0.388888866f, 1.16666663f, 1.94444442f, 0.291666657f, 0.87499994f, 1.45833325f};
static const float sc_x[] = {-4.5f, -3.0f, -1.5f, 0.0f, 1.5f, 3.0f};
static const float sc_div[] = {-11.25f, -7.5f, -3.75f, 0.0f, 3.75f, 7.5f};
static const float sc_rsub[] = {6.5f, 5.0f, 3.5f, 2.0f, 0.5f, -1.0f};
static const float pw_b[] = {5.0f, 3.5f, 2.0f, 0.5f, 2.0f, 3.5f};
static const float pw_e[] = {0.5f, 1.5f, 2.0f, -1.0f, 3.0f, 0.25f};
static const float pw_gen[] = {2.23606801f, 6.5479002f, 4.0f, 2.0f, 8.0f, 1.36778235f};
static const float pw_sq[] = {25.0f, 12.25f, 4.0f, 0.25f, 4.0f, 12.25f};
static const float un_x[] = {-3.5f, -1.25f, -0.5f, 0.0f, 0.300000012f, 0.5f, 1.5f, 2.5f, 4.0f, -7.0f};
static const float un_sigmoid[] = {0.0293122306f, 0.222700134f, 0.377540678f, 0.5f, 0.574442506f, 0.622459352f, 0.817574441f, 0.924141824f, 0.982013762f, 0.000911051175f};
static const float un_tanh[] = {-0.998177886f, -0.848283648f, -0.462117165f, 0.0f, 0.291312635f, 0.462117165f, 0.905148268f, 0.986614287f, 0.999329329f, -0.999998331f};
static const float un_erf[] = {-0.999999285f, -0.92290014f, -0.520499885f, 0.0f, 0.328626782f, 0.520499885f, 0.966105163f, 0.999593019f, 1.0f, -1.0f};
static const float un_exp[] = {0.0301973838f, 0.286504805f, 0.606530666f, 1.0f, 1.34985876f, 1.64872122f, 4.48168898f, 12.1824942f, 54.5981522f, 0.000911881973f};
static const float un_log[] = {1.28093386f, 0.300104618f, -0.510825574f, -2.30258512f, -0.9162907f, -0.510825574f, 0.470003635f, 0.955511391f, 1.4109869f, 1.96009481f};
static const float un_softplus[] = {0.0297504179f, 0.251929075f, 0.474076986f, 0.693147182f, 0.854355276f, 0.974076986f, 1.70141327f, 2.57888985f, 4.01814985f, 0.000911466486f};
static const float un_elu[] = {-0.678861797f, -0.49944663f, -0.275428534f, 0.0f, 0.300000012f, 0.5f, 1.5f, 2.5f, 4.0f, -0.699361682f};
static const float un_selu[] = {-1.70500934f, -1.25439537f, -0.691758156f, 0.0f, 0.315210313f, 0.525350511f, 1.57605147f, 2.62675261f, 4.20280409f, -1.75649607f};
static const float un_hsig[] = {0.0f, 0.025000006f, 0.25f, 0.400000006f, 0.49000001f, 0.550000012f, 0.850000024f, 1.0f, 1.0f, 0.0f};
static const float un_hswish[] = {-0.0f, -0.364583343f, -0.208333328f, 0.0f, 0.165000007f, 0.291666657f, 1.125f, 2.29166675f, 4.0f, -0.0f};
static const float un_leaky[] = {-0.349999994f, -0.125f, -0.0500000007f, 0.0f, 0.300000012f, 0.5f, 1.5f, 2.5f, 4.0f, -0.699999988f};
static const float un_softsign[] = {-0.777777791f, -0.555555582f, -0.333333343f, 0.0f, 0.230769247f, 0.333333343f, 0.600000024f, 0.714285731f, 0.800000012f, -0.875f};
static const float un_round[] = {-4.0f, -1.0f, -0.0f, 0.0f, 0.0f, 0.0f, 2.0f, 2.0f, 4.0f, -7.0f};
static const float un_sqrt[] = {1.87082875f, 1.11803401f, 0.707106769f, 0.0f, 0.547722578f, 0.707106769f, 1.22474492f, 1.58113885f, 2.0f, 2.64575124f};
static const float un_sin[] = {0.350783229f, -0.948984623f, -0.47942555f, 0.0f, 0.295520216f, 0.47942555f, 0.997494996f, 0.598472178f, -0.756802499f, -0.656986594f};
static const float un_cos[] = {-0.93645668f, 0.315322369f, 0.87758255f, 1.0f, 0.955336511f, 0.87758255f, 0.070737198f, -0.801143587f, -0.653643608f, 0.753902256f};
static const float pr_x[] = {-4.0f, -3.0f, -2.0f, -1.0f, 0.0f, 1.0f, 2.0f, 3.0f};
static const float pr_y[] = {-0.400000006f, -0.300000012f, -0.200000003f, -0.100000001f, 0.0f, 1.0f, 2.0f, 3.0f};
static const float sm_x[] = {1.0f, 2.0f, 3.0f, -1.0f, 0.0f, 5.0f, 0.5f, 0.5f, -2.0f, 3.0f, -INFINITY, 1.0f};
static const float sm_13[] = {0.0900305733f, 0.244728476f, 0.665240943f, 0.00245611509f, 0.00667641265f, 0.990867496f, 0.48028782f, 0.48028782f, 0.0394244231f, 0.880797029f, 0.0f, 0.119202912f};
static const float sm_11[] = {0.0151037546f, 0.0410562605f, 0.111602485f, 0.00204407098f, 0.00555636082f, 0.824637055f, 0.0628405139f, 0.0628405139f, 0.00515826372f, 0.76555419f, 0.0f, 0.103606492f};
static const float sm_ax1[] = {0.880797029f, 0.880797029f, 0.119202919f, 0.119202919f, 0.119202919f, 0.880797029f, 0.0758581758f, 1.0f, 0.0474258736f, 0.924141824f, 0.0f, 0.952574134f};
static const float lsm_13[] = {-2.40760589f, -1.40760589f, -0.407605946f, -6.00917435f, -5.00917435f, -0.00917445216f, -0.733369768f, -0.733369768f, -3.23336983f, -0.126928046f, -INFINITY, -2.12692809f};
static const float lsm_ax0[] = {-0.474076986f, -0.201413333f, -0.00671534892f, -4.01814985f, 0.0f, -0.0181499608f, -0.974076986f, -1.70141339f, -5.0067153f, -0.0181499608f, -INFINITY, -4.01814985f};
static const float ln_x[] = {1.0f, 2.0f, 4.0f, -1.0f, 0.0f, 5.0f, 0.5f, 0.25f, -2.0f, 3.0f, 7.0f, 1.0f};
static const float ln_last[] = {-0.434520692f, -0.0672603101f, 2.37260365f, -0.344500124f, -0.308000147f, 2.49400067f, 0.507685542f, 0.792997122f, -3.11673617f, -0.033630468f, 1.53630543f, -2.43808818f};
static const float ln_m2[] = {-0.197005585f, 0.078802228f, 2.04885817f, -0.669818997f, -0.866824567f, 2.9944849f, -0.199970901f, -0.488817751f, -2.57740259f, 0.244408891f, 1.91083312f, -0.444379747f};
static const float ln_mean2[] = {1.83333337f, 1.625f};
static const float ln_inv2[] = {0.472813398f, 0.355503827f};
static const float bn_y[] = {0.630328774f, 1.69098628f, 3.81230116f, 0.199999988f, -0.507099688f, -4.04259825f, 0.099999994f, -0.165164381f, -2.55164385f, -2.62839866f, -5.4567976f, -1.2141993f};
static const float in_y[] = {-1.50356209f, -0.300890446f, 2.10445285f, 0.644500136f, 0.454000086f, -0.498500168f, 1.32305646f, 0.989495635f, -2.01255202f, 0.333630562f, -0.468152523f, 0.734522104f};
static const float rd_x[] = {-2.5f, 1.0f, -1.0f, 2.5f, 0.5f, -1.5f, 2.0f, 0.0f, -2.0f, 1.5f, -0.5f, -2.5f, 1.0f, -1.0f, 2.5f, 0.5f, -1.5f, 2.0f, 0.0f, -2.0f, 1.5f, -0.5f, -2.5f, 1.0f};
static const float rd_mean_last[] = {0.0f, 0.25f, -0.875f, 0.75f, -0.375f, -0.125f};
static const float rd_sum_02[] = {3.0f, -0.5f, -4.0f};
static const float rd_max_all[] = {2.5f};
static const float rd_l2_1[] = {3.24037027f, 2.34520793f, 2.2912879f, 3.53553391f, 2.34520793f, 2.2912879f, 3.53553391f, 2.2912879f};
static const float rd_lse_1[] = {0.623872936f, 2.00459695f, 2.123873f, 2.58509731f, 2.00459695f, 2.123873f, 2.58509731f, 1.50459695f};
static const float rd_prod_0[] = {-2.5f, -1.0f, -2.5f, 1.25f, -0.75f, -3.0f, 0.0f, -0.0f, -3.0f, -0.75f, 1.25f, -2.5f};
static const float rd_min_02[] = {-2.5f, -2.0f, -2.5f};
static const float rd_l1_12[] = {17.5f, 16.0f};
static const float rd_sumsq_1[] = {10.5f, 5.5f, 5.25f, 12.5f, 5.5f, 5.25f, 12.5f, 5.25f};

#define N(a) (sizeof(a) / sizeof((a)[0]))
/* dims of a rank-0 tensor (non-NULL: ipu_value_set_const memcpy()s them) */
static const int64_t SCALAR[1] = {1};
#define RUN_OK(c)                                                    \
    do {                                                             \
        ipu_status_t st_ = oc_run(c);                                \
        if (st_ != IPU_OK)                                           \
            fail_msg("oc_run: %s", ipu_error_message());             \
    } while (0)

static const float *outf(op_case_t *c, int i) { return oc_output(c, i)->data; }

/* assert_allclose_f32, with infinities required to match exactly */
static void close_inf(const float *got, const float *want, size_t n, double rtol, double atol)
{
    for (size_t i = 0; i < n; i++)
        if (isinf(want[i]) && got[i] != want[i])
            fail_msg("element %zu: got %g, want %g", i, got[i], want[i]);
    for (size_t i = 0; i < n; i++)
        if (!isinf(want[i]))
            assert_allclose_f32(got + i, want + i, 1, rtol, atol);
}

/* One float binary op; a and b fed (run-time path) or constant (folded). */
static op_case_t *bin_f(const char *op, int opset, int ra, const int64_t *da, const float *a,
                        int rb, const int64_t *db, const float *b, int folded)
{
    op_case_t *c = oc_new(op, opset, 2, 1);
    if (folded) {
        oc_const(c, 0, IPU_DTYPE_FLOAT, ra, da, a);
        oc_const(c, 1, IPU_DTYPE_FLOAT, rb, db, b);
    } else {
        oc_input(c, 0, IPU_DTYPE_FLOAT, ra, da, a);
        oc_input(c, 1, IPU_DTYPE_FLOAT, rb, db, b);
    }
    RUN_OK(c);
    return c;
}

static void test_binary_broadcast_both(void **state)
{
    for (int folded = 0; folded < 2; folded++) {
        const char *ops[] = {"Add", "Sub", "Div"};
        const float *want[] = {bc_add, bc_sub, bc_div};
        for (int k = 0; k < 3; k++) {
            op_case_t *c = bin_f(ops[k], 13, 3, (int64_t[]){2, 1, 3}, bc_a, 2,
                                 (int64_t[]){4, 1}, bc_b, folded);
            assert_shape(oc_output(c, 0), 3, (int64_t[]){2, 4, 3});
            assert_allclose_f32(outf(c, 0), want[k], 24, 1e-6, 1e-6);
            oc_free(c);
        }
    }
}

static void test_binary_rank0_scalar(void **state)
{
    float s = 0.4f, two = 2.0f;
    op_case_t *c = bin_f("Div", 14, 2, (int64_t[]){2, 3}, sc_x, 0, SCALAR, &s, 0);
    assert_shape(oc_output(c, 0), 2, (int64_t[]){2, 3});
    assert_allclose_f32(outf(c, 0), sc_div, 6, 1e-6, 0);
    oc_free(c);
    c = bin_f("Sub", 7, 0, SCALAR, &two, 2, (int64_t[]){2, 3}, sc_x, 0);
    assert_allclose_f32(outf(c, 0), sc_rsub, 6, 1e-6, 0);
    oc_free(c);
    /* both scalars: rank-0 result */
    c = bin_f("Mul", 13, 0, SCALAR, &two, 0, SCALAR, &s, 1);
    assert_int_equal(oc_output(c, 0)->rank, 0);
    assert_allclose_f32(outf(c, 0), (float[]){0.8f}, 1, 1e-6, 0);
    oc_free(c);
}

static void test_pow(void **state)
{
    float two = 2.0f;
    op_case_t *c = bin_f("Pow", 15, 2, (int64_t[]){2, 3}, pw_b, 1, (int64_t[]){1}, &two, 0);
    assert_allclose_f32(outf(c, 0), pw_sq, 6, 1e-6, 0);
    oc_free(c);
    c = bin_f("Pow", 13, 2, (int64_t[]){2, 3}, pw_b, 2, (int64_t[]){2, 3}, pw_e, 0);
    assert_allclose_f32(outf(c, 0), pw_gen, 6, 1e-5, 0);
    oc_free(c);
    /* int64 ** int64 by hand; float ** int64 exponent */
    int64_t b[] = {2, -3, 5, 7}, e[] = {10, 3, 0, 1}, want[] = {1024, -27, 1, 7};
    c = oc_new("Pow", 15, 2, 1);
    oc_input(c, 0, IPU_DTYPE_INT64, 1, (int64_t[]){4}, b);
    oc_input(c, 1, IPU_DTYPE_INT64, 1, (int64_t[]){4}, e);
    RUN_OK(c);
    assert_equal_i64(oc_output(c, 0)->data, want, 4);
    oc_free(c);
    float fb[] = {1.5f, -2.0f};
    int64_t three = 3;
    c = oc_new("Pow", 15, 2, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 1, (int64_t[]){2}, fb);
    oc_const(c, 1, IPU_DTYPE_INT64, 0, SCALAR, &three);
    RUN_OK(c);
    assert_allclose_f32(outf(c, 0), (float[]){3.375f, -8.0f}, 2, 1e-6, 0);
    oc_free(c);
}

static op_case_t *bin_i64(const char *op, int opset, int ra, const int64_t *da, const int64_t *a,
                          int rb, const int64_t *db, const int64_t *b)
{
    op_case_t *c = oc_new(op, opset, 2, 1);
    oc_input(c, 0, IPU_DTYPE_INT64, ra, da, a);
    oc_input(c, 1, IPU_DTYPE_INT64, rb, db, b);
    return c;
}

static void test_int64_arith(void **state)
{
    /* [2,3] op [3]: shape arithmetic as PyTorch exports it */
    int64_t a[] = {7, -7, 9, 100, 0, -1}, b[] = {2, 2, -4};
    struct { const char *op; int64_t want[6]; } cases[] = {
        {"Add", {9, -5, 5, 102, 2, -5}},
        {"Sub", {5, -9, 13, 98, -2, 3}},
        {"Mul", {14, -14, -36, 200, 0, 4}},
        {"Div", {3, -3, -2, 50, 0, 0}},   /* truncation toward zero */
        {"Mod", {1, 1, -3, 0, 0, -1}},    /* fmod=0: sign of the divisor */
    };
    for (size_t k = 0; k < N(cases); k++) {
        op_case_t *c = bin_i64(cases[k].op, 13, 2, (int64_t[]){2, 3}, a, 1, (int64_t[]){3}, b);
        RUN_OK(c);
        assert_int_equal(oc_output(c, 0)->dtype, IPU_DTYPE_INT64);
        assert_equal_i64(oc_output(c, 0)->data, cases[k].want, 6);
        oc_free(c);
    }
    op_case_t *c = bin_i64("Mod", 13, 2, (int64_t[]){2, 3}, a, 1, (int64_t[]){3}, b);
    ipu_node_add_attr_int(oc_node(c), "fmod", 1);
    RUN_OK(c);
    assert_equal_i64(oc_output(c, 0)->data, (int64_t[]){1, -1, 1, 0, 0, -1}, 6);
    oc_free(c);
    /* division by zero gives 0, never a trap */
    int64_t z = 0;
    c = bin_i64("Div", 13, 1, (int64_t[]){3}, b, 0, SCALAR, &z);
    RUN_OK(c);
    assert_equal_i64(oc_output(c, 0)->data, (int64_t[]){0, 0, 0}, 3);
    oc_free(c);
    /* int32 too */
    int32_t ia[] = {5, -6}, ib[] = {3};
    c = oc_new("Sub", 13, 2, 1);
    oc_input(c, 0, IPU_DTYPE_INT32, 1, (int64_t[]){2}, ia);
    oc_const(c, 1, IPU_DTYPE_INT32, 1, (int64_t[]){1}, ib);
    RUN_OK(c);
    const int32_t *o = oc_output(c, 0)->data;
    assert_int_equal(o[0], 2);
    assert_int_equal(o[1], -9);
    oc_free(c);
}

static void test_int64_compare(void **state)
{
    int64_t a[] = {1, 5, 3, -2, 4, 4}, b[] = {3, 4};  /* [3,2] vs [2] */
    struct { const char *op; int opset; uint8_t want[6]; } cases[] = {
        {"Less", 13, {1, 0, 0, 1, 0, 0}},
        {"Greater", 9, {0, 1, 0, 0, 1, 0}},
        {"Equal", 11, {0, 0, 1, 0, 0, 1}},
        {"LessOrEqual", 16, {1, 0, 1, 1, 0, 1}},
        {"GreaterOrEqual", 12, {0, 1, 1, 0, 1, 1}},
    };
    for (size_t k = 0; k < N(cases); k++) {
        op_case_t *c = bin_i64(cases[k].op, cases[k].opset, 2, (int64_t[]){3, 2}, a, 1,
                               (int64_t[]){2}, b);
        RUN_OK(c);
        assert_int_equal(oc_output(c, 0)->dtype, IPU_DTYPE_BOOL);
        assert_shape(oc_output(c, 0), 2, (int64_t[]){3, 2});
        assert_memory_equal(oc_output(c, 0)->data, cases[k].want, 6);
        oc_free(c);
    }
    /* float comparison, scalar first operand broadcast */
    float x[] = {0.5f, 2.0f, -1.0f}, t = 0.5f;
    op_case_t *c = oc_new("Less", 13, 2, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 0, SCALAR, &t);
    oc_input(c, 1, IPU_DTYPE_FLOAT, 1, (int64_t[]){3}, x);
    RUN_OK(c);
    assert_memory_equal(oc_output(c, 0)->data, ((uint8_t[]){0, 1, 0}), 3);
    oc_free(c);
}

static void test_logic(void **state)
{
    uint8_t a[] = {0, 0, 1, 1}, b[] = {0, 1};  /* [2,2] vs [2] */
    struct { const char *op; uint8_t want[4]; } cases[] = {
        {"And", {0, 0, 0, 1}}, {"Or", {0, 1, 1, 1}}, {"Xor", {0, 1, 1, 0}}};
    for (size_t k = 0; k < N(cases); k++) {
        op_case_t *c = oc_new(cases[k].op, 7, 2, 1);
        oc_input(c, 0, IPU_DTYPE_BOOL, 2, (int64_t[]){2, 2}, a);
        oc_input(c, 1, IPU_DTYPE_BOOL, 1, (int64_t[]){2}, b);
        RUN_OK(c);
        assert_memory_equal(oc_output(c, 0)->data, cases[k].want, 4);
        oc_free(c);
    }
    op_case_t *c = oc_new("Not", 13, 1, 1);
    oc_input(c, 0, IPU_DTYPE_BOOL, 1, (int64_t[]){2}, b);
    RUN_OK(c);
    assert_memory_equal(oc_output(c, 0)->data, ((uint8_t[]){1, 0}), 2);
    oc_free(c);
    /* And on floats is a dtype error naming the node */
    float f[] = {1.0f};
    c = oc_new("And", 7, 2, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 1, (int64_t[]){1}, f);
    oc_input(c, 1, IPU_DTYPE_FLOAT, 1, (int64_t[]){1}, f);
    assert_int_equal(oc_run(c), IPU_ERR_UNSUPPORTED);
    assert_non_null(strstr(ipu_error_message(), "node 'node' (And)"));
    oc_free(c);
}

static void test_where(void **state)
{
    /* cond [2,1], x [1,3], y rank 0 -> [2,3] */
    uint8_t cond[] = {1, 0};
    float x[] = {1.0f, 2.0f, 3.0f}, y = -INFINITY;
    op_case_t *c = oc_new("Where", 16, 3, 1);
    oc_input(c, 0, IPU_DTYPE_BOOL, 2, (int64_t[]){2, 1}, cond);
    oc_input(c, 1, IPU_DTYPE_FLOAT, 2, (int64_t[]){1, 3}, x);
    oc_const(c, 2, IPU_DTYPE_FLOAT, 0, SCALAR, &y);
    RUN_OK(c);
    assert_shape(oc_output(c, 0), 2, (int64_t[]){2, 3});
    close_inf(outf(c, 0), (float[]){1, 2, 3, -INFINITY, -INFINITY, -INFINITY}, 6, 0, 0);
    oc_free(c);
    /* int64, all broadcast: cond [3], x [2,1], y [3] */
    uint8_t cond2[] = {0, 1, 0};
    int64_t xi[] = {10, 20}, yi[] = {-1, -2, -3};
    c = oc_new("Where", 9, 3, 1);
    oc_const(c, 0, IPU_DTYPE_BOOL, 1, (int64_t[]){3}, cond2);
    oc_const(c, 1, IPU_DTYPE_INT64, 2, (int64_t[]){2, 1}, xi);
    oc_const(c, 2, IPU_DTYPE_INT64, 1, (int64_t[]){3}, yi);
    RUN_OK(c);
    assert_equal_i64(oc_output(c, 0)->data, (int64_t[]){-1, 10, -3, -1, 20, -3}, 6);
    oc_free(c);
    /* a float condition is a dtype error */
    c = oc_new("Where", 16, 3, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 1, (int64_t[]){3}, x);
    oc_input(c, 1, IPU_DTYPE_FLOAT, 1, (int64_t[]){3}, x);
    oc_input(c, 2, IPU_DTYPE_FLOAT, 1, (int64_t[]){3}, x);
    assert_int_equal(oc_run(c), IPU_ERR_SHAPE);
    oc_free(c);
}

static void test_variadic(void **state)
{
    float a[] = {1, 5}, b[] = {3, -1, 0, 2, 4, 4}, s = 2.0f;  /* [2] [3,2] [] */
    struct { const char *op; float want[6]; } cases[] = {
        {"Sum", {6, 6, 3, 9, 7, 11}},
        {"Mean", {2, 2, 1, 3, 7.0f / 3, 11.0f / 3}},
        {"Max", {3, 5, 2, 5, 4, 5}},
        {"Min", {1, -1, 0, 2, 1, 2}},
    };
    for (size_t k = 0; k < N(cases); k++) {
        op_case_t *c = oc_new(cases[k].op, 13, 3, 1);
        oc_input(c, 0, IPU_DTYPE_FLOAT, 1, (int64_t[]){2}, a);
        oc_input(c, 1, IPU_DTYPE_FLOAT, 2, (int64_t[]){3, 2}, b);
        oc_input(c, 2, IPU_DTYPE_FLOAT, 0, SCALAR, &s);
        RUN_OK(c);
        assert_shape(oc_output(c, 0), 2, (int64_t[]){3, 2});
        assert_allclose_f32(outf(c, 0), cases[k].want, 6, 1e-6, 0);
        oc_free(c);
    }
    /* one input: a copy; int64 Max */
    int64_t i1[] = {4, -9}, i2[] = {-3};
    op_case_t *c = oc_new("Max", 13, 2, 1);
    oc_input(c, 0, IPU_DTYPE_INT64, 1, (int64_t[]){2}, i1);
    oc_input(c, 1, IPU_DTYPE_INT64, 1, (int64_t[]){1}, i2);
    RUN_OK(c);
    assert_equal_i64(oc_output(c, 0)->data, (int64_t[]){4, -3}, 2);
    oc_free(c);
    c = oc_new("Sum", 8, 1, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 1, (int64_t[]){2}, a);
    RUN_OK(c);
    assert_allclose_f32(outf(c, 0), a, 2, 0, 0);
    oc_free(c);
}

static void test_binary_errors(void **state)
{
    float a[6] = {0}, b[4] = {0};
    op_case_t *c = oc_new("Add", 14, 2, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 2, (int64_t[]){2, 3}, a);
    oc_input(c, 1, IPU_DTYPE_FLOAT, 1, (int64_t[]){4}, b);
    assert_int_equal(oc_run(c), IPU_ERR_SHAPE);
    assert_non_null(strstr(ipu_error_message(), "node 'node' (Add)"));
    oc_free(c);
    /* mixed dtypes */
    int64_t i[3] = {0};
    c = oc_new("Mul", 13, 2, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 1, (int64_t[]){3}, a);
    oc_input(c, 1, IPU_DTYPE_INT64, 1, (int64_t[]){3}, i);
    assert_int_equal(oc_run(c), IPU_ERR_SHAPE);
    assert_non_null(strstr(ipu_error_message(), "node 'node' (Mul)"));
    oc_free(c);
    /* variadic with a non-broadcastable third input */
    c = oc_new("Sum", 13, 3, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 1, (int64_t[]){3}, a);
    oc_input(c, 1, IPU_DTYPE_FLOAT, 2, (int64_t[]){2, 3}, a);
    oc_input(c, 2, IPU_DTYPE_FLOAT, 1, (int64_t[]){4}, b);
    assert_int_equal(oc_run(c), IPU_ERR_SHAPE);
    oc_free(c);
}

/* ---- unary ---------------------------------------------------------------- */

static op_case_t *un_f(const char *op, int opset, const float *x, int64_t n)
{
    op_case_t *c = oc_new(op, opset, 1, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 1, (int64_t[]){n}, x);
    return c;
}

static void test_unary_float(void **state)
{
    struct { const char *op; const float *want; double rtol; } cases[] = {
        {"Sigmoid", un_sigmoid, 1e-5}, {"Tanh", un_tanh, 1e-6}, {"Erf", un_erf, 1e-6},
        {"Exp", un_exp, 1e-6}, {"Softplus", un_softplus, 1e-5}, {"Selu", un_selu, 1e-5},
        {"HardSwish", un_hswish, 1e-6}, {"Softsign", un_softsign, 1e-6},
        {"Round", un_round, 0}, {"Sin", un_sin, 1e-6}, {"Cos", un_cos, 1e-6},
    };
    for (size_t k = 0; k < N(cases); k++) {
        op_case_t *c = un_f(cases[k].op, 14, un_x, N(un_x));
        RUN_OK(c);
        assert_allclose_f32(outf(c, 0), cases[k].want, N(un_x), cases[k].rtol, 1e-7);
        oc_free(c);
    }
    /* attributes */
    op_case_t *c = un_f("Elu", 6, un_x, N(un_x));
    ipu_node_add_attr_float(oc_node(c), "alpha", 0.7f);
    RUN_OK(c);
    assert_allclose_f32(outf(c, 0), un_elu, N(un_x), 1e-5, 1e-7);
    oc_free(c);
    c = un_f("HardSigmoid", 6, un_x, N(un_x));
    ipu_node_add_attr_float(oc_node(c), "alpha", 0.3f);
    ipu_node_add_attr_float(oc_node(c), "beta", 0.4f);
    RUN_OK(c);
    assert_allclose_f32(outf(c, 0), un_hsig, N(un_x), 1e-6, 1e-7);
    oc_free(c);
    c = un_f("LeakyRelu", 16, un_x, N(un_x));
    ipu_node_add_attr_float(oc_node(c), "alpha", 0.1f);
    RUN_OK(c);
    assert_allclose_f32(outf(c, 0), un_leaky, N(un_x), 1e-6, 0);
    oc_free(c);
    /* Log and Sqrt on |x| + 0.1 and |x| */
    float ax[N(un_x)], ax1[N(un_x)];
    for (size_t i = 0; i < N(un_x); i++) {
        ax[i] = fabsf(un_x[i]);
        ax1[i] = ax[i] + 0.1f;
    }
    c = un_f("Log", 13, ax1, N(un_x));
    RUN_OK(c);
    assert_allclose_f32(outf(c, 0), un_log, N(un_x), 1e-6, 1e-7);
    oc_free(c);
    c = un_f("Sqrt", 13, ax, N(un_x));
    RUN_OK(c);
    assert_allclose_f32(outf(c, 0), un_sqrt, N(un_x), 1e-6, 0);
    oc_free(c);
    /* by hand: Relu, Neg, Abs, Floor, Ceil, Reciprocal, Sign */
    float h[] = {-2.5f, -0.0f, 0.5f, 4.0f};
    struct { const char *op; float want[4]; } hc[] = {
        {"Relu", {0, 0, 0.5f, 4}}, {"Neg", {2.5f, 0, -0.5f, -4}}, {"Abs", {2.5f, 0, 0.5f, 4}},
        {"Floor", {-3, 0, 0, 4}}, {"Ceil", {-2, 0, 1, 4}}, {"Reciprocal", {-0.4f, -INFINITY, 2, 0.25f}},
        {"Sign", {-1, 0, 1, 1}},
    };
    for (size_t k = 0; k < N(hc); k++) {
        c = un_f(hc[k].op, 13, h, 4);
        RUN_OK(c);
        close_inf(outf(c, 0), hc[k].want, 4, 0, 0);
        oc_free(c);
    }
}

static void test_unary_int(void **state)
{
    int64_t x[] = {-5, 0, 7, INT64_MAX};
    struct { const char *op; int64_t want[4]; } cases[] = {
        {"Neg", {5, 0, -7, -INT64_MAX}}, {"Abs", {5, 0, 7, INT64_MAX}},
        {"Sign", {-1, 0, 1, 1}}, {"Identity", {-5, 0, 7, INT64_MAX}}, {"Relu", {0, 0, 7, INT64_MAX}},
    };
    for (size_t k = 0; k < N(cases); k++) {
        op_case_t *c = oc_new(cases[k].op, 14, 1, 1);
        oc_input(c, 0, IPU_DTYPE_INT64, 1, (int64_t[]){4}, x);
        RUN_OK(c);
        assert_int_equal(oc_output(c, 0)->dtype, IPU_DTYPE_INT64);
        assert_equal_i64(oc_output(c, 0)->data, cases[k].want, 4);
        oc_free(c);
    }
    /* Sigmoid of int64 is unsupported, with the node named */
    op_case_t *c = oc_new("Sigmoid", 13, 1, 1);
    oc_input(c, 0, IPU_DTYPE_INT64, 1, (int64_t[]){4}, x);
    assert_int_equal(oc_run(c), IPU_ERR_UNSUPPORTED);
    assert_non_null(strstr(ipu_error_message(), "node 'node' (Sigmoid)"));
    oc_free(c);
}

/* int64 Clip-12 of x[3] to [lo, hi] gives want[3] */
static void clip_i64(const int64_t *x, int64_t lo, int64_t hi, const int64_t *want)
{
    op_case_t *c = oc_new("Clip", 12, 3, 1);
    oc_input(c, 0, IPU_DTYPE_INT64, 1, (int64_t[]){3}, x);
    oc_const(c, 1, IPU_DTYPE_INT64, 0, SCALAR, &lo);
    oc_const(c, 2, IPU_DTYPE_INT64, 0, SCALAR, &hi);
    RUN_OK(c);
    assert_equal_i64(oc_output(c, 0)->data, want, 3);
    oc_free(c);
}

static void test_clip(void **state)
{
    float x[] = {-3, -1, 0, 2, 8};
    /* Clip-13 with absent min, max = 6 (ReLU6 without the lower bound) */
    float mx = 6.0f, mn = -1.5f;
    op_case_t *c = oc_new("Clip", 13, 3, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 1, (int64_t[]){5}, x);
    oc_absent(c, 1);
    oc_const(c, 2, IPU_DTYPE_FLOAT, 0, SCALAR, &mx);
    RUN_OK(c);
    assert_allclose_f32(outf(c, 0), (float[]){-3, -1, 0, 2, 6}, 5, 0, 0);
    oc_free(c);
    /* Clip-11 with only min given (one input slot left off) */
    c = oc_new("Clip", 11, 2, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 1, (int64_t[]){5}, x);
    oc_input(c, 1, IPU_DTYPE_FLOAT, 0, SCALAR, &mn);
    RUN_OK(c);
    assert_allclose_f32(outf(c, 0), (float[]){-1.5f, -1, 0, 2, 8}, 5, 0, 0);
    oc_free(c);
    /* Clip-6: attributes */
    c = un_f("Clip", 6, x, 5);
    ipu_node_add_attr_float(oc_node(c), "min", 0.0f);
    ipu_node_add_attr_float(oc_node(c), "max", 6.0f);
    RUN_OK(c);
    assert_allclose_f32(outf(c, 0), (float[]){0, 0, 0, 2, 6}, 5, 0, 0);
    oc_free(c);
    /* int64 Clip-12 */
    int64_t xi[] = {-9, 4, 12}, lo = 0;
    clip_i64(xi, 0, 10, (int64_t[]){0, 4, 10});
    /* min above max: max everywhere (Operators.md: Min(max, Max(x, min));
     * numpy.clip(x, 3, 1) and torch.clamp(x, 3, 1) give 1); a NaN bound:
     * NaN everywhere (torch.clamp(x, min=nan) and (max=nan)) */
    float lo3 = 3.0f, hi1 = 1.0f, fnan = NAN;
    float xn[] = {-3, -1, 0, 2, 8, NAN};
    c = oc_new("Clip", 13, 3, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 1, (int64_t[]){6}, xn);
    oc_const(c, 1, IPU_DTYPE_FLOAT, 0, SCALAR, &lo3);
    oc_const(c, 2, IPU_DTYPE_FLOAT, 0, SCALAR, &hi1);
    RUN_OK(c);
    for (int i = 0; i < 5; i++)
        assert_true(outf(c, 0)[i] == 1.0f);
    assert_true(isnan(outf(c, 0)[5])); /* numpy.clip(nan, 3, 1) is nan */
    oc_free(c);
    for (int b = 1; b <= 2; b++) {
        c = oc_new("Clip", 13, 3, 1);
        oc_input(c, 0, IPU_DTYPE_FLOAT, 1, (int64_t[]){5}, x);
        oc_const(c, 1, IPU_DTYPE_FLOAT, 0, SCALAR, b == 1 ? &fnan : &mn);
        oc_const(c, 2, IPU_DTYPE_FLOAT, 0, SCALAR, b == 2 ? &fnan : &mx);
        RUN_OK(c);
        for (int i = 0; i < 5; i++)
            assert_true(isnan(outf(c, 0)[i]));
        oc_free(c);
    }
    clip_i64(xi, 9, 2, (int64_t[]){2, 2, 2});
    /* min of another dtype is an error */
    c = oc_new("Clip", 13, 2, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 1, (int64_t[]){5}, x);
    oc_const(c, 1, IPU_DTYPE_INT64, 0, SCALAR, &lo);
    assert_int_equal(oc_run(c), IPU_ERR_SHAPE);
    oc_free(c);
}

static void test_prelu_dropout(void **state)
{
    float sl[] = {0.1f, -2.0f};
    op_case_t *c = oc_new("PRelu", 16, 2, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 4, (int64_t[]){1, 2, 2, 2}, pr_x);
    oc_const(c, 1, IPU_DTYPE_FLOAT, 3, (int64_t[]){2, 1, 1}, sl);
    RUN_OK(c);
    assert_allclose_f32(outf(c, 0), pr_y, 8, 1e-6, 0);
    oc_free(c);
    /* a slope that does not broadcast to X */
    c = oc_new("PRelu", 9, 2, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 4, (int64_t[]){1, 2, 2, 2}, pr_x);
    oc_const(c, 1, IPU_DTYPE_FLOAT, 1, (int64_t[]){3}, un_x);
    assert_int_equal(oc_run(c), IPU_ERR_SHAPE);
    oc_free(c);
    /* Dropout-13 inference: identity plus an all-true mask */
    c = oc_new("Dropout", 13, 1, 2);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 2, (int64_t[]){2, 4}, pr_x);
    RUN_OK(c);
    assert_allclose_f32(outf(c, 0), pr_x, 8, 0, 0);
    assert_int_equal(oc_output(c, 1)->dtype, IPU_DTYPE_BOOL);
    assert_memory_equal(oc_output(c, 1)->data, ((uint8_t[]){1, 1, 1, 1, 1, 1, 1, 1}), 8);
    assert_true(oc_node(c)->op->flags & IPU_OP_ALIAS_INPUT0);
    oc_free(c);
    /* training_mode = true is refused */
    uint8_t t = 1;
    float r = 0.5f;
    c = oc_new("Dropout", 13, 3, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 2, (int64_t[]){2, 4}, pr_x);
    oc_const(c, 1, IPU_DTYPE_FLOAT, 0, SCALAR, &r);
    oc_const(c, 2, IPU_DTYPE_BOOL, 0, SCALAR, &t);
    assert_int_equal(oc_run(c), IPU_ERR_UNSUPPORTED);
    oc_free(c);
}

/* ---- cast ---------------------------------------------------------------- */

static op_case_t *cast(ipu_dtype_t from, const void *x, int64_t n, ipu_dtype_t to)
{
    op_case_t *c = oc_new("Cast", 13, 1, 1);
    oc_input(c, 0, from, 1, (int64_t[]){n}, x);
    ipu_node_add_attr_int(oc_node(c), "to", to);
    RUN_OK(c);
    assert_int_equal(oc_output(c, 0)->dtype, to);
    return c;
}

static void test_cast(void **state)
{
    float f[] = {-2.7f, -0.0f, 0.5f, 3.9f, 300.0f};
    op_case_t *c = cast(IPU_DTYPE_FLOAT, f, 5, IPU_DTYPE_INT64);
    assert_equal_i64(oc_output(c, 0)->data, (int64_t[]){-2, 0, 0, 3, 300}, 5);
    oc_free(c);
    c = cast(IPU_DTYPE_FLOAT, f, 5, IPU_DTYPE_BOOL);
    assert_memory_equal(oc_output(c, 0)->data, ((uint8_t[]){1, 0, 1, 1, 1}), 5);
    oc_free(c);
    c = cast(IPU_DTYPE_FLOAT, f, 5, IPU_DTYPE_INT8);
    const int8_t *i8 = oc_output(c, 0)->data;
    assert_int_equal(i8[0], -2);
    assert_int_equal(i8[3], 3);
    oc_free(c);
    int64_t big[] = {-3, (int64_t)1 << 40, 7};
    c = cast(IPU_DTYPE_INT64, big, 3, IPU_DTYPE_FLOAT);
    assert_allclose_f32(outf(c, 0), (float[]){-3.0f, 1099511627776.0f, 7.0f}, 3, 0, 0);
    oc_free(c);
    c = cast(IPU_DTYPE_INT64, big, 3, IPU_DTYPE_DOUBLE);
    const double *d = oc_output(c, 0)->data;
    assert_true(d[1] == 1099511627776.0);
    oc_free(c);
    uint8_t b[] = {1, 0, 1};
    c = cast(IPU_DTYPE_BOOL, b, 3, IPU_DTYPE_FLOAT);
    assert_allclose_f32(outf(c, 0), (float[]){1, 0, 1}, 3, 0, 0);
    oc_free(c);
    int32_t i32[] = {-70000, 5};
    c = cast(IPU_DTYPE_INT32, i32, 2, IPU_DTYPE_INT64);
    assert_equal_i64(oc_output(c, 0)->data, (int64_t[]){-70000, 5}, 2);
    oc_free(c);
    /* float16: 0.1 rounds to 0x2e66 (numpy: np.float16(0.1).view(np.uint16)) */
    float h[] = {0.1f, -2.0f, 65504.0f};
    c = cast(IPU_DTYPE_FLOAT, h, 3, IPU_DTYPE_FLOAT16);
    const uint16_t *hb = oc_output(c, 0)->data;
    assert_int_equal(hb[0], 0x2e66);
    assert_int_equal(hb[1], 0xc000);
    assert_int_equal(hb[2], 0x7bff);
    op_case_t *c2 = cast(IPU_DTYPE_FLOAT16, hb, 3, IPU_DTYPE_FLOAT);
    assert_allclose_f32(outf(c2, 0), (float[]){0.0999755859375f, -2.0f, 65504.0f}, 3, 0, 0);
    oc_free(c2);
    oc_free(c);
    /* CastLike-15 takes the dtype of its second input */
    int64_t like = 0;
    c = oc_new("CastLike", 15, 2, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 1, (int64_t[]){5}, f);
    oc_const(c, 1, IPU_DTYPE_INT64, 0, SCALAR, &like);
    RUN_OK(c);
    assert_equal_i64(oc_output(c, 0)->data, (int64_t[]){-2, 0, 0, 3, 300}, 5);
    oc_free(c);
    /* strings are refused */
    c = oc_new("Cast", 13, 1, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 1, (int64_t[]){5}, f);
    ipu_node_add_attr_int(oc_node(c), "to", IPU_DTYPE_STRING);
    assert_int_equal(oc_run(c), IPU_ERR_UNSUPPORTED);
    oc_free(c);
}

/* ---- softmax ------------------------------------------------------------- */

static op_case_t *softmax(const char *op, int opset, int has_axis, int64_t axis)
{
    op_case_t *c = oc_new(op, opset, 1, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 3, (int64_t[]){2, 2, 3}, sm_x);
    if (has_axis)
        ipu_node_add_attr_int(oc_node(c), "axis", axis);
    RUN_OK(c);
    return c;
}

static void test_softmax(void **state)
{
    /* default axis: opset 11 coerces to [2, 6], opset 13 normalises the last axis */
    op_case_t *c = softmax("Softmax", 11, 0, 0);
    assert_allclose_f32(outf(c, 0), sm_11, 12, 1e-5, 1e-7);
    oc_free(c);
    c = softmax("Softmax", 13, 0, 0);
    assert_allclose_f32(outf(c, 0), sm_13, 12, 1e-5, 1e-7);
    assert_true(outf(c, 0)[10] == 0.0f);  /* -inf gives exactly 0 */
    oc_free(c);
    /* opset 13, middle axis (strided) with a negative axis */
    c = softmax("Softmax", 13, 1, -2);
    assert_allclose_f32(outf(c, 0), sm_ax1, 12, 1e-5, 1e-7);
    oc_free(c);
    c = softmax("LogSoftmax", 13, 0, 0);
    close_inf(outf(c, 0), lsm_13, 12, 1e-5, 1e-6);
    oc_free(c);
    c = softmax("LogSoftmax", 13, 1, 0);
    close_inf(outf(c, 0), lsm_ax0, 12, 1e-5, 1e-6);
    oc_free(c);
    /* axis out of range */
    c = oc_new("Softmax", 13, 1, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 3, (int64_t[]){2, 2, 3}, sm_x);
    ipu_node_add_attr_int(oc_node(c), "axis", 3);
    assert_int_equal(oc_run(c), IPU_ERR_INVALID_MODEL);
    assert_non_null(strstr(ipu_error_message(), "node 'node' (Softmax)"));
    oc_free(c);
}

/* ---- normalisation ------------------------------------------------------- */

static void test_layernorm(void **state)
{
    float sc[] = {0.5f, 1.0f, 2.0f}, bi[] = {0.1f, 0.2f, -0.3f};
    op_case_t *c = oc_new("LayerNormalization", 17, 3, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 3, (int64_t[]){2, 2, 3}, ln_x);
    oc_const(c, 1, IPU_DTYPE_FLOAT, 1, (int64_t[]){3}, sc);
    oc_const(c, 2, IPU_DTYPE_FLOAT, 1, (int64_t[]){3}, bi);
    RUN_OK(c);
    assert_allclose_f32(outf(c, 0), ln_last, 12, 1e-5, 1e-6);
    oc_free(c);
    /* axis -2: normalise over [2,3], scale [3] broadcast, no bias, with
     * the Mean and InvStdDev outputs */
    c = oc_new("LayerNormalization", 17, 2, 3);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 3, (int64_t[]){2, 2, 3}, ln_x);
    oc_const(c, 1, IPU_DTYPE_FLOAT, 1, (int64_t[]){3}, sc);
    ipu_node_add_attr_int(oc_node(c), "axis", -2);
    ipu_node_add_attr_float(oc_node(c), "epsilon", 1e-3f);
    RUN_OK(c);
    assert_allclose_f32(outf(c, 0), ln_m2, 12, 1e-5, 1e-6);
    assert_shape(oc_output(c, 1), 3, (int64_t[]){2, 1, 1});
    assert_allclose_f32(outf(c, 1), ln_mean2, 2, 1e-5, 1e-6);
    assert_allclose_f32(outf(c, 2), ln_inv2, 2, 1e-5, 1e-6);
    oc_free(c);
    /* a scale that does not broadcast to the normalised shape */
    c = oc_new("LayerNormalization", 17, 2, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 3, (int64_t[]){2, 2, 3}, ln_x);
    oc_const(c, 1, IPU_DTYPE_FLOAT, 1, (int64_t[]){2}, sc);
    assert_int_equal(oc_run(c), IPU_ERR_SHAPE);
    oc_free(c);
}

static void test_batch_instance_norm(void **state)
{
    float s[] = {1.5f, -0.5f}, b[] = {0.1f, 0.2f}, m[] = {0.5f, -1.0f}, v[] = {2.0f, 0.5f};
    int opsets[] = {7, 9, 14, 15};
    for (size_t k = 0; k < N(opsets); k++) {
        op_case_t *c = oc_new("BatchNormalization", opsets[k], 5, 1);
        oc_input(c, 0, IPU_DTYPE_FLOAT, 3, (int64_t[]){2, 2, 3}, ln_x);
        oc_const(c, 1, IPU_DTYPE_FLOAT, 1, (int64_t[]){2}, s);
        oc_const(c, 2, IPU_DTYPE_FLOAT, 1, (int64_t[]){2}, b);
        oc_const(c, 3, IPU_DTYPE_FLOAT, 1, (int64_t[]){2}, m);
        oc_const(c, 4, IPU_DTYPE_FLOAT, 1, (int64_t[]){2}, v);
        RUN_OK(c);
        assert_allclose_f32(outf(c, 0), bn_y, 12, 1e-5, 1e-6);
        oc_free(c);
    }
    op_case_t *c = oc_new("BatchNormalization", 15, 5, 3);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 3, (int64_t[]){2, 2, 3}, ln_x);
    for (int i = 1; i < 5; i++)
        oc_const(c, i, IPU_DTYPE_FLOAT, 1, (int64_t[]){2}, s);
    ipu_node_add_attr_int(oc_node(c), "training_mode", 1);
    assert_int_equal(oc_run(c), IPU_ERR_UNSUPPORTED);
    assert_non_null(strstr(ipu_error_message(), "training"));
    oc_free(c);
    c = oc_new("InstanceNormalization", 6, 3, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 3, (int64_t[]){2, 2, 3}, ln_x);
    oc_const(c, 1, IPU_DTYPE_FLOAT, 1, (int64_t[]){2}, s);
    oc_const(c, 2, IPU_DTYPE_FLOAT, 1, (int64_t[]){2}, b);
    RUN_OK(c);
    assert_allclose_f32(outf(c, 0), in_y, 12, 1e-4, 1e-5);
    oc_free(c);
    /* wrong channel count */
    c = oc_new("InstanceNormalization", 6, 3, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 3, (int64_t[]){2, 2, 3}, ln_x);
    oc_const(c, 1, IPU_DTYPE_FLOAT, 1, (int64_t[]){3}, ln_x);
    oc_const(c, 2, IPU_DTYPE_FLOAT, 1, (int64_t[]){2}, b);
    assert_int_equal(oc_run(c), IPU_ERR_SHAPE);
    oc_free(c);
}

/* ---- reductions ----------------------------------------------------------- */

static op_case_t *reduce(const char *op, int opset, size_t naxes, const int64_t *axes,
                         int keepdims)
{
    op_case_t *c = oc_new(op, opset, 1, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 3, (int64_t[]){2, 3, 4}, rd_x);
    if (axes)
        ipu_node_add_attr_ints(oc_node(c), "axes", naxes, axes);
    if (keepdims >= 0)
        ipu_node_add_attr_int(oc_node(c), "keepdims", keepdims);
    RUN_OK(c);
    return c;
}

static void test_reduce(void **state)
{
    op_case_t *c = reduce("ReduceMean", 13, 1, (int64_t[]){-1}, -1);
    assert_shape(oc_output(c, 0), 3, (int64_t[]){2, 3, 1});
    assert_allclose_f32(outf(c, 0), rd_mean_last, 6, 1e-6, 1e-7);
    oc_free(c);
    c = reduce("ReduceMax", 17, 0, NULL, 1);
    assert_shape(oc_output(c, 0), 3, (int64_t[]){1, 1, 1});
    assert_allclose_f32(outf(c, 0), rd_max_all, 1, 0, 0);
    oc_free(c);
    c = reduce("ReduceL2", 13, 1, (int64_t[]){1}, 0);
    assert_shape(oc_output(c, 0), 2, (int64_t[]){2, 4});
    assert_allclose_f32(outf(c, 0), rd_l2_1, 8, 1e-6, 1e-7);
    oc_free(c);
    c = reduce("ReduceLogSumExp", 13, 1, (int64_t[]){-2}, 0);
    assert_allclose_f32(outf(c, 0), rd_lse_1, 8, 1e-6, 1e-6);
    oc_free(c);
    c = reduce("ReduceProd", 11, 1, (int64_t[]){0}, 0);
    assert_allclose_f32(outf(c, 0), rd_prod_0, 12, 1e-6, 0);
    oc_free(c);
    /* axes {0, 2}: not adjacent, the gather path */
    c = reduce("ReduceMin", 13, 2, (int64_t[]){0, -1}, 1);
    assert_shape(oc_output(c, 0), 3, (int64_t[]){1, 3, 1});
    assert_allclose_f32(outf(c, 0), rd_min_02, 3, 0, 0);
    oc_free(c);
    c = reduce("ReduceL1", 13, 2, (int64_t[]){2, 1}, 0);
    assert_allclose_f32(outf(c, 0), rd_l1_12, 2, 1e-6, 0);
    oc_free(c);
    c = reduce("ReduceSumSquare", 13, 1, (int64_t[]){1}, 1);
    assert_shape(oc_output(c, 0), 3, (int64_t[]){2, 1, 4});
    assert_allclose_f32(outf(c, 0), rd_sumsq_1, 8, 1e-6, 0);
    oc_free(c);
    /* ReduceSum-13: axes as an input */
    c = oc_new("ReduceSum", 13, 2, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 3, (int64_t[]){2, 3, 4}, rd_x);
    oc_const(c, 1, IPU_DTYPE_INT64, 1, (int64_t[]){2}, (int64_t[]){0, 2});
    ipu_node_add_attr_int(oc_node(c), "keepdims", 0);
    RUN_OK(c);
    assert_shape(oc_output(c, 0), 1, (int64_t[]){3});
    assert_allclose_f32(outf(c, 0), rd_sum_02, 3, 1e-6, 1e-6);
    oc_free(c);
    /* ReduceSum-13, no axes and noop_with_empty_axes: identity */
    c = oc_new("ReduceSum", 13, 1, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 3, (int64_t[]){2, 3, 4}, rd_x);
    ipu_node_add_attr_int(oc_node(c), "noop_with_empty_axes", 1);
    RUN_OK(c);
    assert_shape(oc_output(c, 0), 3, (int64_t[]){2, 3, 4});
    assert_allclose_f32(outf(c, 0), rd_x, 24, 0, 0);
    oc_free(c);
    /* ReduceSum-11 over all axes, keepdims 0: a scalar (sum of rd_x is 0 +
     * checked against the mean of the per-row means times 24) */
    c = reduce("ReduceSum", 11, 0, NULL, 0);
    assert_int_equal(oc_output(c, 0)->rank, 0);
    float total = 0;
    for (int i = 0; i < 6; i++)
        total += rd_mean_last[i] * 4;
    assert_allclose_f32(outf(c, 0), &total, 1, 1e-5, 1e-5);
    oc_free(c);
}

static void test_reduce_int_and_errors(void **state)
{
    int64_t x[] = {3, -1, 4, 1, -5, 9};  /* [2,3] */
    op_case_t *c = oc_new("ReduceSum", 13, 2, 1);
    oc_input(c, 0, IPU_DTYPE_INT64, 2, (int64_t[]){2, 3}, x);
    oc_const(c, 1, IPU_DTYPE_INT64, 1, (int64_t[]){1}, (int64_t[]){-1});
    RUN_OK(c);
    assert_shape(oc_output(c, 0), 2, (int64_t[]){2, 1});
    assert_equal_i64(oc_output(c, 0)->data, (int64_t[]){6, 5}, 2);
    oc_free(c);
    c = oc_new("ReduceMax", 13, 1, 1);
    oc_input(c, 0, IPU_DTYPE_INT64, 2, (int64_t[]){2, 3}, x);
    ipu_node_add_attr_ints(oc_node(c), "axes", 1, (int64_t[]){0});
    ipu_node_add_attr_int(oc_node(c), "keepdims", 0);
    RUN_OK(c);
    assert_equal_i64(oc_output(c, 0)->data, (int64_t[]){3, -1, 9}, 3);
    oc_free(c);
    /* axis out of range, repeated axis, non-constant axes */
    c = oc_new("ReduceMean", 13, 1, 1);
    oc_input(c, 0, IPU_DTYPE_INT64, 2, (int64_t[]){2, 3}, x);
    ipu_node_add_attr_ints(oc_node(c), "axes", 1, (int64_t[]){2});
    assert_int_equal(oc_run(c), IPU_ERR_INVALID_MODEL);
    assert_non_null(strstr(ipu_error_message(), "node 'node' (ReduceMean)"));
    oc_free(c);
    c = oc_new("ReduceMean", 13, 1, 1);
    oc_input(c, 0, IPU_DTYPE_INT64, 2, (int64_t[]){2, 3}, x);
    ipu_node_add_attr_ints(oc_node(c), "axes", 2, (int64_t[]){1, -1});
    assert_int_equal(oc_run(c), IPU_ERR_INVALID_MODEL);
    oc_free(c);
    c = oc_new("ReduceSum", 13, 2, 1);
    oc_input(c, 0, IPU_DTYPE_INT64, 2, (int64_t[]){2, 3}, x);
    oc_input(c, 1, IPU_DTYPE_INT64, 1, (int64_t[]){1}, (int64_t[]){0});
    assert_int_equal(oc_run(c), IPU_ERR_UNSUPPORTED);
    assert_non_null(strstr(ipu_error_message(), "data-dependent shapes are not supported"));
    oc_free(c);
}

static void test_argmax(void **state)
{
    float x[] = {3, 1, 3, -2, 5, 5, 0, 0, 0, 7, 7, -1};  /* [2,2,3] */
    struct { const char *op; int64_t axis; int keep, last; int rank; int64_t dims[3];
             int64_t want[6]; } cases[] = {
        {"ArgMax", -1, 1, 0, 3, {2, 2, 1}, {0, 1, 0, 0}},
        {"ArgMax", -1, 0, 1, 2, {2, 2}, {2, 2, 2, 1}},
        {"ArgMin", 1, 0, 0, 2, {2, 3}, {1, 0, 0, 0, 0, 1}},
        {"ArgMin", 0, 1, 1, 3, {1, 2, 3}, {1, 1, 1, 0, 0, 1}},
    };
    for (size_t k = 0; k < N(cases); k++) {
        op_case_t *c = oc_new(cases[k].op, 13, 1, 1);
        oc_input(c, 0, IPU_DTYPE_FLOAT, 3, (int64_t[]){2, 2, 3}, x);
        ipu_node_add_attr_int(oc_node(c), "axis", cases[k].axis);
        ipu_node_add_attr_int(oc_node(c), "keepdims", cases[k].keep);
        ipu_node_add_attr_int(oc_node(c), "select_last_index", cases[k].last);
        RUN_OK(c);
        assert_int_equal(oc_output(c, 0)->dtype, IPU_DTYPE_INT64);
        assert_shape(oc_output(c, 0), cases[k].rank, cases[k].dims);
        assert_equal_i64(oc_output(c, 0)->data, cases[k].want,
                         (size_t)ipu_tensor_numel(oc_output(c, 0)));
        oc_free(c);
    }
    op_case_t *c = oc_new("ArgMax", 13, 1, 1);
    oc_input(c, 0, IPU_DTYPE_FLOAT, 3, (int64_t[]){2, 2, 3}, x);
    ipu_node_add_attr_int(oc_node(c), "axis", -4);
    assert_int_equal(oc_run(c), IPU_ERR_INVALID_MODEL);
    oc_free(c);
}

/* ---- accuracy of the vectorised exp / sigmoid / tanh / erf (ew.h) -------
 * Each is compared with double-precision libm (sigmoid: 1 / (1 + exp(-x))
 * in double) over 1,000,001 points evenly spaced in [-20, 20] (exp also in
 * [-104, 89]), 4,000 log-spaced points +-[1e-38, 1], and the special values
 * below; twice: through the op (the dispatched, vectorised kernel: the
 * AVX2 + FMA clone on x86-64-v3 CPUs) and by direct calls compiled for the
 * baseline ISA (no FMA). Asserted: NaN for NaN, exact infinities, and where
 * the reference is a normal float a relative error of at most the bound
 * ew.h claims, in units of FLT_EPSILON (2^-23, 1 ulp at 1); below FLT_MIN
 * an absolute error of at most `tiny` (sigmoid and erf's exp flush results
 * under FLT_MIN to 0). */
static float d_exp(float x) { return ipu_ew_expf(x); }
static float d_sigmoid(float x) { return ipu_ew_sigmoidf(x); }
static float d_tanh(float x) { return ipu_ew_tanhf(x); }
static float d_erf(float x) { return ipu_ew_erff(x); }
static double ref_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

typedef struct acc_case {
    const char *op;
    float (*direct)(float);
    double (*ref)(double);
    double max_eps; /* bound on the relative error, in FLT_EPSILON */
    double tiny;    /* bound on the absolute error where |ref| < FLT_MIN */
} acc_case_t;

/* max relative error (in FLT_EPSILON) of got against ref over n inputs;
 * fails on a NaN / infinity mismatch or an absolute error above tiny */
static double acc_check(const acc_case_t *k, const char *how, const float *x, const float *got,
                        size_t n)
{
    double worst = 0;
    size_t wi = 0;
    for (size_t i = 0; i < n; i++) {
        double r = k->ref((double)x[i]);
        float rf = (float)r;
        if (isnan(r) || isinf(rf)) {
            if (!(isnan(r) ? isnan(got[i]) : got[i] == rf))
                fail_msg("%s (%s) x=%a: got %a, want %a", k->op, how, (double)x[i],
                         (double)got[i], (double)rf);
            continue;
        }
        double e = fabs((double)got[i] - r);
        if (fabs(r) < FLT_MIN) {
            if (!(e <= k->tiny))
                fail_msg("%s (%s) x=%a: got %a, want %a (tiny)", k->op, how, (double)x[i],
                         (double)got[i], r);
            continue;
        }
        e /= fabs(r) * FLT_EPSILON;
        if (!(e <= worst)) { /* also catches NaN */
            worst = e;
            wi = i;
        }
    }
    if (!(worst <= k->max_eps))
        fail_msg("%s (%s): relative error %.3g eps at x=%a (got %a, want %a), bound %g", k->op,
                 how, worst, (double)x[wi], (double)got[wi], k->ref((double)x[wi]), k->max_eps);
    return worst;
}

/* The sweep both accuracy tests read: N_LIN points evenly spaced in
 * [-20, 20], N_LOG log-spaced ones in +-[1e-38, 1], then special[0..n_sp)
 * into x; returns how many. */
enum { N_LIN = 1000001, N_LOG = 2000 };
static size_t acc_sweep(float *x, const float *special, size_t n_sp)
{
    size_t m = 0;
    for (size_t i = 0; i < N_LIN; i++)
        x[m++] = (float)(-20.0 + 40.0 * (double)i / (double)(N_LIN - 1));
    for (size_t i = 0; i < N_LOG; i++) {
        float v = (float)pow(10.0, -38.0 + 38.0 * (double)i / (double)(N_LOG - 1));
        x[m++] = v;
        x[m++] = -v;
    }
    memcpy(x + m, special, n_sp * sizeof(float));
    return m + n_sp;
}

/* ipu_ew_silu_f32 (the SiLU a Conv or Gemm leaves to our loop after its
 * primitive: the 512-bit clone on x86-64-v4 CPUs) against x / (1 + exp(-x))
 * in double, within sigmoid's bound and one rounding of the product, over
 * [-20, 20], +-[1e-38, 1] and special values down to -80 (below -87.34
 * ipu_ew_sigmoidf flushes to 0: x * sigmoid(x) then is 0 where the
 * reference is still about 1e-36). */
static double ref_silu(double x) { return x / (1.0 + exp(-x)); }
static float d_silu(float x) { return x * ipu_ew_sigmoidf(x); }

static void test_silu_accuracy(void **state)
{
    (void)state;
    const acc_case_t k = {"SiLU", d_silu, ref_silu, 3, FLT_TRUE_MIN};
    const float special[] = {-INFINITY, INFINITY, NAN, 0.0f, -0.0f, FLT_TRUE_MIN, -FLT_TRUE_MIN,
                             1e-40f, -3e-39f, FLT_MIN, -FLT_MIN, FLT_MAX, 1e-30f, -1e-7f,
                             88.72284f, -80.0f, -40.5f, 3.925f, -3.92f, 9.0f, -9.5f};
    const size_t n = N_LIN + 2 * N_LOG + N(special);
    float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float));
    assert_non_null(x);
    assert_non_null(y);
    acc_sweep(x, special, N(special));
    memcpy(y, x, n * sizeof(float));
    ipu_ew_silu_f32(1, y, (int64_t)n); /* in place, as after a primitive */
    double e = acc_check(&k, "dispatched", x, y, n);
    for (size_t i = 0; i < n; i++)
        y[i] = d_silu(x[i]);
    double e_direct = acc_check(&k, "direct", x, y, n);
    print_message("SiLU     max relative error: %.2f eps (dispatched), %.2f eps (direct, no FMA)\n", e,
                  e_direct);
    free(x);
    free(y);
}

static void test_transcendental_accuracy(void **state)
{
    (void)state;
    static const acc_case_t cases[] = {
        {"Exp", d_exp, exp, 1.5, 2 * FLT_TRUE_MIN},
        {"Sigmoid", d_sigmoid, ref_sigmoid, 2, FLT_MIN},
        {"Tanh", d_tanh, tanh, 3.5, FLT_TRUE_MIN},
        {"Erf", d_erf, erf, 1, FLT_TRUE_MIN},
    };
    const float special[] = {-INFINITY, INFINITY, NAN, -NAN, 0.0f, -0.0f, FLT_TRUE_MIN,
                             -FLT_TRUE_MIN, 1e-40f, -3e-39f, FLT_MIN, -FLT_MIN, FLT_MAX,
                             -FLT_MAX, 1e-30f, -1e-7f, 88.72283f, 88.72284f, 88.5f,
                             -87.3365f, -87.34f, -103.0f, -104.5f, 3.925f, -3.92f, 9.0f, -9.5f};
    const size_t n_lin = N_LIN, n = 2 * N_LIN + 2 * N_LOG + N(special);
    float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float));
    assert_non_null(x);
    assert_non_null(y);
    size_t m = acc_sweep(x, special, N(special));
    for (size_t i = 0; i < n_lin; i++) /* exp's whole range (others: more of the same) */
        x[m++] = (float)(-104.0 + 193.0 * (double)i / (double)(n_lin - 1));
    for (size_t k = 0; k < N(cases); k++) {
        size_t cnt = k == 0 ? n : n - n_lin;
        op_case_t *c = un_f(cases[k].op, 13, x, (int64_t)cnt);
        RUN_OK(c);
        double e_op = acc_check(&cases[k], "op", x, outf(c, 0), cnt);
        oc_free(c);
        for (size_t i = 0; i < cnt; i++)
            y[i] = cases[k].direct(x[i]);
        double e_direct = acc_check(&cases[k], "direct", x, y, cnt);
        print_message("%-8s max relative error: %.2f eps (op), %.2f eps (direct, no FMA)\n",
                      cases[k].op, e_op, e_direct);
    }
    /* exp overflows where expf does (the old helper gave +inf from 88.37) */
    float big[] = {88.5f, 88.72283f, 88.72284f};
    op_case_t *c = un_f("Exp", 13, big, 3);
    RUN_OK(c);
    assert_true(isfinite(outf(c, 0)[0]) && isfinite(outf(c, 0)[1]) && isinf(outf(c, 0)[2]));
    oc_free(c);
    /* odd functions keep the sign of zero */
    const float mz[] = {-0.0f, 0.0f};
    for (int k = 0; k < 2; k++) {
        c = un_f(k ? "Erf" : "Tanh", 13, mz, 2);
        RUN_OK(c);
        assert_true(outf(c, 0)[0] == 0.0f && signbit(outf(c, 0)[0]));
        assert_true(outf(c, 0)[1] == 0.0f && !signbit(outf(c, 0)[1]));
        oc_free(c);
    }
    free(x);
    free(y);
}

/* Softmax over a long row and along a non-last axis, against double. */
static void test_softmax_accuracy(void **state)
{
    (void)state;
    enum { R = 3, L = 1000 };
    float *x = malloc(R * L * sizeof(float));
    double want[R * L];
    assert_non_null(x);
    for (int i = 0; i < R * L; i++) /* a spread of [-60, 60] with ties */
        x[i] = (float)(60.0 * sin(0.37 * i + 1.0)) * (i % 7 == 0 ? 1.0f : 0.5f);
    for (int r = 0; r < R; r++) {
        double mx = -INFINITY, s = 0;
        for (int i = 0; i < L; i++)
            mx = fmax(mx, x[r * L + i]);
        for (int i = 0; i < L; i++)
            s += exp(x[r * L + i] - mx);
        for (int i = 0; i < L; i++)
            want[r * L + i] = exp(x[r * L + i] - mx) / s;
    }
    for (int axis = 0; axis < 2; axis++) {
        /* axis 1 of [R, L]: rows; axis 0 of the transpose [L, R]: columns */
        float *xt = malloc(R * L * sizeof(float));
        assert_non_null(xt);
        for (int r = 0; r < R; r++)
            for (int i = 0; i < L; i++)
                xt[axis ? r * L + i : i * R + r] = x[r * L + i];
        op_case_t *c = oc_new("Softmax", 13, 1, 1);
        oc_input(c, 0, IPU_DTYPE_FLOAT, 2, axis ? (int64_t[]){R, L} : (int64_t[]){L, R}, xt);
        ipu_node_add_attr_int(oc_node(c), "axis", axis ? -1 : 0);
        RUN_OK(c);
        const float *y = outf(c, 0);
        for (int r = 0; r < R; r++)
            for (int i = 0; i < L; i++) {
                double w = want[r * L + i], g = y[axis ? r * L + i : i * R + r];
                if (!(fabs(g - w) <= 1e-5 * w + 1e-37))
                    fail_msg("softmax axis %d [%d,%d]: got %g, want %g", axis, r, i, g, w);
            }
        oc_free(c);
        free(xt);
    }
    free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_binary_broadcast_both),
        cmocka_unit_test(test_binary_rank0_scalar),
        cmocka_unit_test(test_pow),
        cmocka_unit_test(test_int64_arith),
        cmocka_unit_test(test_int64_compare),
        cmocka_unit_test(test_logic),
        cmocka_unit_test(test_where),
        cmocka_unit_test(test_variadic),
        cmocka_unit_test(test_binary_errors),
        cmocka_unit_test(test_unary_float),
        cmocka_unit_test(test_transcendental_accuracy),
        cmocka_unit_test(test_silu_accuracy),
        cmocka_unit_test(test_softmax_accuracy),
        cmocka_unit_test(test_unary_int),
        cmocka_unit_test(test_clip),
        cmocka_unit_test(test_prelu_dropout),
        cmocka_unit_test(test_cast),
        cmocka_unit_test(test_softmax),
        cmocka_unit_test(test_layernorm),
        cmocka_unit_test(test_batch_instance_norm),
        cmocka_unit_test(test_reduce),
        cmocka_unit_test(test_reduce_int_and_errors),
        cmocka_unit_test(test_argmax),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
