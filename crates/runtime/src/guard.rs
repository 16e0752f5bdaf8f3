//! The runtime boundary: a model no runtime can run is refused before a runtime sees it, with a message
//! naming the output or opset at fault, and a runtime that panics on a model (tract-onnx does on some
//! malformed graphs) becomes an error naming the runtime instead of ending trtmc (docs/exit-codes.md).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use anyhow::{Context as _, bail};

/// The newest opset of the default ONNX domain the onnx release trtmc is tested with (1.23) defines; a
/// model declaring a newer one uses operators no runtime here knows.
pub const NEWEST_ONNX_OPSET: i64 = 28;

/// Refuses a graph that has nothing to compute or time: no graph, no nodes, no outputs, or an output
/// that no node produces (and that is neither a graph input nor a weight). With `newest_opset`, also a
/// default-domain opset above it.
pub fn check_graph(onnx: &Path, newest_opset: Option<i64>) -> anyhow::Result<()> {
    use tract_onnx::prelude::Framework as _;
    let file = onnx.display();
    let proto = tract_onnx::onnx()
        .proto_model_for_path(onnx)
        .with_context(|| format!("cannot read the graph of {file}"))?;
    if let Some(newest) = newest_opset {
        for o in &proto.opset_import {
            let domain = if o.domain.is_empty() {
                "ai.onnx"
            } else {
                &o.domain
            };
            if domain == "ai.onnx" && o.version > newest {
                bail!(
                    "{file} imports opset {} of the ONNX domain, newer than any ONNX release knows (the newest is {newest}): export the model with an existing opset",
                    o.version
                );
            }
        }
    }
    let Some(graph) = &proto.graph else {
        bail!("{file} has no graph: there is nothing to run");
    };
    if graph.node.is_empty() {
        bail!("the graph of {file} has no nodes: there is nothing to run or time");
    }
    if graph.output.is_empty() {
        bail!(
            "the graph of {file} declares no outputs: nothing it computes can be read, so there is nothing to time (declare the tensors it produces as graph outputs)"
        );
    }
    let known: std::collections::HashSet<&str> = graph
        .node
        .iter()
        .flat_map(|n| n.output.iter())
        .chain(graph.input.iter().map(|i| &i.name))
        .chain(graph.initializer.iter().map(|t| &t.name))
        .map(String::as_str)
        .collect();
    if let Some(missing) = graph
        .output
        .iter()
        .find(|o| !known.contains(o.name.as_str()))
    {
        bail!(
            "graph output `{}` of {file} is produced by no node (and is neither a graph input nor a weight): remove it from the graph outputs or add the node that computes it",
            missing.name
        );
    }
    Ok(())
}

/// Runs `f`, turning a panic inside it into an error naming `runtime` and what it was doing, with the
/// panic's message. The panic's own report on stderr is silenced meanwhile (this is the only one).
pub fn catch_runtime_panic<T>(
    runtime: &str,
    doing: &str,
    f: impl FnOnce() -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let outcome = catch_unwind(AssertUnwindSafe(f));
    std::panic::set_hook(previous);
    match outcome {
        Ok(result) => result,
        Err(payload) => {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "no message".into());
            bail!(
                "runtime `{runtime}` crashed while {doing} ({message}): the model is likely malformed in a way this runtime does not check; please report it with the model"
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_an_error_naming_the_runtime() {
        let e = catch_runtime_panic::<()>("tract", "building the model", || {
            panic!("no entry found for key")
        })
        .expect_err("a panic is an error");
        let text = format!("{e:#}");
        assert!(
            text.contains("runtime `tract` crashed while building the model"),
            "{text}"
        );
        assert!(text.contains("no entry found for key"), "{text}");
        assert_eq!(
            catch_runtime_panic("tract", "loading", || Ok(7)).expect("no panic"),
            7
        );
    }
}
