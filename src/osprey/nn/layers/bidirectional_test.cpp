// Bidirectional: values and gradients against PyTorch 1.13's nn.LSTM and nn.GRU with
// bidirectional=True (torch_references_bidirectional.py prints the constants), each merge mode
// against the two directions composed by hand, weight names, configs and the errors.
#include "osprey/nn/layers/bidirectional.h"

#include <gtest/gtest.h>

#include <cmath>

#include "osprey/autograd/ops.h"
#include "osprey/nn/layer_registry.h"
#include "osprey/nn/layers/dense.h"
#include "osprey/nn/layers/layer_test_helpers.h"
#include "osprey/testing/layer_conformance.h"

namespace osprey::nn {
namespace {

using test::wave;

// python3 torch_references_bidirectional.py (torch 1.13.0a0); B=2 T=4 I=3 U=2
// [2, 4, 4]
const std::vector<double> kLstmY = {
    0.1483601037689359,   0.11274487723026892, -0.002719504512376757,  -0.10470596266168633,
    0.2682464929311851,   0.20579737903505185, -0.011127759891153846,  -0.09757583107765239,
    0.2985741272199276,   0.22459160636929176, -0.02678853780382542,   -0.08357296410778449,
    0.25635331457656646,  0.18191534340036392, -0.027425473215567354,  -0.05461513097969418,
    0.061077944958335635, 0.03338275856471478, -0.025289477925980602,  -0.09808100592316338,
    0.14665561669430516,  0.0976141224347878,  -0.003476980159703024,  -0.0928564892208724,
    0.25905337113044186,  0.1903052425945644,  0.005551341601626828,   -0.08078292862672305,
    0.3265645699307874,   0.24620510188212308, -0.0009518097349366886, -0.05549406776282273,
};
// [2, 2, 2]
const std::vector<double> kLstmH = {
    0.25635331457656646,   0.18191534340036392,  0.3265645699307874,    0.24620510188212308,
    -0.002719504512376757, -0.10470596266168633, -0.025289477925980602, -0.09808100592316338,
};
// [2, 2, 2]
const std::vector<double> kLstmC = {
    0.5579220845403022,     0.412239463958388,   0.6696915499970217,    0.548403663241811,
    -0.0068089838773584665, -0.2945631909481078, -0.059577840733090144, -0.24199883250499438,
};
// [2, 4, 3]
const std::vector<double> kLstmDx = {
    0.05206014600495725,  -0.06403611604654276, 0.07390623446678554,  -0.21677407055889772,
    0.2656733342327249,   -0.305835830966551,   -0.12578961003251155, 0.17333583221070906,
    -0.21518184073084506, 0.13020375012364638,  -0.1661796720048573,  0.1966907132322935,
    0.09644486410165332,  -0.12182301375437792, 0.1431949680462681,   -0.20797353285688222,
    0.24400762893196784,  -0.272017442887368,   -0.20920864180571663, 0.26651076218043146,
    -0.3150485764839438,  0.0388224297239921,   -0.05317039919826659, 0.06576984021279311,
};
// [3, 8]
const std::vector<double> kLstmForwardDkernel = {
    -0.03993594668474826, -0.02152180819204729, -0.02634964436626142, -0.01478328729339324,
    -0.1239327538309909,  -0.16193531459516988, -0.10812127809785514, -0.07652339871602784,
    -0.05379941980677203, -0.02944738877684107, -0.0327751278199837,  -0.021712329239951984,
    -0.18648395763466108, -0.2259926645531452,  -0.11449228817513434, -0.08402870841265973,
    -0.0603813938424367,  -0.03338740343463503, -0.03476465147834638, -0.025702709281024187,
    -0.22379543260827256, -0.25946296754336773, -0.10536730415551317, -0.08016112662212915,
};
// [2, 8]
const std::vector<double> kLstmForwardDrecurrent = {
    -0.022762306010548503, -0.008047948921259188, -0.009471032265422018,  0.0032179221222649068,
    -0.07018324312586491,  -0.02260434081123769,  -0.044471833286637355,  -0.018874377311489277,
    -0.01605275683313503,  -0.005534089166716521, -0.0067354555762247775, 0.0025383091350178687,
    -0.048250117274031806, -0.0134224871408509,   -0.03224746898140679,   -0.013546763961788303,
};
// [8]
const std::vector<double> kLstmForwardDbias = {
    -0.15936939351203272, -0.06026026925802991, -0.0716396155180102,  -0.010416976802668525,
    -0.5338453229396526,  -0.1877786655514266,  -0.21027701911670885, -0.09642470365939661,
};
// [3, 8]
const std::vector<double> kLstmBackwardDkernel = {
    0.0030343636189480543, 0.012700092869262181, 0.004806061509088172, 0.011729791417382241,
    -0.2651840265043189,   -0.13481829101080986, 0.009952055776628943, 0.013196620808393456,
    0.0032249096732030517, 0.01954831129677501,  0.003975760642383908, 0.01672759533195692,
    -0.3053696463540719,   -0.21524437315650752, 0.011558850429747134, 0.03541192833686172,
    0.0029789793319251958, 0.023750757495543232, 0.00260735922386929,  0.01946139769104834,
    -0.30422491712357164,  -0.26653813915247304, 0.011601208902217691, 0.05283439748980134,
};
// [2, 8]
const std::vector<double> kLstmBackwardDrecurrent = {
    -3.404580681927172e-05, -0.0007762943678182667, -0.0002802168829691912,  -0.0006624749996498468,
    0.010147258978792418,   0.008426228791461609,   -0.000291905401651992,   -0.0015159381188523317,
    0.00038679283721219004, -0.004135922604772753,  -0.0005761669234853519,  -0.0041347540525104535,
    0.03672239276185492,    0.04917450528026478,    -0.00011503008005804273, -0.010876430385868802,
};
// [8]
const std::vector<double> kLstmBackwardDbias = {
    -0.00842516136530806, 0.03443836185349747, 0.008946730608107245,  0.05612799998913833,
    -0.4964279819466833,  -0.4548905556846619, -0.011504808660862915, 0.07286091686866156,
};
// [2, 4, 4]
const std::vector<double> kGruY = {
    0.04743304187973789,  0.013788998594172854,   -0.12744630746168933, -0.21609551489688067,
    0.1021505969663754,   0.033424160741298836,   -0.16042418741780942, -0.2658213146175692,
    0.14904936949537356,  0.04374130283435372,    -0.17434859820978574, -0.27742013476909816,
    0.1696954100013099,   0.039848992075945645,   -0.1263777387439273,  -0.19655869956034,
    0.046416508814907706, -0.0001216366827683706, -0.15105711729041543, -0.23304194412246007,
    0.06795429839363236,  0.006384752016003421,   -0.1136066321185777,  -0.1850683673292352,
    0.09979085300476069,  0.024702752506656253,   -0.1088294985673368,  -0.18458379368859068,
    0.14329415951361463,  0.04205879259796083,    -0.09862777235510618, -0.1643459880463397,
};
// [2, 2, 2]
const std::vector<double> kGruH = {
    0.1696954100013099,   0.039848992075945645, 0.14329415951361463,  0.04205879259796083,
    -0.12744630746168933, -0.21609551489688067, -0.15105711729041543, -0.23304194412246007,
};
// [2, 4, 3]
const std::vector<double> kGruDx = {
    0.05610078386881051, -0.06800687517381601, 0.026126637798956697, -0.20224225684512565,
    0.6241950447210727,  -0.5524748068933352,  -0.1298921254397161,  0.346667407145263,
    -0.2892650111431493, 0.13927152148007224,  -0.38006953325395165, 0.3202722774971352,
    0.12849967698893575, -0.2880312699744909,  0.21976023980862053,  -0.1997981786650903,
    0.5371755105770623,  -0.44970317108704133, -0.22756767510321269, 0.5794972371917997,
    -0.4731050665289836, 0.03662173838562911,  -0.20939575303758148, 0.21655961771188137,
};
// [3, 6]
const std::vector<double> kGruForwardDkernel = {
    0.02868097627164891,  0.00462465546940829,  0.03533490530282151,  0.032260422295373195,
    -0.323216350417457,   -0.2636482102410703,  0.031495463854852045, 0.005813586751493006,
    0.04703709616844238,  0.046816112760198036, -0.4297086262563333,  -0.3860642460302656,
    0.030047188157201123, 0.006215676339531472, 0.052373036728657785, 0.05503546198724325,
    -0.4780418553857086,  -0.4562282972285148,
};
// [2, 6]
const std::vector<double> kGruForwardDrecurrent = {
    0.004502394127135436,  0.0012550896312131955,  0.007193990352311112,   0.0022322793915378076,
    -0.0360982345287983,   -0.007520164133214647,  0.0009821315005537775,  0.00025173676115717696,
    0.0010481435664720122, -0.0002716921800926641, -0.0054063163374637214, 0.0016781099680484302,
};
// [2, 6]
const std::vector<double> kGruForwardDbias = {
    0.062094090968812,   0.020047329624274222, 0.11179279389809402, 0.056812325626480406,
    -1.0214251530243004, -0.4681395256755238,  0.06209409096881202, 0.020047329624274225,
    0.11179279389809403, 0.0568123256264804,   -0.571537048075675,  -0.23799635588556184,
};
// [3, 6]
const std::vector<double> kGruBackwardDkernel = {
    -0.008825095520277295, 0.00692826068177699,  0.028389058835735944,  0.004235713546413907,
    -0.416433569981421,    -0.2108425976449026,  -0.012691049061664359, -0.005950365301913514,
    0.035387558836239785,  0.012580474368752776, -0.5011425767345694,   -0.409058019506376,
    -0.014839328648957673, -0.01802363725641553, 0.03759651875880166,   0.019222527002954144,
    -0.518024286692798,    -0.5519093574055793,
};
// [2, 6]
const std::vector<double> kGruBackwardDrecurrent = {
    0.0014689745077646607, 0.0008476300878785198, -0.009361723938130789, -0.006557646712364508,
    0.06357325124747257,   0.08879470463725944,   0.0022830911826533995, 0.001255693059146289,
    -0.015096205665397,    -0.010713433944425942, 0.10229234206812811,   0.14461930778856263,
};
// [2, 6]
const std::vector<double> kGruBackwardDbias = {
    0.031748936168844256, 0.12492656430625515,  0.0473161595382808,  0.016806860250187558,
    -0.7515530715545139,  -0.8565955626402634,  0.03174893616884425, 0.12492656430625515,
    0.04731615953828079,  0.016806860250187558, -0.3591527255001599, -0.39894849181013703,
};

constexpr int64_t kB = 2, kT = 4, kI = 3, kU = 2;

void expect_close(const Tensor& got, const std::vector<double>& want, double rtol, double atol,
                  const char* what) {
  const std::vector<double> g = got.to(DType::float64).to_vector<double>();
  ASSERT_EQ(g.size(), want.size()) << what;
  for (size_t i = 0; i < g.size(); ++i) {
    EXPECT_LE(std::abs(g[i] - want[i]), atol + rtol * std::abs(want[i]))
        << what << " element " << i << ": " << g[i] << " vs " << want[i];
  }
}

// The first n or the last values of v.
std::vector<double> head(const std::vector<double>& v, size_t n) {
  return {v.begin(), v.begin() + n};
}
std::vector<double> tail(const std::vector<double>& v, size_t n) { return {v.end() - n, v.end()}; }

struct Golden {
  const std::vector<double>*y, *h, *c, *dx;
  const std::vector<double>* d[2][3];  // [forward, backward][kernel, recurrent, bias]
};

// A Bidirectional over `rnn` with the reference script's weights: direction d's kernel has
// tag 4 + 10 d, its recurrent kernel 5 + 10 d and its bias 6 + 10 d.
void load_weights(Bidirectional& bi) {
  bi.build({{kB, kT, kI}});
  int d = 0;
  for (Recurrent* rnn : {bi.forward_layer().get(), bi.backward_layer().get()}) {
    test::set_weight(*rnn, "kernel", wave(rnn->kernel().shape(), 4 + 10 * d, 0.5));
    test::set_weight(*rnn, "recurrent_kernel",
                     wave(rnn->recurrent_kernel().shape(), 5 + 10 * d, 0.5));
    test::set_weight(*rnn, "bias", wave(rnn->bias().shape(), 6 + 10 * d, 0.5));
    ++d;
  }
}

void check_against_torch(const std::shared_ptr<Layer>& rnn, const Golden& want, DType dtype,
                         double rtol, double atol) {
  auto bi = layers::Bidirectional(rnn, {.dtype = std::string(dtype_name(dtype))});
  load_weights(*bi);
  Variable x(wave({kB, kT, kI}, 1, 0.5).to(dtype), true);
  const BidirectionalOutputs out = bi->call_with_state(x);
  autograd::sum(autograd::mul(out.output, Variable(wave({kB, kT, 2 * kU}, 20).to(dtype))))
      .backward();
  expect_close(out.output.value(), *want.y, rtol, atol, "y");
  const size_t n = kB * kU;
  const bool lstm = want.c != nullptr;
  ASSERT_EQ(out.states.size(), lstm ? 4u : 2u);
  expect_close(out.states[0].value(), head(*want.h, n), rtol, atol, "forward h");
  expect_close(out.states[lstm ? 2 : 1].value(), tail(*want.h, n), rtol, atol, "backward h");
  if (lstm) {
    expect_close(out.states[1].value(), head(*want.c, n), rtol, atol, "forward c");
    expect_close(out.states[3].value(), tail(*want.c, n), rtol, atol, "backward c");
  }
  expect_close(x.grad(), *want.dx, rtol, atol, "dx");
  int d = 0;
  for (Recurrent* r : {bi->forward_layer().get(), bi->backward_layer().get()}) {
    SCOPED_TRACE(d == 0 ? "forward" : "backward");
    expect_close(r->kernel().grad(), *want.d[d][0], rtol, atol, "dkernel");
    expect_close(r->recurrent_kernel().grad(), *want.d[d][1], rtol, atol, "drecurrent_kernel");
    expect_close(r->bias().grad(), *want.d[d][2], rtol, atol, "dbias");
    ++d;
  }
}

const Golden kLstm{&kLstmY,
                   &kLstmH,
                   &kLstmC,
                   &kLstmDx,
                   {{&kLstmForwardDkernel, &kLstmForwardDrecurrent, &kLstmForwardDbias},
                    {&kLstmBackwardDkernel, &kLstmBackwardDrecurrent, &kLstmBackwardDbias}}};
const Golden kGru{&kGruY,
                  &kGruH,
                  nullptr,
                  &kGruDx,
                  {{&kGruForwardDkernel, &kGruForwardDrecurrent, &kGruForwardDbias},
                   {&kGruBackwardDkernel, &kGruBackwardDrecurrent, &kGruBackwardDbias}}};

TEST(BidirectionalTest, Float32LstmAndGruMatchPyTorchBidirectional) {
  check_against_torch(layers::LSTM(kU, {.return_sequences = true, .dtype = "float32"}), kLstm,
                      DType::float32, 1e-5, 1e-7);
  check_against_torch(layers::GRU(kU, {.return_sequences = true, .dtype = "float32"}), kGru,
                      DType::float32, 1e-5, 1e-7);
}

TEST(BidirectionalTest, Float64LstmAndGruMatchPyTorchBidirectional) {
  check_against_torch(layers::LSTM(kU, {.return_sequences = true, .dtype = "float64"}), kLstm,
                      DType::float64, 1e-12, 1e-14);
  check_against_torch(layers::GRU(kU, {.return_sequences = true, .dtype = "float64"}), kGru,
                      DType::float64, 1e-12, 1e-14);
}

// Without return_sequences the output is the forward layer's final state then the backward
// layer's, PyTorch's h_n[0] and h_n[1].
TEST(BidirectionalTest, TheLastStepIsBothFinalStates) {
  auto bi = layers::Bidirectional(layers::LSTM(kU, {.dtype = "float64"}), {.dtype = "float64"});
  load_weights(*bi);
  const Variable y = bi(Variable(wave({kB, kT, kI}, 1, 0.5)));
  ASSERT_EQ(y.shape(), (Shape{kB, 2 * kU}));
  const std::vector<double> got = y.value().to_vector<double>();
  for (int64_t b = 0; b < kB; ++b) {
    for (int64_t u = 0; u < kU; ++u) {
      EXPECT_NEAR(got[b * 2 * kU + u], kLstmH[b * kU + u], 1e-12);
      EXPECT_NEAR(got[b * 2 * kU + kU + u], kLstmH[kB * kU + b * kU + u], 1e-12);
    }
  }
}

// Each merge mode against the two directions composed by hand from the ops: the backward
// direction is the forward op over the time-reversed input, its outputs reversed back.
TEST(BidirectionalTest, EachMergeModeIsTheHandComposition) {
  const Variable x(wave({kB, kT, kI}, 2, 0.7));
  for (const char* mode : {"concat", "sum", "mul", "ave"}) {
    SCOPED_TRACE(mode);
    auto bi = layers::Bidirectional(layers::GRU(3, {.return_sequences = true, .dtype = "float64"}),
                                    {.merge_mode = mode, .dtype = "float64"});
    const Variable y = bi(x);
    const Recurrent &f = *bi->forward_layer(), &b = *bi->backward_layer();
    const Variable fy = autograd::gru(x, {}, f.kernel(), f.recurrent_kernel(), f.bias()).outputs;
    const Variable by = autograd::flip(
        autograd::gru(autograd::flip(x, 1), {}, b.kernel(), b.recurrent_kernel(), b.bias()).outputs,
        1);
    const std::string m = mode;
    const Variable want = m == "concat" ? autograd::concat({fy, by}, 2)
                          : m == "sum"  ? autograd::add(fy, by)
                          : m == "mul"  ? autograd::mul(fy, by)
                                        : autograd::div(autograd::add(fy, by), 2.0);
    EXPECT_EQ(y.shape(), want.shape());
    test::expect_values_near(y.value(), want.value().to_vector<double>(), 1e-12);
    EXPECT_EQ(bi->compute_output_shape({{-1, kT, kI}}), (Shape{-1, kT, m == "concat" ? 6 : 3}));
  }
  // merge_mode none: the two directions apart; a layer call (one output) is refused.
  auto none =
      layers::Bidirectional(layers::GRU(3, {.return_sequences = true, .dtype = "float64"}),
                            {.merge_mode = std::nullopt, .name = "bi_none", .dtype = "float64"});
  const BidirectionalOutputs both = none->call_with_state(x);
  EXPECT_FALSE(both.output.defined());
  EXPECT_EQ(both.forward.shape(), (Shape{kB, kT, 3}));
  EXPECT_EQ(both.backward.shape(), (Shape{kB, kT, 3}));
  EXPECT_EQ(test::value_error([&] { none(x); }),
            "bi_none: merge_mode none gives two outputs, which a layer call cannot return; use "
            "call_multi() or call_with_state()");
  // call_multi gives the two apart, as Keras's list.
  const std::vector<Variable> two = none->call_multi({x});
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0].value().to_vector<double>(), both.forward.value().to_vector<double>());
  EXPECT_EQ(two[1].value().to_vector<double>(), both.backward.value().to_vector<double>());
}

