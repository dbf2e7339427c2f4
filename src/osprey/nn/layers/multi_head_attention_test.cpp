#include "osprey/nn/layers/multi_head_attention.h"

#include <gtest/gtest.h>

#include "osprey/autograd/ops.h"
#include "osprey/nn/layer_registry.h"
#include "osprey/nn/layers/layer_test_helpers.h"
#include "osprey/tensor/factory.h"
#include "osprey/tensor/ops.h"
#include "osprey/testing/layer_conformance.h"

namespace osprey::nn {
namespace {

using test::wave;

// PyTorch 1.13's nn.MultiheadAttention (float64) with this layer's weights, printed by
// torch_references_attention.py.
// [2, 3, 8]
const std::vector<double> kMhaCross = {
    0.09548172360929016, 0.11008812615518647,  0.1097946172727244,    0.09464092201223265,
    0.06667802193802079, 0.029690564395239087, -0.011315371753704248, -0.05078982541859216,
    0.09561651061178911, 0.11026099019381266,  0.10998216201079164,   0.09481776414925568,
    0.0668202267203575,  0.029778885072713014, -0.011292888970458185, -0.050836223468814806,
    0.09540703163013094, 0.10999693816906833,  0.10969927514578626,   0.09455432985408545,
    0.06661189959104757, 0.02965386120890873,  -0.011317688175304364, -0.05075744155866529,
    0.09634117149786879, 0.11003852251734397,  0.10884267572814166,   0.09291548338320921,
    0.06441261624859641, 0.027191803677978903, -0.013709291957935563, -0.05275489924053919,
    0.09509172491031193, 0.10829101844112496,  0.10683363064206451,   0.09091681211481793,
    0.062694829577877,   0.02598739597231166,  -0.014237309765720532, -0.05253506241720171,
    0.0965078278537317,  0.11026271855805983,  0.10909406757135076,   0.09316004632226563,
    0.06461724983699549, 0.02732881171951037,  -0.013658452858959204, -0.052797109917667395,
};
// [2, 3, 8]
const std::vector<double> kMhaCrossDquery = {
    0.0005865059771790193,  -0.000871836947192554,  0.0011284972331899392,  -0.0013480464656926603,
    0.0015232646860933855,  -0.0016483897776945384, 0.0017193069550705386,  -0.0017336840803251817,
    -0.0005680789697603279, 0.0008825706820396515,  -0.001168038727418692,  0.0014150953824795267,
    -0.0016156160967380944, 0.0017630066715248922,  -0.0018524201126740027, 0.0018809160257386996,
    0.0005314752072164807,  -0.0008647868642726033, 0.0011696596819256507,  -0.0014360678035654037,
    0.0016552502984932217,  -0.0018199992684040567, 0.0019248968818174781,  -0.0019664935414918203,
    -0.001705582977529294,  0.0033684792656657287,  -0.0049206018535686005, 0.00631090860954644,
    -0.007493678776048751,  0.0084300165138745,     -0.00908913000638865,   0.009449344059926281,
    0.0018363464856624779,  -0.003587831026895627,  0.005221328403204528,   -0.006683120442552343,
    0.007925135567114319,   -0.008906529645090047,  0.009595029165250653,   -0.009967992563423683,
    -0.0012136690148954095, 0.0028588553673303046,  -0.004410027191993073,  0.005816173623396918,
    -0.007031053010342,     0.008014713589906358,   -0.008734807316108857,  0.009167653637497275,
};
// [2, 5, 8]
const std::vector<double> kMhaCrossDvalue = {
    0.023401564086943005,  -0.016279337946829477, 0.00862175969096902,   -0.000680651643719522,
    -0.007282839887351044, 0.015006832505439395,  -0.022237319825051796, 0.028736524566971882,
    0.0221342595860029,    -0.015068421438130633, 0.007507052616700421,  0.0003011884371568873,
    -0.008099524796634224, 0.015631505254502954,  -0.022649437816957673, 0.028922535147452137,
    0.024645712795506213,  -0.017596601040388384, 0.009968818480125144,  -0.0020132075964830833,
    -0.006008608371771964, 0.01383282900691054,   -0.021202151887619758, 0.0278742340753415,
    0.02094002886048499,   -0.013798257414865999, 0.00620272511454907,   0.00159678612055693,
    -0.009343786446998922, 0.01678351286219085,   -0.023671307181017436, 0.029780661711737037,
    0.025672427506769603,  -0.018691605118177034, 0.0110961023058839,    -0.0031357000200744165,
    -0.004927820933433688, 0.012829288652876072,  -0.020308860417687355, 0.02712056771353015,
    -0.03273880155110865,  0.023502969099193062,  -0.013494232719938163, 0.0030417334517632436,
    0.0075107943583744285, -0.017816326887510704, 0.027535962844856855,  -0.03635006836747229,
    -0.017012522910676425, 0.007650538146018821,  0.0019630374263518275, -0.011512057778914151,
    0.02068249980669024,   -0.029172790094475144, 0.03670372227136395,   -0.04302763881666292,
    -0.03429211891666477,  0.025113201154840416,  -0.015108426382409503, 0.004606805358869551,
    0.0060463121815287745, -0.016500594484928018, 0.0264122485685905,    -0.03545532598168998,
    -0.01621032774836131,  0.006817746062370302,  0.002799039752255353,  -0.012323778097977352,
    0.021443244392692528,  -0.029857541577239084, 0.03728996234232839,   -0.04349608875188026,
    -0.034583446804495724, 0.025438830046350516,  -0.015457647849738389, 0.004968135123479036,
    0.005684756584060626,  -0.016150702945621164, 0.02608552740155068,   -0.03516251953466679,
};
// [8, 2, 4]
const std::vector<double> kMhaCrossDqueryKernel = {
    -0.0029818283068493733, 0.006739730122656866,  0.015549097697564771,  0.022253967843222006,
    -0.019922506000206914,  -0.020043896901141903, -0.01745244038667842,  -0.012498877938976975,
    -0.000514685595712117,  0.002484983366161181,  0.0051483214870085316, 0.007114858446457139,
    -0.006238424517691729,  -0.006177505938028656, -0.00528049090964382,  -0.003668786208541386,
    0.0020221173963054957,  -0.002106094231360462, -0.005949255884946416, -0.008987213663725888,
    0.008289998457520644,   0.008524981473806356,  0.0076061482401083855, 0.005657858524166141,
    0.004285236284914696,   -0.006412121854802147, -0.016241629382094887, -0.02387290856544884,
    0.021696409031648427,   0.02207365263565767,   0.019463330907616355,  0.014218738647841981,
    0.00596836854531287,    -0.009850298865819795, -0.02433577453530459,  -0.035527517285715064,
    0.03216631242579849,    0.032634758465458366,  0.028686243043391305,  0.020855179198650757,
    0.006843710121985493,   -0.011955284135189644, -0.029136186769439996, -0.0423736432084776,
    0.03828265633210977,    0.03877890283353202,   0.034026606756492786,  0.02466896908099049,
    0.0067927876389429044,  -0.012442177781634804, -0.029993152808362736, -0.04348469530671914,
    0.03921762229592942,    0.03967450462314413,   0.034761628871131274,  0.025143929725583658,
    0.005822493215376745,   -0.011245081034230263, -0.026790686318914004, -0.03871029789112366,
    0.034844667060178046,   0.035200348333528586,  0.030791827592235033,  0.022215777437325654,
};
// [2, 4, 8]
const std::vector<double> kMhaCrossDoutputKernel = {
    0.027748047366353064,  0.014359291429628772,   -0.0009729272396144772, -0.016173464771184008,
    -0.029184999719126838, -0.038246481868108764,  -0.04213148211859976,   -0.04031418391205518,
    0.020935656047859616,  -0.0012386232107464497, -0.023245260628422075,  -0.0421057610684881,
    -0.05526744427498867,  -0.06094893817017109,   -0.05838127920841556,   -0.04791198798476195,
    0.011289721896890807,  -0.01666889601019114,   -0.04237145703961979,   -0.062339240132226685,
    -0.07386969951953226,  -0.07540224161529502,   -0.06672944403633391,   -0.04902512924902751,
    0.000115776849657487,  -0.02984311193198255,   -0.05576287551399555,   -0.07413539549066399,
    -0.082474037472533,    -0.0796502053856946,    -0.06604609165590763,   -0.04350294925671521,
    -0.02639502492958461,  -0.06307022989477606,   -0.09120917511953322,   -0.10700338637344481,
    -0.10831519125728806,  -0.0949670431339898,    -0.06876555123304533,   -0.03325696456649145,
    -0.035045150382534994, -0.06525056332592874,   -0.08662461862738821,   -0.09627443817208714,
    -0.09289396415400025,  -0.07694072787295515,   -0.05057392501957704,   -0.017362178667806226,
    -0.03895207913544176,  -0.0585995391151472,    -0.07031582637848262,   -0.0725151964079438,
    -0.06489997478775426,  -0.04850084603958719,   -0.025537355307716388,  0.0008824966639045102,
    -0.037587026709830225, -0.044017342187995655,  -0.04449011689570281,   -0.038941362994149895,
    -0.028122078293530847, -0.013496602222515485,  0.002955575643894158,   0.01900773021213471,
};
// [2, 4, 8]
const std::vector<double> kMhaCausal = {
    0.09815919276241344,  0.11024278550612276,  0.1074055344038645,    0.09003144808218214,
    0.060472027619192174, 0.022728001905050553, -0.01809215224506306,  -0.056463618462930035,
    0.0949883916651787,   0.10861632292492976,  0.10754354441899666,   0.09191525168552575,
    0.06384666083035698,  0.027136723950025272, -0.013246041212815514, -0.05183601683749001,
    0.09659669025484692,  0.11036709535016072,  0.10919983184528011,   0.09325288337970974,
    0.06468459461774763,  0.0273615494234244,   -0.013664753126528565, -0.052841595445060494,
    0.09525789275606915,  0.10898439390280054,  0.10796036860369196,   0.09232441387905771,
    0.06419278284929765,  0.02737295980284284,  -0.013151664940567426, -0.05189627353152107,
    0.09776571621525942,  0.11236740061563472,  0.11176068448198989,   0.09602768399677944,
    0.067297786968835,    0.02945945018284927,  -0.012366084984857004, -0.0525179285617898,
    0.09551448553079953,  0.10931442939394297,  0.10831917805578681,   0.09266343411601516,
    0.06446612907246135,  0.027543635883232682, -0.013106759209754527, -0.051983215930288325,
    0.09603817675995958,  0.11051995882700337,  0.11004338293937704,   0.09467295140775206,
    0.0664889800339801,   0.029306037126514556, -0.01184334042518974,  -0.051389777409966024,
    0.09555919472013125,  0.10938754674514263,  0.10841080747837853,   0.09276117399750422,
    0.0645567507784067,   0.02761487419086026,  -0.013064546071188104, -0.051975741311057234,
};
// [2, 3, 8]
const std::vector<double> kMhaPadded = {
    0.09558598728587026, 0.1094676711784071,   0.10853341931300682,   0.0929096782968775,
    0.06471104818226997, 0.02775408126944248,  -0.01295927034292312,  -0.051918645509059384,
    0.0956753894490688,  0.1095756803298847,   0.10864541692080483,   0.09301050601018498,
    0.06478705944309494, 0.027794988310217213, -0.01295900409826387,  -0.05195905609548124,
    0.09553529971123756, 0.10940919905531349,  0.10847507656900787,   0.09285936134867528,
    0.0646755671927562,  0.02773823842409897,  -0.012953330789301252, -0.051891727447191165,
    0.09634113627688623, 0.10946401628068264,  0.10777145519980308,   0.09149253323638132,
    0.06283052611029147, 0.025664702026496122, -0.01497471907802569,  -0.05358738220491941,
    0.09526134603126517, 0.10798050820002922,  0.10608501514338273,   0.08983141295438257,
    0.06141955044021537, 0.024694839906101378, -0.015372201360572543, -0.05335868728734934,
    0.09648241419088117, 0.10965049187382761,  0.10797788987536247,   0.091690987029447,
    0.06299413923096081, 0.0257713302064304,   -0.014939507462765188, -0.053628352881273045,
};
// [2, 3, 5]
const std::vector<double> kMhaPaddedWeights = {
    0.2499398150054617,
    0.25007971359143505,
    0.24869528425656687,
    0.25128518714653636,
    0.0,
    0.24875022365075056,
    0.25130121006628026,
    0.24546317531843143,
    0.25448539096453776,
    0.0,
    0.25063086703728593,
    0.24933718254497916,
    0.2509746989223817,
    0.24905725149535318,
    0.0,
    0.3426335850790079,
    0.31189177773543997,
    0.34547463718555216,
    0.0,
    0.0,
    0.329598609556057,
    0.3415005948024057,
    0.3289007956415373,
    0.0,
    0.0,
    0.3446754661001854,
    0.3071490822281847,
    0.34817545167162983,
    0.0,
    0.0,
};

constexpr int64_t kE = 8, kHeads = 2, kKeyDim = 4;

LayerRef<MultiHeadAttention> built_layer(const Shape& q, const Shape& v,
                                         MultiHeadAttentionOptions o = {}) {
  if (o.dtype.empty()) o.dtype = "float64";
  auto mha = layers::MultiHeadAttention(kHeads, kKeyDim, o);
  mha->build({q, v, v});
  test::set_weight(*mha, "query/kernel", wave({kE, kHeads, kKeyDim}, 3, 0.3));
  test::set_weight(*mha, "query/bias", wave({kHeads, kKeyDim}, 4, 0.1));
  test::set_weight(*mha, "key/kernel", wave({kE, kHeads, kKeyDim}, 5, 0.3));
  test::set_weight(*mha, "key/bias", wave({kHeads, kKeyDim}, 6, 0.1));
  test::set_weight(*mha, "value/kernel", wave({kE, kHeads, kKeyDim}, 7, 0.3));
  test::set_weight(*mha, "value/bias", wave({kHeads, kKeyDim}, 8, 0.1));
  test::set_weight(*mha, "attention_output/kernel", wave({kHeads, kKeyDim, kE}, 9, 0.3));
  test::set_weight(*mha, "attention_output/bias", wave({kE}, 10, 0.1));
  return mha;
}

const Weight& weight(const Layer& layer, const std::string& name) {
  for (const Weight& w : layer.own_weights())
    if (w.name == name) return w;
  throw ValueError("no weight " + name);
}

TEST(MultiHeadAttentionTest, CrossAttentionValuesAndGradientsMatchPyTorch) {
  auto mha = built_layer({2, 3, kE}, {2, 5, kE});
  Variable q(wave({2, 3, kE}, 1), true), kv(wave({2, 5, kE}, 2), true);
  const Variable y = mha(std::vector<Variable>{q, kv});
  test::expect_values_near(y.value(), kMhaCross, 1e-12);
  autograd::sum(autograd::mul(y, Variable(wave({2, 3, kE}, 11)))).backward();
  test::expect_values_near(q.grad(), kMhaCrossDquery, 1e-12);
  test::expect_values_near(kv.grad(), kMhaCrossDvalue, 1e-12);
  test::expect_values_near(weight(*mha, "query/kernel").variable.grad(), kMhaCrossDqueryKernel,
                           1e-12);
  test::expect_values_near(weight(*mha, "attention_output/kernel").variable.grad(),
                           kMhaCrossDoutputKernel, 1e-12);
}

// float32 runs the tiled kernel: the same values within float32's precision.
TEST(MultiHeadAttentionTest, Float32MatchesPyTorch) {
  auto mha = built_layer({2, 3, kE}, {2, 5, kE}, {.dtype = "float32"});
  const Variable y = mha(std::vector<Variable>{Variable(wave({2, 3, kE}, 1).to(DType::float32)),
                                               Variable(wave({2, 5, kE}, 2).to(DType::float32))});
  EXPECT_EQ(y.dtype(), DType::float32);
  test::expect_values_near(y.value().to(DType::float64), kMhaCross, 1e-5);
}

TEST(MultiHeadAttentionTest, CausalMaskAndPaddingMaskMatchPyTorch) {
  const Variable x(wave({2, 4, kE}, 12));
  auto causal = built_layer({2, 4, kE}, {2, 4, kE});
  test::expect_values_near(causal->attend(x, x, {}, {.use_causal_mask = true}).value(), kMhaCausal,
                           1e-12);
  auto always = built_layer({2, 4, kE}, {2, 4, kE}, {.use_causal_mask = true});
  test::expect_values_near(always(std::vector<Variable>{x, x}).value(), kMhaCausal, 1e-12);
  // Keras's attention_mask [batch, Tq, Tk], true = may attend: the keys PyTorch's
  // key_padding_mask marks as padding are false for every query.
  std::vector<uint8_t> allowed;
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 5; ++j) allowed.push_back(j < (b == 0 ? 4 : 3) ? 1 : 0);
  const Tensor mask = from_vector<uint8_t>(allowed, {2, 3, 5}).to(DType::boolean);
  auto padded = built_layer({2, 3, kE}, {2, 5, kE});
  const auto r = padded->attend_with_scores(
      Variable(wave({2, 3, kE}, 1)), Variable(wave({2, 5, kE}, 2)), {}, {.attention_mask = mask});
  test::expect_values_near(r.output.value(), kMhaPadded, 1e-12);
  EXPECT_EQ(r.scores.shape(), (Shape{2, kHeads, 3, 5}));
  test::expect_values_near(mean(r.scores, {1}), kMhaPaddedWeights, 1e-12);  // torch averages heads
}

TEST(MultiHeadAttentionTest, PassesTheLayerConformanceCheck) {
  OSPREY_EXPECT_LAYER_CONFORMANCE(
      [] { return layers::MultiHeadAttention(2, 3, {.dtype = "float64"}); },
      std::vector<Shape>{{2, 3, 4}, {2, 5, 6}},
      {.output_shape = {2, 3, 4},
       .params = 142,
       .weights = {{"query/kernel", {4, 2, 3}},
                   {"query/bias", {2, 3}},
                   {"key/kernel", {6, 2, 3}},
                   {"key/bias", {2, 3}},
                   {"value/kernel", {6, 2, 3}},
                   {"value/bias", {2, 3}},
                   {"attention_output/kernel", {2, 3, 4}},
                   {"attention_output/bias", {4}}}});
  // value_dim, output_shape, no bias, a separate key.
  OSPREY_EXPECT_LAYER_CONFORMANCE(
      [] {
        return layers::MultiHeadAttention(
            2, 3, {.value_dim = 5, .use_bias = false, .output_shape = 7, .dtype = "float64"});
      },
      std::vector<Shape>{{2, 3, 4}, {2, 5, 6}, {2, 5, 2}},
      {.output_shape = {2, 3, 7},
       .params = 4 * 6 + 2 * 6 + 6 * 10 + 10 * 7,
       .weights = {{"query/kernel", {4, 2, 3}},
                   {"key/kernel", {2, 2, 3}},
                   {"value/kernel", {6, 2, 5}},
                   {"attention_output/kernel", {2, 5, 7}}}});
}

TEST(MultiHeadAttentionTest, DropoutOnlyInTrainingAndFixedByTheSeed) {
  auto mha = built_layer({2, 3, kE}, {2, 5, kE}, {.dropout = 0.5, .seed = 3});
  const Variable q(wave({2, 3, kE}, 1)), kv(wave({2, 5, kE}, 2));
  test::expect_values_near(mha(std::vector<Variable>{q, kv}).value(), kMhaCross, 1e-12);
  const Tensor first = mha(std::vector<Variable>{q, kv}, true).value();
  const Tensor second = mha(std::vector<Variable>{q, kv}, true).value();
  EXPECT_NE(first.to_vector<double>(), second.to_vector<double>());  // a new mask each call
  mha->set_seed_calls(0);
  EXPECT_EQ(mha(std::vector<Variable>{q, kv}, true).value().to_vector<double>(),
            first.to_vector<double>());
}

TEST(MultiHeadAttentionTest, ConfigUsesKerasFieldNamesAndRoundTrips) {
  auto mha = layers::MultiHeadAttention(
      4, 16, {.dropout = 0.1, .output_shape = 32, .use_causal_mask = true, .name = "attn"});
  const nlohmann::json c = mha->get_config();
  EXPECT_EQ(c["num_heads"], 4);
  EXPECT_EQ(c["key_dim"], 16);
  EXPECT_EQ(c["value_dim"], 16);
  EXPECT_EQ(c["dropout"], 0.1);
  EXPECT_EQ(c["output_shape"], 32);
  EXPECT_EQ(c["use_causal_mask"], true);
  nlohmann::json keras = c;
  keras["output_shape"] = nlohmann::json::array({32});  // Keras 3 writes a tuple
  keras.erase("use_causal_mask");
  auto back =
      std::dynamic_pointer_cast<MultiHeadAttention>(layer_from_config("MultiHeadAttention", keras));
  ASSERT_NE(back, nullptr);
  EXPECT_EQ(back->options().output_shape, 32);
  EXPECT_FALSE(back->options().use_causal_mask);
}

TEST(MultiHeadAttentionTest, BadArgumentsAndShapesAreNamed) {
  EXPECT_EQ(test::value_error([] { layers::MultiHeadAttention(0, 8); }),
            "MultiHeadAttention: num_heads must be positive. Received: num_heads=0");
  EXPECT_EQ(test::value_error([] { layers::MultiHeadAttention(2, 8, {.dropout = 1.0}); }),
            "MultiHeadAttention: dropout must be in [0, 1). Received: dropout=1");
  auto mha = layers::MultiHeadAttention(2, 4, {.name = "attn"});
  EXPECT_EQ(test::value_error([&] {
              mha(std::vector<Variable>{Variable(zeros({2, 3})), Variable(zeros({2, 3, 8}))});
            }),
            "attn: query must be [batch, steps, features]. Received: [2, 3]");
  EXPECT_EQ(test::value_error([&] {
              mha(std::vector<Variable>{Variable(zeros({2, 3, 8})), Variable(zeros({2, 5, 8})),
                                        Variable(zeros({2, 4, 8}))});
            }),
            "attn: key and value must have the same number of steps. Received: value [2, 5, 8], "
            "key [2, 4, 8]");
  mha(std::vector<Variable>{Variable(zeros({2, 3, 8})), Variable(zeros({2, 5, 8}))});
  EXPECT_EQ(test::value_error([&] {
              mha(std::vector<Variable>{Variable(zeros({2, 3, 6})), Variable(zeros({2, 5, 8}))});
            }),
            "attn: an input has 6 features; the layer was built for 8. Received: [2, 3, 6]");
  EXPECT_EQ(test::value_error([&] {
              mha(std::vector<Variable>{Variable(zeros({2, 3, 8}))});
            }),
            "attn: expected [query, value] or [query, value, key]. Received 1 inputs");
}

// GroupedQueryAttention is MultiHeadAttention with each key/value head repeated for its group
// of query heads: the same weights, repeated, give the same output.
TEST(GroupedQueryAttentionTest, EqualsMultiHeadAttentionWithRepeatedKeyValueHeads) {
  auto gqa = layers::GroupedQueryAttention(4, 4, 2, {.name = "gqa"});
  auto mha = layers::MultiHeadAttention(4, 4, {.name = "mha"});
  const Variable q(wave({2, 5, 6}, 1).to(DType::float32));
  const Variable v(wave({2, 7, 6}, 2).to(DType::float32));
  const Variable g = gqa->attend(q, v, {}, {.use_causal_mask = true});
  mha->attend(q, v);                                         // builds it
  EXPECT_EQ(gqa->variables()[2].shape(), (Shape{6, 2, 4}));  // key/kernel: 2 kv heads
  for (const Weight& w : gqa->own_weights()) {
    Tensor t = w.variable.value();
    if (w.name.starts_with("key/") || w.name.starts_with("value/")) {
      const int axis = t.ndim() - 2;  // [in, kv_heads, d] or [kv_heads, d]: heads 0,0,1,1
      t = concat(
          {t.narrow(axis, 0, 1), t.narrow(axis, 0, 1), t.narrow(axis, 1, 1), t.narrow(axis, 1, 1)},
          axis);
    }
    test::set_weight(*mha, w.name, t);
  }
  const Variable m = mha->attend(q, v, {}, {.use_causal_mask = true});
  const std::vector<float> a = g.value().to_vector<float>(), b = m.value().to_vector<float>();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-6) << i;
  // The cache holds the 2 kv heads, and stepping through it gives the same output.
  AttentionCache cache = gqa->make_cache(2, 5);
  EXPECT_EQ(cache.key.shape(), (Shape{2, 2, 5, 4}));
  const Variable full = gqa->attend(q, q, {}, {.use_causal_mask = true});
  const Variable s1 = gqa->attend_cached(Variable(q.value().narrow(1, 0, 3).contiguous()), cache);
  const Variable s2 = gqa->attend_cached(Variable(q.value().narrow(1, 3, 2).contiguous()), cache);
  const std::vector<float> f = full.value().to_vector<float>();
  const std::vector<float> st = autograd::concat({s1, s2}, 1).value().to_vector<float>();
  for (size_t i = 0; i < f.size(); ++i) EXPECT_NEAR(st[i], f[i], 1e-5) << i;
}

TEST(GroupedQueryAttentionTest, ConfigAndErrors) {
  auto gqa = layers::GroupedQueryAttention(8, 6, 3, {.dropout = 0.1, .use_bias = false});
  const nlohmann::json c = gqa->get_config();
  EXPECT_EQ(c["head_dim"], 8);
  EXPECT_EQ(c["num_query_heads"], 6);
  EXPECT_EQ(c["num_key_value_heads"], 3);
  EXPECT_EQ(layer_from_config("GroupQueryAttention", c)->get_config(), c);
  EXPECT_EQ(test::value_error([] { layers::GroupedQueryAttention(8, 4, 3); }),
            "GroupedQueryAttention: num_query_heads (4) must be a positive multiple of "
            "num_key_value_heads (3): each key/value head serves a group of query heads");
}

}  // namespace
}  // namespace osprey::nn
