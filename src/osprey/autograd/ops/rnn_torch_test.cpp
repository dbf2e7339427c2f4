// The recurrent ops against PyTorch 1.13 (nn.LSTM, nn.GRU = Keras's reset_after=True, Keras's
// reset_after=False GRU written in torch ops, nn.RNN tanh and relu): outputs, final states and
// the gradients of every input and weight, in float32 (the oneDNN kernels) within 1e-5 relative
// and in float64 (the reference kernels) within 1e-12. rnn_torch_references.py prints the values.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "osprey/autograd/ops/elementwise.h"
#include "osprey/autograd/ops/reduction.h"
#include "osprey/autograd/ops/rnn.h"
#include "osprey/testing/test_helpers.h"

namespace osprey::autograd {
namespace {

using namespace osprey::testing;

// python3 rnn_torch_references.py (torch 1.13.0a0); B=2 T=3 I=3 U=2
// [2, 3, 2]
const std::vector<double> kLstmY = {
    0.17386215109474842, 0.18155749532284635, 0.2787460350900496,  0.2416164093690325,
    0.30154619438924224, 0.24311178693038013, 0.18615642260233084, 0.15753209474976404,
    0.17211676184832622, 0.12670748692615047, 0.21576070293522415, 0.15491254175732516,
};
// [2, 2]
const std::vector<double> kLstmH = {
    0.30154619438924224,
    0.24311178693038013,
    0.21576070293522415,
    0.15491254175732516,
};
// [2, 2]
const std::vector<double> kLstmC = {
    0.6351661486921708,
    0.5574032602885272,
    0.43215106548750787,
    0.32922210398639906,
};
// [2, 3, 3]
const std::vector<double> kLstmDx = {
    0.6904959052149264,  -0.7180695753689165,  0.7220292590277165,   0.7546147136664259,
    -0.7831155904997852, 0.7858634183075902,   0.9280345416438743,   -0.9893640555490677,
    1.0181579625326629,  0.0986415803405077,   -0.09423775080714702, 0.08673487759998387,
    0.15355392318662414, -0.14522126068575383, 0.1321129427243578,   0.5096601596918223,
    -0.5297212235711418, 0.5323622069336147,
};
// [2, 2]
const std::vector<double> kLstmDh0 = {
    0.6626600532247399,
    -0.7041456090022826,
    0.09973642037187445,
    -0.09728702596287231,
};
// [2, 2]
const std::vector<double> kLstmDc0 = {
    1.1217023502556622,
    0.43622564596481345,
    0.27912614042326583,
    -0.11223139991652008,
};
// [3, 8]
const std::vector<double> kLstmDkernel = {
    0.12734813402457643, 0.07729611410268586, 0.0671796399645286,  0.09834669467420835,
    0.2770678763628168,  0.46175702809984404, 0.19032530358873642, 0.11757373927555388,
    0.15338496885158417, 0.0814262206002385,  0.06341732766393653, 0.09602297278686081,
    0.3938834127510186,  0.514877818871687,   0.18084793753267056, 0.0962605107461539,
    0.1586618677059471,  0.07453567012721769, 0.05107177756816357, 0.08070299199694048,
    0.4573886770139897,  0.49831231226028494, 0.14689365152758488, 0.06191887366573176,
};
// [2, 8]
const std::vector<double> kLstmDrecurrent = {
    0.13636854647610785, 0.06195112331324162, 0.1239965834164177,  0.06936883196720747,
    0.6456172277578546,  0.3860524033410587,  0.12395163560600941, 0.021680616206058618,
    0.15996415024182414, 0.06430118979823034, 0.12848395103020618, 0.06821983076452208,
    0.7602943188227662,  0.39535175320948074, 0.13916237916168417, 0.01754048085582504,
};
// [8]
const std::vector<double> kLstmDbias = {
    0.7178749967734765, 0.312124719859747,  0.5626502990133159, 0.34192226273450105,
    3.2746822254338293, 2.0204289388108547, 0.5860540775084467, 0.06787211376869047,
};
// [2, 3, 2]
const std::vector<double> kGruResetAfterY = {
    0.09418962804774544, 0.15309817364515546, 0.12106142928010535, 0.10678597757354502,
    0.1558642032271984,  0.08469953928003013, 0.3271589563563605,  0.30614769867509883,
    0.24892925004433952, 0.17752845097087744, 0.18837757185380977, 0.10332344556340396,
};
// [2, 2]
const std::vector<double> kGruResetAfterH = {
    0.1558642032271984,
    0.08469953928003013,
    0.18837757185380977,
    0.10332344556340396,
};
// [2, 3, 3]
const std::vector<double> kGruResetAfterDx = {
    0.6141461410405759,   -0.6505000235721962,   0.17237639210703995,   0.5417208347819922,
    -0.6223444314574925,  0.21075864405377395,   0.3846843114014229,    -0.45880619123832267,
    0.1700603383757105,   -0.13597578851243977,  0.12749170794425363,   -0.018175014645065886,
    -0.2127709306367342,  0.2163636511171612,    -0.048835342677796496, -0.006613107919547075,
    0.010359805218903484, -0.005912979626064712,
};
// [2, 2]
const std::vector<double> kGruResetAfterDh0 = {
    1.6323520164700842,
    0.5574711839998336,
    -0.28664573866112825,
    -0.34587381332570943,
};
// [3, 6]
const std::vector<double> kGruResetAfterDkernel = {
    -0.012921185478085231, 0.08006520411612522,  -0.08604263000497508,  -0.09806657283719021,
    0.7277272487122565,    0.7314739779721449,   -0.002428471405997814, 0.10909076241080667,
    -0.10415702596445128,  -0.11258155215087513, 0.8517447149177099,    0.8165287050517339,
    0.008392924878417043,  0.12335139778108663,  -0.10817425708233624,  -0.11185914652487527,
    0.8604825296741373,    0.7910701024118866,
};
// [2, 6]
const std::vector<double> kGruResetAfterDrecurrent = {
    -0.020931958194577494, -0.035117575053026207, -0.018316730390028763, 0.0016946491106679786,
    0.07605095545519489,   -0.007383640031134748, -0.01992385196932019,  -0.01817366154062585,
    -0.04371310336881103,  -0.017972570278117737, 0.17909503855460646,   0.059253212799793224,
};
// [2, 6]
const std::vector<double> kGruResetAfterDbias = {
    -0.0934868552153911,  0.02865033119668549,  -0.24821547805556218, -0.17158049791635652,
    1.9702815968331544,   1.2482947769942339,   -0.09348685521539112, 0.028650331196685475,
    -0.24821547805556216, -0.17158049791635652, 1.1060618681833332,   0.6511124837026185,
};
// [2, 3, 2]
const std::vector<double> kGruResetBeforeY = {
    0.196124604770988,   0.25430406632456676, 0.28175300902785205, 0.2645895645356934,
    0.35112004864677254, 0.2772912882527042,  0.41332130807291584, 0.40126000583144844,
    0.39565488231350965, 0.33547613192330206, 0.37365312762828223, 0.2964572429124917,
};
// [2, 2]
const std::vector<double> kGruResetBeforeH = {
    0.35112004864677254,
    0.2772912882527042,
    0.37365312762828223,
    0.2964572429124917,
};
// [2, 3, 3]
const std::vector<double> kGruResetBeforeDx = {
    0.6164160377588834,   -0.6860605523050541,    0.21310289219967254,  0.5219801754505655,
    -0.6030932847490845,  0.2072226544591258,     0.35542074369506305,  -0.4171034462173393,
    0.14890092765849985,  -0.12597725360242276,   0.12924783416043448,  -0.03029688973959587,
    -0.20752094604967877, 0.2132311295390286,     -0.05029778119645587, -0.006494253740253707,
    0.00966149083887823,  -0.0051874987166447275,
};
// [2, 2]
const std::vector<double> kGruResetBeforeDh0 = {
    1.6186035114855084,
    0.47338148612783637,
    -0.2853294339843199,
    -0.33413623274231224,
};
// [3, 6]
const std::vector<double> kGruResetBeforeDkernel = {
    -0.08052575810200359, 0.015443874015255436,  0.029905250719609394, -0.04171227755564639,
    0.6547104667709419,   0.6423577060224992,    -0.09374673113977648, 0.02600755823814649,
    0.03161338475570423,  -0.049681554316898746, 0.7845416352425997,   0.7251323362189642,
    -0.09427952390357718, 0.0330512414604755,    0.029042795470206603, -0.050926665768066065,
    0.8081887738353595,   0.7097637064577598,
};
// [2, 6]
const std::vector<double> kGruResetBeforeDrecurrent = {
    -0.055303871159986,   -0.033328726490931895, 0.0012547412555408634, -0.003889989891076194,
    0.16355791377273982,  0.053641394246108615,  -0.07959605243941686,  -0.032264358402734034,
    0.004454518209280335, -0.012706143606863552, 0.2701303751309638,    0.12378034501360814,
};
// [6]
const std::vector<double> kGruResetBeforeDbias = {
    -0.2970533501258873,  -0.074676537714814, 0.03402764371012756,
    -0.07105822883177026, 1.8179051778853277, 1.0894909283645677,
};
// [2, 3, 2]
const std::vector<double> kSimpleTanhY = {
    0.6432116946727435,   0.7100045685460651,  0.8773654114994127,  0.9263559343996649,
    0.8254627905445197,   0.903439659656659,   0.2635537822303969,  0.4327064786515011,
    0.055186877410963064, 0.16657934054035142, 0.29892566526086595, 0.3689400664946802,
};
// [2, 2]
const std::vector<double> kSimpleTanhH = {
    0.8254627905445197,
    0.903439659656659,
    0.29892566526086595,
    0.3689400664946802,
};
// [2, 3, 3]
const std::vector<double> kSimpleTanhDx = {
    0.30993918300313283,  0.5112135032598636,    0.4450910149076971,  0.12837746149305992,
    0.224989001943429,    0.20391714649728504,   0.20142383418696289, 0.3611029737350485,
    0.33190255094721616,  -0.32870906639492103,  -0.504439193751226,  -0.4163159023574454,
    -0.4178333873285951,  -0.6733123832744173,   -0.5766066631742905, -0.01911010133033609,
    -0.02208357970572081, -0.013505957223411158,
};
// [2, 2]
const std::vector<double> kSimpleTanhDh0 = {
    0.3540315502967836,
    0.5191255618450891,
    -0.3693284376387957,
    -0.508521883839661,
};
// [3, 2]
const std::vector<double> kSimpleTanhDkernel = {
    0.6592974752586833, 0.7455634276906258, 0.7324922898349308,
    0.9152795618798134, 0.7065477092586908, 0.9611169011390953,
};
// [2, 2]
const std::vector<double> kSimpleTanhDrecurrent = {
    0.39645584697081143,
    -0.10253390072212556,
    0.4062761550901898,
    -0.18269531141796438,
};
// [2]
const std::vector<double> kSimpleTanhDbias = {
    0.42343683725574477,
    -0.5967006292320172,
};
// [2, 3, 2]
const std::vector<double> kSimpleReluY = {
    0.7636326662703045,  0.8871930759540964,  1.4808035112216325, 1.7682164702511622,
    1.7358746871544923,  2.1499296968880035,  0.269923641415327,  0.463221866380007,
    0.07156785485996098, 0.18587726275955446, 0.3218915580401386, 0.40332256557919577,
};
// [2, 2]
const std::vector<double> kSimpleReluH = {
    1.7358746871544923,
    2.1499296968880035,
    0.3218915580401386,
    0.40332256557919577,
};
// [2, 3, 3]
const std::vector<double> kSimpleReluDx = {
    1.5724665569723488,    2.536674234228473,    2.174041774462015,   1.2968359319945542,
    2.123169353365049,     1.8389516926420835,   0.8539610463008542,  1.4394871363307584,
    1.2720709354510598,    -0.402939454277975,   -0.6127600999432792, -0.5020686814262483,
    -0.4289011314913652,   -0.6894898237569016,  -0.5894319813255882, -0.022444194046755052,
    -0.026264372641402065, -0.01634663277411095,
};
// [2, 2]
const std::vector<double> kSimpleReluDh0 = {
    1.786895768873427,
    2.5703129327464285,
    -0.4518209871402681,
    -0.6171260678595404,
};
// [3, 2]
const std::vector<double> kSimpleReluDkernel = {
    1.9370548807278951, 2.4019248170044785, 2.206108049326715,
    2.9312348760885856, 2.1765748427698712, 3.0638160457385304,
};
// [2, 2]
const std::vector<double> kSimpleReluDrecurrent = {
    3.749875689022081,
    3.7151148704410737,
    4.672975059233532,
    4.706017068158308,
};
// [2]
const std::vector<double> kSimpleReluDbias = {
    4.815451364595011,
    5.090338284427822,
};

constexpr int64_t kB = 2, kT = 3, kI = 3, kU = 2;

// The inputs of rnn_torch_references.py: sin(0.37 i + 0.11 tag) * scale, row-major.
Tensor wave(const Shape& s, int tag, double scale, DType dtype) {
  std::vector<double> v(static_cast<size_t>(s.numel()));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = std::sin(0.37 * static_cast<double>(i) + 0.11 * tag) * scale;
  return from_vector<double>(v, s).to(dtype);
}

struct Golden {
  const char* name;
  int64_t gates;
  Shape bias;
  RnnCell cell;
  RnnOptions options;
  const std::vector<double>*y, *h, *c, *dx, *dh0, *dc0, *dkernel, *drecurrent, *dbias;
};

std::vector<Golden> goldens() {
  return {
      {"lstm",
       4,
       {4 * kU},
       RnnCell::lstm,
       {},
       &kLstmY,
       &kLstmH,
       &kLstmC,
       &kLstmDx,
       &kLstmDh0,
       &kLstmDc0,
       &kLstmDkernel,
       &kLstmDrecurrent,
       &kLstmDbias},
      {"gru reset_after",
       3,
       {2, 3 * kU},
       RnnCell::gru,
       {},
       &kGruResetAfterY,
       &kGruResetAfterH,
       nullptr,
       &kGruResetAfterDx,
       &kGruResetAfterDh0,
       nullptr,
       &kGruResetAfterDkernel,
       &kGruResetAfterDrecurrent,
       &kGruResetAfterDbias},
      {"gru",
       3,
       {3 * kU},
       RnnCell::gru,
       {.reset_after = false},
       &kGruResetBeforeY,
       &kGruResetBeforeH,
       nullptr,
       &kGruResetBeforeDx,
       &kGruResetBeforeDh0,
       nullptr,
       &kGruResetBeforeDkernel,
       &kGruResetBeforeDrecurrent,
       &kGruResetBeforeDbias},
      {"simple_rnn tanh",
       1,
       {kU},
       RnnCell::simple_rnn,
       {},
       &kSimpleTanhY,
       &kSimpleTanhH,
       nullptr,
       &kSimpleTanhDx,
       &kSimpleTanhDh0,
       nullptr,
       &kSimpleTanhDkernel,
       &kSimpleTanhDrecurrent,
       &kSimpleTanhDbias},
      {"simple_rnn relu",
       1,
       {kU},
       RnnCell::simple_rnn,
       {.activation = Activation::relu},
       &kSimpleReluY,
       &kSimpleReluH,
       nullptr,
       &kSimpleReluDx,
       &kSimpleReluDh0,
       nullptr,
       &kSimpleReluDkernel,
       &kSimpleReluDrecurrent,
       &kSimpleReluDbias},
  };
}

void expect_close(const Tensor& got, const std::vector<double>& want, double rtol, double atol,
                  const char* what) {
  const std::vector<double> g = values(got);
  ASSERT_EQ(g.size(), want.size()) << what;
  for (size_t i = 0; i < g.size(); ++i) {
    EXPECT_LE(std::abs(g[i] - want[i]), atol + rtol * std::abs(want[i]))
        << what << " element " << i << ": " << g[i] << " vs " << want[i];
  }
}

void check_against_torch(DType dtype, double rtol, double atol) {
  for (const Golden& c : goldens()) {
    SCOPED_TRACE(std::string(c.name) + " " + std::string(dtype_name(dtype)));
    const bool lstm_cell = c.cell == RnnCell::lstm;
    Variable x(wave({kB, kT, kI}, 1, 0.5, dtype), true), h0(wave({kB, kU}, 2, 0.5, dtype), true);
    Variable c0 = lstm_cell ? Variable(wave({kB, kU}, 3, 0.5, dtype), true) : Variable();
    Variable k(wave({kI, c.gates * kU}, 4, 0.5, dtype), true);
    Variable r(wave({kU, c.gates * kU}, 5, 0.5, dtype), true);
    Variable b(wave(c.bias, 6, 0.5, dtype), true);
    RnnOutputs o = lstm_cell                ? lstm(x, h0, c0, k, r, b, c.options)
                   : c.cell == RnnCell::gru ? gru(x, h0, k, r, b, c.options)
                                            : simple_rnn(x, h0, k, r, b, c.options);
    Variable loss = add(sum(mul(o.outputs, Variable(wave({kB, kT, kU}, 7, 1.0, dtype)))),
                        sum(mul(o.h, Variable(wave({kB, kU}, 8, 1.0, dtype)))));
    if (lstm_cell) loss = add(loss, sum(mul(o.c, Variable(wave({kB, kU}, 9, 1.0, dtype)))));
    loss.backward();
    expect_close(o.outputs.value(), *c.y, rtol, atol, "outputs");
    expect_close(o.h.value(), *c.h, rtol, atol, "h");
    if (lstm_cell) expect_close(o.c.value(), *c.c, rtol, atol, "c");
    expect_close(x.grad(), *c.dx, rtol, atol, "dx");
    expect_close(h0.grad(), *c.dh0, rtol, atol, "dh0");
    if (lstm_cell) expect_close(c0.grad(), *c.dc0, rtol, atol, "dc0");
    expect_close(k.grad(), *c.dkernel, rtol, atol, "dkernel");
    expect_close(r.grad(), *c.drecurrent, rtol, atol, "drecurrent_kernel");
    expect_close(b.grad(), *c.dbias, rtol, atol, "dbias");
  }
}

TEST(RnnTorchTest, Float32OutputsAndGradientsMatchPyTorch) {
  check_against_torch(DType::float32, 1e-5, 1e-7);
}

TEST(RnnTorchTest, Float64ReferenceOutputsAndGradientsMatchPyTorch) {
  check_against_torch(DType::float64, 1e-12, 1e-14);
}

}  // namespace
}  // namespace osprey::autograd
