// Used only while the oneDNN backend's sources are absent: the CPU table is the reference one.
#include "osprey/tensor/backend.h"

namespace osprey {
const Backend& cpu_backend() { return reference_backend(); }
}  // namespace osprey
