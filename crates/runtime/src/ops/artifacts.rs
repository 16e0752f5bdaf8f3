//! Artifact inputs (request fields of kind `Artifact`): files relative to MODEL.toml, decoded while the
//! runner is prepared, never inside the timed region. The case identity already holds their SHA-256.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use ndarray::{ArrayD, IxDyn};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{Rotation, RunnerContext};
use crate::runtime::Session;
use crate::tensor::{Dim, HostTensor, TensorSpec};

/// The file named by artifact field `field`, or `None` for `synthetic`.
pub(crate) fn artifact_path(
    ctx: &RunnerContext<'_>,
    field: &str,
) -> anyhow::Result<Option<PathBuf>> {
    let rel = ctx.string(field)?;
    if rel == "synthetic" {
        return Ok(None);
    }
    let dir = ctx.manifest_dir.with_context(|| {
        format!("request.{field} = `{rel}` names a file, but the case has no manifest directory")
    })?;
    Ok(Some(dir.join(rel)))
}

/// A mono WAV file as f32 samples in [-1, 1]; it must have the model's sample rate.
pub(crate) fn read_wav(path: &std::path::Path, expected_rate: u32) -> anyhow::Result<Vec<f32>> {
    let mut reader = hound::WavReader::open(path)
        .with_context(|| format!("cannot read WAV file {}", path.display()))?;
    let spec = reader.spec();
    if spec.channels != 1 {
        bail!(
            "WAV file {} has {} channels: give a mono file",
            path.display(),
            spec.channels
        );
    }
    if spec.sample_rate != expected_rate {
        bail!(
            "WAV file {} is sampled at {} Hz, the model expects {expected_rate} Hz (resample it, or set request.sample_rate)",
            path.display(),
            spec.sample_rate
        );
    }
    let samples: Vec<f32> = match spec.sample_format {
        hound::SampleFormat::Float => reader
            .samples::<f32>()
            .collect::<Result<_, _>>()
            .with_context(|| format!("corrupt WAV data in {}", path.display()))?,
        hound::SampleFormat::Int => {
            let full_scale = (1i64 << (spec.bits_per_sample.saturating_sub(1))) as f32;
            reader
                .samples::<i32>()
                .map(|s| s.map(|v| v as f32 / full_scale))
                .collect::<Result<_, _>>()
                .with_context(|| format!("corrupt WAV data in {}", path.display()))?
        }
    };
    if samples.is_empty() {
        bail!("WAV file {} holds no samples", path.display());
    }
    Ok(samples)
}

/// Audio of the `audio` field: the WAV file, or one second of seeded noise for `synthetic`.
pub(crate) fn audio_input(ctx: &RunnerContext<'_>, rate: u32) -> anyhow::Result<Vec<f32>> {
    match artifact_path(ctx, "audio")? {
        Some(path) => read_wav(&path, rate),
        None => {
            let mut rng = ChaCha8Rng::seed_from_u64(0);
            Ok((0..rate).map(|_| rng.random_range(-0.5..0.5)).collect())
        }
    }
}

/// How an audio model takes its samples: [1, samples] zero-padded to whole frames of `frame` samples, or
/// framed by the caller as [1, frames, frame] when the model declares a fixed last axis.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AudioLayout {
    pub frame: usize,
    pub framed: bool,
}

impl AudioLayout {
    /// From the model's audio input; `frame_samples` applies to [1, samples] inputs only.
    pub(crate) fn of(spec: &TensorSpec, frame_samples: usize) -> anyhow::Result<Self> {
        match spec.shape.as_slice() {
            [_, _] => Ok(Self {
                frame: frame_samples.max(1),
                framed: false,
            }),
            [_, _, Dim::Fixed(f)] if *f > 0 => Ok(Self {
                frame: *f as usize,
                framed: true,
            }),
            _ => bail!(
                "audio input `{}` must be [1, samples] or [1, frames, frame_samples] with a fixed frame",
                spec.describe()
            ),
        }
    }