TEST(BidirectionalTest, WeightsAreNamedAsKerasNamesThem) {
  auto bi = layers::Bidirectional(layers::LSTM(4, {.name = "lstm"}), {.name = "bidirectional"});
  bi->build({{2, 5, 3}});
  std::vector<std::string> names;
  for (const Variable& v : bi->variables()) names.push_back(v.name());
  EXPECT_EQ(
      names,
      (std::vector<std::string>{
          "bidirectional/forward_lstm/kernel", "bidirectional/forward_lstm/recurrent_kernel",
          "bidirectional/forward_lstm/bias", "bidirectional/backward_lstm/kernel",
          "bidirectional/backward_lstm/recurrent_kernel", "bidirectional/backward_lstm/bias"}));
  EXPECT_FALSE(bi->forward_layer()->options().go_backwards);
  EXPECT_TRUE(bi->backward_layer()->options().go_backwards);
  bi->set_path_prefix("sequential");
  EXPECT_EQ(bi->backward_layer()->kernel().name(), "sequential/bidirectional/backward_lstm/kernel");
  EXPECT_EQ(bi->count_params(), 2 * (3 * 16 + 4 * 16 + 16));
}

TEST(BidirectionalTest, ConfigsRoundTripAsKeras) {
  auto bi = layers::Bidirectional(layers::GRU(4, {.return_sequences = true, .name = "gru"}),
                                  {.merge_mode = "ave", .name = "bi"});
  const nlohmann::json c = bi->get_config();
  EXPECT_EQ(c["merge_mode"], "ave");
  EXPECT_EQ(c["layer"]["class_name"], "GRU");
  EXPECT_EQ(c["layer"]["config"]["name"], "forward_gru");
  EXPECT_EQ(c["backward_layer"]["config"]["name"], "backward_gru");
  EXPECT_EQ(c["backward_layer"]["config"]["go_backwards"], true);
  const auto back = std::dynamic_pointer_cast<Bidirectional>(layer_from_config("Bidirectional", c));
  ASSERT_NE(back, nullptr);
  EXPECT_EQ(back->get_config(), c);  // forward_gru stays forward_gru
  EXPECT_EQ(back->merge_mode(), std::optional<std::string>("ave"));
  nlohmann::json none = c;
  none["merge_mode"] = nullptr;
  none.erase("backward_layer");  // Keras: then a copy of the layer, go_backwards flipped
  const auto copy =
      std::dynamic_pointer_cast<Bidirectional>(layer_from_config("Bidirectional", none));
  EXPECT_FALSE(copy->merge_mode().has_value());
  EXPECT_EQ(copy->get_config()["merge_mode"], nullptr);
  // As Keras names it: "backward_" before the saved forward layer's name.
  EXPECT_EQ(copy->backward_layer()->name(), "backward_forward_gru");
  EXPECT_TRUE(copy->backward_layer()->options().go_backwards);
  OSPREY_EXPECT_LAYER_CONFORMANCE(
      [] {
        return layers::Bidirectional(
            layers::LSTM(3, {.return_sequences = true, .dtype = "float64"}), {.dtype = "float64"});
      },
      Shape{2, 4, 2}, {.output_shape = {2, 4, 6}, .params = 2 * (2 * 12 + 3 * 12 + 12)});
  OSPREY_EXPECT_LAYER_CONFORMANCE(
      [] {
        return layers::Bidirectional(layers::SimpleRNN(3, {.dtype = "float64"}),
                                     {.merge_mode = "sum", .dtype = "float64"});
      },
      Shape{2, 4, 2}, {.output_shape = {2, 3}, .params = 2 * (2 * 3 + 3 * 3 + 3)});
}

