//! NNEF serialization for tract operators that tract 0.23.9 can produce but not write.
//!
//! tract's declutter fuses the ONNX `0.5·x·(1+erf(x/√2))` pattern into `GeluExact`, yet its NNEF
//! registries have no dumper for it, so every transformer with exact GELU failed to build. This
//! registry names it `trtmc_gelu_exact`; bundles are written and read with the same framework.

use tract_core::ops::nn::GeluExact;
use tract_nnef::internal::*;

/// The NNEF framework every tract bundle is written and read with.
pub fn framework() -> tract_nnef::framework::Nnef {
    use tract_onnx::WithOnnx;
    tract_nnef::nnef().with_onnx().with_registry(registry())
}

fn registry() -> Registry {
    let mut registry = Registry::new("trtmc");
    registry.register_unit_element_wise("trtmc_gelu_exact", &GeluExact {});
    registry
}