    /// Zero-pads `samples` to whole frames and shapes them for the model.
    pub(crate) fn tensor(self, samples: &[f32]) -> anyhow::Result<HostTensor> {
        let frames = samples.len().div_ceil(self.frame).max(1);
        let mut padded = samples.to_vec();
        padded.resize(frames * self.frame, 0.0);
        let shape = if self.framed {
            IxDyn(&[1, frames, self.frame])
        } else {
            IxDyn(&[1, frames * self.frame])
        };
        Ok(HostTensor::F32(ArrayD::from_shape_vec(shape, padded)?))
    }
}

/// The concrete shape of a batch-first input: a symbolic first axis takes `batch`, a fixed one must equal
/// it, every other axis must be fixed.
pub(crate) fn batch_shape(spec: &TensorSpec, batch: usize) -> anyhow::Result<Vec<usize>> {
    let mut shape = Vec::with_capacity(spec.shape.len());
    for (i, d) in spec.shape.iter().enumerate() {
        shape.push(match d {
            Dim::Fixed(n) => *n as usize,
            Dim::Symbol(_) if i == 0 => batch,
            Dim::Symbol(s) => bail!(
                "input `{}` dimension `{s}` is unbound (set build.dims.{s})",
                spec.name
            ),
        });
    }
    if shape.first() != Some(&batch) {
        bail!(
            "the bundle was built for batch {}, the request asks for {batch}",
            shape.first().copied().unwrap_or(0)
        );
    }
    Ok(shape)
}

/// The concrete [batch, channels, height, width] shape of an image input.
pub(crate) fn image_shape(spec: &TensorSpec, batch: usize) -> anyhow::Result<Vec<usize>> {
    if spec.shape.len() != 4 {
        bail!(
            "image input `{}` must be [batch, channels, height, width]",
            spec.describe()
        );
    }
    batch_shape(spec, batch)
}

/// The image batches of a vision operation as the rotation its calls take. With one declared sample per
/// call (`request.samples` at batch size 1) each sample's image is decoded or synthesized when its first
/// call comes ([`Rotation::lazy`], outside the timed region), so preparation and memory grow with the
/// calls made, not the samples declared; otherwise as [`image_batches`], up front.
pub(crate) fn image_rotation(
    ctx: &RunnerContext<'_>,
    session: &dyn Session,
    batch: usize,
) -> anyhow::Result<Rotation<HostTensor>> {
    let Some(count) = super::one_sample_per_call(ctx.request, batch)? else {
        return Rotation::new(image_batches(ctx, session, batch)?, ctx.first_call);
    };
    let spec = session
        .inputs()
        .first()
        .context("the model declares no image input")?
        .clone();
    let shape = image_shape(&spec, 1)?;
    let request = ctx.request.clone();
    let manifest_dir = ctx.manifest_dir.map(Path::to_path_buf);
    Rotation::lazy(
        count,
        ctx.first_call,
        Box::new(move |i| {
            let sample = super::sample_request(&request, i)?;
            let sample_ctx = RunnerContext {
                request: &sample,
                session: None,
                bundle: None,
                manifest_dir: manifest_dir.as_deref(),
                tokenizer: None,
                first_call: 0,
                data: None,
            };
            image_item(&sample_ctx, &spec, &shape).with_context(|| format!("request.samples[{i}]"))
        }),
    )
}