TEST(BidirectionalTest, WhatIsNotAnRnnOrDoesNotPairIsRefused) {
  auto dense = layers::Dense(3, {}, {.name = "d"});
  EXPECT_EQ(test::value_error([&] { layers::Bidirectional(dense, {.name = "bi"}); }),
            "bi: layer must be a recurrent layer (LSTM, GRU or SimpleRNN). Received: Dense 'd'");
  EXPECT_EQ(test::value_error([] {
              layers::Bidirectional(layers::LSTM(3), {.merge_mode = "max", .name = "bi"});
            }),
            "bi: merge_mode must be one of 'concat', 'sum', 'mul', 'ave' or none. Received: "
            "merge_mode='max'");
  EXPECT_EQ(test::value_error([] {
              layers::Bidirectional(layers::LSTM(3),
                                    {.backward_layer = layers::LSTM(3), .name = "bi"});
            }),
            "bi: the forward and backward layers must have different go_backwards. Received: "
            "forward go_backwards=false, backward go_backwards=false");
  EXPECT_EQ(test::value_error([] {
              layers::Bidirectional(layers::LSTM(3),
                                    {.backward_layer = layers::LSTM(
                                         3, {.return_sequences = true, .go_backwards = true}),
                                     .name = "bi"});
            }),
            "bi: the forward and backward layers must have the same return_sequences and "
            "stateful. Received: forward false/false, backward true/false");
  // A given backward layer is used as it is (Keras), a GRU beside an LSTM included.
  auto mixed = layers::Bidirectional(
      layers::LSTM(3, {.dtype = "float64"}),
      {.backward_layer = layers::GRU(2, {.go_backwards = true, .dtype = "float64"}),
       .dtype = "float64"});
  EXPECT_EQ(mixed(Variable(wave({2, 4, 3}, 1))).shape(), (Shape{2, 5}));
}

// stateful layers stay stateful in both directions; reset_states() resets both.
TEST(BidirectionalTest, StatefulDirectionsKeepTheirStates) {
  auto bi = layers::Bidirectional(layers::GRU(2, {.stateful = true, .dtype = "float64"}),
                                  {.dtype = "float64"});
  const Variable x(wave({2, 3, 2}, 5));
  const std::vector<double> first = bi(x).value().to_vector<double>();
  EXPECT_NE(bi(x).value().to_vector<double>(), first);  // started from the kept states
  bi->reset_states();
  EXPECT_EQ(bi(x).value().to_vector<double>(), first);
}

}  // namespace
}  // namespace osprey::nn
