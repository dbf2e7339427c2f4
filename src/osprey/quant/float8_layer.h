// Float8Layer<Base>: what Float8Dense and Float8Conv2D add to the layer they replace (Base is
// nn::Dense or nn::Conv2D): the delayed-scaling settings, the six scaling weights created after
// Base's kernel and bias, the float8 config fields, and the copy of a built Base's weights.
// Each subclass only says how its product runs (call_single) and how to rebuild it from config.
#pragma once

#include <utility>

#include "osprey/core/error.h"
#include "osprey/quant/float8_ops.h"

namespace osprey::quant {

template <class Base>
class Float8Layer : public Base {
 public:
  const precision::DelayedScaling& scaling() const { return scaling_; }
  const Float8Scalings& scalings() const { return scalings_; }

  // Base's fields plus "quantization_mode": "float8", "amax_history_length" and "margin".
  nlohmann::json get_config() const override {
    nlohmann::json c = Base::get_config();
    write_float8_config(c, scaling_);
    return c;
  }

 protected:
  // class_name and base_args go to Base's protected constructor.
  template <class... Args>
  Float8Layer(precision::DelayedScaling scaling, const char* class_name, Args&&... base_args)
      : Base(class_name, std::forward<Args>(base_args)...), scaling_(scaling) {
    precision::check_delayed_scaling(scaling_, class_name);
  }

  void build_single(const Shape& input_shape) override {
    Base::build_single(input_shape);
    scalings_ = add_float8_scalings(
        [this](const std::string& n, Tensor v) { return this->add_weight(n, std::move(v), false); },
        scaling_);
  }

  // Builds this layer like `from` (a built Base) and copies its kernel and bias.
  void build_from(const Base& from) {
    OSPREY_CHECK(
        from.built(),
        "quantize: layer '{}' is not built yet; call the model on data (or build it) first",
        from.name());
    this->build(from.build_input_shapes());
    Tensor k = this->kernel().value();
    k.copy_(from.kernel().value());
    if (from.bias().defined()) {
      Tensor b = this->bias().value();
      b.copy_(from.bias().value());
    }
  }

 private:
  precision::DelayedScaling scaling_;
  Float8Scalings scalings_;
};

}  // namespace osprey::quant