/// The image batches of a vision operation, one per distinct call. Without `request.samples`: one batch
/// built from the request, seeded noise for `synthetic`, otherwise the decoded image file resized to
/// the input's height and width, scaled to [0, 1], repeated over the batch. With samples: each item its
/// own image or seeded noise (laid out by [`super::sample_layout`]).
pub(crate) fn image_batches(
    ctx: &RunnerContext<'_>,
    session: &dyn Session,
    batch: usize,
) -> anyhow::Result<Vec<HostTensor>> {
    let spec = session
        .inputs()
        .first()
        .context("the model declares no image input")?;
    let shape = image_shape(spec, batch)?;
    let Some(samples) = super::sample_requests(ctx.request)? else {
        return Ok(vec![image_item(ctx, spec, &shape)?]);
    };
    let mut one = shape.clone();
    one[0] = 1;
    let items = samples
        .iter()
        .enumerate()
        .map(|(i, request)| {
            let sample = ctx.for_sample(request);
            image_item(&sample, spec, &one).with_context(|| format!("request.samples[{i}]"))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    batches_of(items, batch)
}

/// The batches of `items` laid out by [`super::sample_layout`]. One sample per call: each item is its
/// call's batch as it is (stacking copies would hold every sample twice).
fn batches_of(items: Vec<HostTensor>, batch: usize) -> anyhow::Result<Vec<HostTensor>> {
    let layout = super::sample_layout(items.len(), batch)?;
    if layout
        .iter()
        .enumerate()
        .all(|(call, taken)| taken.as_slice() == [call])
    {
        return Ok(items);
    }
    layout
        .iter()
        .map(|call| super::stack_items(&call.iter().map(|&i| &items[i]).collect::<Vec<_>>()))
        .collect()
}

/// Seeded noise batches of `shape` [batch, …] as the rotation the calls take: with one declared sample
/// per call, each sample's noise is made when its first call comes ([`Rotation::lazy`]; every sample's
/// seed is checked now); otherwise as [`seeded_batches`], up front.
pub(crate) fn seeded_rotation(
    ctx: &RunnerContext<'_>,
    spec: &TensorSpec,
    shape: &[usize],
) -> anyhow::Result<Rotation<HostTensor>> {
    let batch = shape
        .first()
        .copied()
        .context("a seeded input needs a batch axis")?;
    let Some(count) = super::one_sample_per_call(ctx.request, batch)? else {
        return Rotation::new(seeded_batches(ctx, spec, shape)?, ctx.first_call);
    };
    let shared = ctx.request.get("seed");
    let seeds = ctx
        .request
        .get("samples")
        .and_then(serde_json::Value::as_array)
        .context("request.samples must be a list of tables")?
        .iter()
        .enumerate()
        .map(|(i, table)| {
            table
                .get("seed")
                .or(shared)
                .and_then(serde_json::Value::as_i64)
                .map(|seed| seed as u64)
                .with_context(|| format!("request.samples[{i}].seed must be an integer"))
        })
        .collect::<anyhow::Result<Vec<u64>>>()?;
    let (spec, shape) = (spec.clone(), shape.to_vec());
    Rotation::lazy(
        count,
        ctx.first_call,
        Box::new(move |i| crate::tensor::synthesize(&spec, &shape, seeds[i], 1)),
    )
}

/// Seeded noise batches of `shape` [batch, …], one per distinct call: from `request.seed` for the whole
/// batch without `request.samples`; with samples, each item from its own seed.
pub(crate) fn seeded_batches(
    ctx: &RunnerContext<'_>,
    spec: &TensorSpec,
    shape: &[usize],
) -> anyhow::Result<Vec<HostTensor>> {
    let Some(samples) = super::sample_requests(ctx.request)? else {
        let seed = ctx.int("seed")? as u64;
        return Ok(vec![crate::tensor::synthesize(spec, shape, seed, 1)?]);
    };
    let mut one = shape.to_vec();
    let batch = one
        .first()
        .copied()
        .context("a seeded input needs a batch axis")?;
    one[0] = 1;
    let items = samples
        .iter()
        .enumerate()
        .map(|(i, request)| {
            let seed = request
                .get("seed")
                .and_then(serde_json::Value::as_i64)
                .with_context(|| format!("request.samples[{i}].seed must be an integer"))?;
            crate::tensor::synthesize(spec, &one, seed as u64, 1)
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    batches_of(items, batch)
}

/// The images of one request at `shape`: seeded noise for `synthetic`, else the decoded file.
fn image_item(
    ctx: &RunnerContext<'_>,
    spec: &TensorSpec,
    shape: &[usize],
) -> anyhow::Result<HostTensor> {
    let seed = ctx.int("seed")? as u64;
    match artifact_path(ctx, "image")? {
        None => crate::tensor::synthesize(spec, shape, seed, 1),
        Some(path) => decode_image(&path, shape),
    }
}

/// Decodes an image file, resizes it to `shape` [batch, channels, height, width] (1 or 3 channels),
/// scales it to [0, 1] and repeats it over the batch.
fn decode_image(path: &std::path::Path, shape: &[usize]) -> anyhow::Result<HostTensor> {
    let (batch, c, h, w) = (shape[0], shape[1], shape[2], shape[3]);
    if c != 3 && c != 1 {
        bail!("the image input has {c} channels: only 1 (gray) or 3 (RGB) images can be fed");
    }
    let decoded =
        image::open(path).with_context(|| format!("cannot decode image {}", path.display()))?;
    let rgb = image::imageops::resize(
        &decoded.to_rgb8(),
        w as u32,
        h as u32,
        image::imageops::FilterType::Triangle,
    );
    let mut one = vec![0f32; c * h * w];
    for (x, y, p) in rgb.enumerate_pixels() {
        let (x, y) = (x as usize, y as usize);
        if c == 1 {
            let gray = (f32::from(p[0]) + f32::from(p[1]) + f32::from(p[2])) / 3.0;
            one[y * w + x] = gray / 255.0;
        } else {
            for ch in 0..3 {
                one[ch * h * w + y * w + x] = f32::from(p[ch]) / 255.0;
            }
        }
    }
    let data: Vec<f32> = one
        .iter()
        .copied()
        .cycle()
        .take(batch * one.len())
        .collect();
    Ok(HostTensor::F32(ArrayD::from_shape_vec(IxDyn(shape), data)?))
}

/// The image of a vision-language request as ViT-style patches [1, patches, patch_dim]: the image
/// (`synthetic` noise or the decoded file) at `request.image_size` squared, RGB scaled to [0, 1], cut into
/// square patches of side sqrt(patch_dim / 3), each flattened channel-major.
pub(crate) fn image_patches(
    ctx: &RunnerContext<'_>,
    patch_dim: usize,
) -> anyhow::Result<ArrayD<f32>> {
    let side = (patch_dim / 3).isqrt();
    if side == 0 || 3 * side * side != patch_dim {
        bail!("patch_dim {patch_dim} is not 3 x side x side (RGB square patches)");
    }
    let size = ctx.int("image_size")?;
    if size < 1 || !(size as usize).is_multiple_of(side) {
        bail!(
            "request.image_size must be a positive multiple of the patch side {side}, got {size}"
        );
    }
    let size = size as usize;
    let spec = TensorSpec {
        name: "image".into(),
        dtype: crate::tensor::DType::F32,
        shape: vec![
            Dim::Fixed(1),
            Dim::Fixed(3),
            Dim::Fixed(size as i64),
            Dim::Fixed(size as i64),
        ],
    };
    let image = match artifact_path(ctx, "image")? {
        None => crate::tensor::synthesize(&spec, &[1, 3, size, size], 0, 1)?,
        Some(path) => decode_image(&path, &[1, 3, size, size])?,
    };
    let pixels = image.to_f32_vec();
    let per_row = size / side;
    let mut out = Vec::with_capacity(pixels.len());
    for py in 0..per_row {
        for px in 0..per_row {
            for c in 0..3 {
                for y in 0..side {
                    let row = c * size * size + (py * side + y) * size + px * side;
                    out.extend_from_slice(&pixels[row..row + side]);
                }
            }
        }
    }
    Ok(ArrayD::from_shape_vec(
        IxDyn(&[1, per_row * per_row, patch_dim]),
        out,
    )?)
}

/// Microseconds of audio in `samples` samples at `rate` Hz.
pub(crate) fn audio_us(samples: usize, rate: u32) -> u64 {
    (samples as u64 * 1_000_000) / u64::from(rate.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Declared samples one per call: the lazy rotation makes nothing up front, makes each sample's
    /// noise before its call, starts where the case's earlier calls left off, and gives exactly the
    /// tensors the up-front preparation gives; a sample without a seed fails before any call.
    #[test]
    fn samples_one_per_call_are_prepared_lazily_and_alike() {
        let spec = TensorSpec {
            name: "x".into(),
            dtype: crate::tensor::DType::F32,
            shape: vec![Dim::Fixed(1), Dim::Fixed(4)],
        };
        let samples: Vec<serde_json::Value> = (0..5)
            .map(|i| serde_json::json!({ "seed": 10 + i }))
            .collect();
        let request = std::collections::BTreeMap::from([
            ("seed".to_string(), serde_json::json!(0)),
            ("batch_size".to_string(), serde_json::json!(1)),
            ("samples".to_string(), serde_json::Value::from(samples)),
        ]);
        let ctx = RunnerContext::request_only(&request, 7);
        let eager = seeded_batches(&ctx, &spec, &[1, 4]).expect("eager");
        let mut lazy = seeded_rotation(&ctx, &spec, &[1, 4]).expect("lazy");
        assert_eq!(lazy.inputs().count(), 0, "nothing is made up front");
        lazy.prepare_next().expect("prepare");
        let call = lazy.next();
        assert_eq!(call, 7 % 5, "the rotation resumes at the case's call");
        assert_eq!(lazy.inputs().count(), 1, "only the next call's input");
        assert_eq!(lazy.input(call).expect("input"), &eager[call]);
        lazy.prepare_all().expect("all");
        assert_eq!(lazy.inputs().cloned().collect::<Vec<_>>(), eager);

        let mut broken = request.clone();
        broken.insert(
            "samples".into(),
            serde_json::json!([{ "seed": 1 }, { "seed": "x" }]),
        );
        let ctx = RunnerContext {
            request: &broken,
            ..ctx
        };
        let err = seeded_rotation(&ctx, &spec, &[1, 4])
            .err()
            .expect("a bad seed is refused up front")
            .to_string();
        assert!(err.contains("request.samples[1].seed"), "{err}");
    }

    /// Outside files never panic the reader: truncated, garbage and wrong-format inputs are errors that
    /// name the file.
    #[test]
    fn malformed_artifacts_are_errors_not_panics() {
        let dir = tempfile::tempdir().expect("tmp");
        let wav = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../catalog/assets/speech.wav"
        ))
        .expect("packaged wav");
        let png = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../catalog/assets/shapes.png"
        ))
        .expect("packaged png");
        let mut inputs: Vec<Vec<u8>> = vec![Vec::new(), b"RIFF".to_vec(), vec![0xff; 100]];
        for cut in [12, 40, 44, 45] {
            inputs.push(wav[..cut].to_vec());
        }
        for cut in [8, 20, 33, png.len() - 13] {
            inputs.push(png[..cut].to_vec());
        }
        for (i, bytes) in inputs.iter().enumerate() {
            let path = dir.path().join(format!("bad{i}"));
            std::fs::write(&path, bytes).expect("write");
            if let Err(e) = read_wav(&path, 16_000) {
                assert!(format!("{e:#}").contains("bad"), "{e:#}");
            }
            let err = decode_image(&path, &[1, 3, 8, 8]).expect_err("not an image");
            assert!(format!("{err:#}").contains("bad"), "{err:#}");
        }
        // The packaged files decode; a rate mismatch is refused with the fix.
        let good = dir.path().join("good.wav");
        std::fs::write(&good, &wav).expect("write");
        assert_eq!(read_wav(&good, 16_000).expect("wav").len(), 12_000);
        let err = read_wav(&good, 8_000).expect_err("rate");
        assert!(format!("{err:#}").contains("8000 Hz"), "{err:#}");
        let img = dir.path().join("good.png");
        std::fs::write(&img, &png).expect("write");
        let t = decode_image(&img, &[2, 3, 16, 16]).expect("png");
        assert_eq!(t.shape(), &[2, 3, 16, 16]);
        assert!(t.to_f32_vec().iter().all(|v| (0.0..=1.0).contains(v)));
    }
}
