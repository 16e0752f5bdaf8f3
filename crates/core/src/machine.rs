//! The machine a result or a tuning cache was produced on, and the programs it has.

use std::path::PathBuf;

use crate::artifacts::MachineInfo;

/// An executable program: `name` as a path when it holds a `/`, else the first match on `PATH`.
pub fn find_program(name: &str) -> Option<PathBuf> {
    which::which(name).ok()
}

/// Describes this machine: host, OS and kernel, CPU model and count, memory, and the GPUs `nvidia-smi -L`
/// lists (none when it is not on `PATH`), their UUIDs hashed ([`hide_gpu_uuids`]) and the ones
/// `CUDA_VISIBLE_DEVICES` selects marked.
pub fn machine() -> MachineInfo {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let os_release = read("/etc/os-release");
    let pretty = os_release
        .lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))
        .map(|v| v.trim_matches('"').to_string())
        .unwrap_or_else(|| std::env::consts::OS.to_string());
    let kernel = read("/proc/sys/kernel/osrelease").trim().to_string();
    let cpuinfo = read("/proc/cpuinfo");
    let cpu_model = cpuinfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .and_then(|r| r.split(':').nth(1))
        })
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let memory_bytes = read("/proc/meminfo")
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|r| r.split_whitespace().next()?.parse::<u64>().ok())
        .map(|kib| kib * 1024);
    let visible = std::env::var("CUDA_VISIBLE_DEVICES").ok();
    let gpus = find_program("nvidia-smi")
        .and_then(|smi| std::process::Command::new(smi).arg("-L").output().ok())
        .map(|o| gpu_listing(&String::from_utf8_lossy(&o.stdout), visible.as_deref()))
        .unwrap_or_default();
    MachineInfo {
        hostname: read("/proc/sys/kernel/hostname").trim().to_string(),
        os: if kernel.is_empty() {
            pretty
        } else {
            format!("{pretty} (Linux {kernel})")
        },
        arch: std::env::consts::ARCH.into(),
        cpu_model,
        logical_cpus: std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        memory_bytes,
        gpus,
    }
}

/// The devices `CUDA_VISIBLE_DEVICES` makes visible, in CUDA's order, as `nvidia-smi --id=` values
/// (indices, `GPU-…`/`MIG-…` UUIDs). `None`: the variable is unset, every GPU is visible. CUDA stops
/// reading the list at the first entry it cannot use, and an empty list (or `-1`) hides every GPU.
pub fn cuda_visible_devices(value: Option<&str>) -> Option<Vec<String>> {
    let value = value?;
    let mut ids = Vec::new();
    for item in value.split(',').map(str::trim) {
        let valid = !item.is_empty() && (item.bytes().all(|b| b.is_ascii_digit()) || is_uuid(item));
        if !valid {
            break;
        }
        ids.push(item.to_string());
    }
    Some(ids)
}

/// Whether a device id is a GPU or MIG UUID (or a prefix of one), not an index.
fn is_uuid(id: &str) -> bool {
    id.starts_with("GPU-") || id.starts_with("MIG-")
}

/// The device a CUDA program started here runs on (CUDA's device 0): the first device
/// `CUDA_VISIBLE_DEVICES` names, else GPU `0`; `None` when the variable hides every GPU.
pub fn selected_gpu(cuda_visible_devices: Option<&str>) -> Option<String> {
    match self::cuda_visible_devices(cuda_visible_devices) {
        None => Some("0".into()),
        Some(ids) => ids.into_iter().next(),
    }
}

/// `selected` (a [`selected_gpu`] value) as nvidia-smi's `--id=` takes it. CUDA accepts a unique
/// prefix of a device's UUID in `CUDA_VISIBLE_DEVICES` (`GPU-6382956c`); nvidia-smi takes only the
/// whole UUID and answers a prefix with "No devices were found" (seen on an H200, driver 580). A UUID
/// is completed from the `nvidia-smi -L` listing when exactly one listed device starts with it; an
/// index, or a UUID no listed device (or several) starts with, is returned as it is.
pub fn nvidia_smi_id(selected: &str, listing: &str) -> String {
    if !is_uuid(selected) {
        return selected.to_string();
    }
    let mut matches = listing
        .split(|c: char| c.is_whitespace() || c == '(' || c == ')')
        .filter(|word| word.starts_with(selected));
    match (matches.next(), matches.next()) {
        (Some(whole), None) => whole.to_string(),
        _ => selected.to_string(),
    }
}

/// The `nvidia-smi --id=` value of the device a CUDA program started here runs on
/// ([`selected_gpu`] of `visible`, a UUID prefix completed by asking `smi -L`: [`nvidia_smi_id`]);
/// `None` when `CUDA_VISIBLE_DEVICES` hides every GPU.
pub fn nvidia_smi_selected(smi: &std::path::Path, visible: Option<&str>) -> Option<String> {
    let selected = selected_gpu(visible)?;
    if !is_uuid(&selected) {
        return Some(selected);
    }
    let listing = std::process::Command::new(smi)
        .arg("-L")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    Some(nvidia_smi_id(&selected, &listing))
}

/// `nvidia-smi -L` lines (`GPU 0: NAME (UUID: GPU-…)`) with every UUID replaced by the first 12 hex
/// digits of its SHA-256 (`uuid-sha256:…`): results are shared, a device's serial identity is not,
/// and the hash still tells two cards apart.
pub fn hide_gpu_uuids(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(at) = ["GPU-", "MIG-"].iter().filter_map(|p| rest.find(p)).min() {
        let end = rest[at..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '/'))
            .map_or(rest.len(), |n| at + n);
        let digest = crate::hash::sha256_hex(&rest.as_bytes()[at..end]);
        out.push_str(&rest[..at]);
        out.push_str("uuid-sha256:");
        out.push_str(&digest[..12]);
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// The GPUs of an `nvidia-smi -L` listing, UUIDs hidden, the ones `CUDA_VISIBLE_DEVICES` selects
/// marked `(CUDA_VISIBLE_DEVICES: device N)`, none marked when it is unset.
fn gpu_listing(listing: &str, visible: Option<&str>) -> Vec<String> {
    let selected = cuda_visible_devices(visible);
    listing
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let index = line
                .strip_prefix("GPU ")
                .and_then(|r| r.split(':').next())
                .map(str::trim);
            let device = selected.as_ref().and_then(|ids| {
                ids.iter().position(|id| {
                    Some(id.as_str()) == index || (id.len() > 4 && line.contains(id.as_str()))
                })
            });
            let hidden = hide_gpu_uuids(line);
            match device {
                Some(n) => format!("{hidden} (CUDA_VISIBLE_DEVICES: device {n})"),
                None => hidden,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_are_found_on_path_or_as_paths() {
        let sh = find_program("sh").expect("sh is on PATH");
        assert!(sh.is_absolute(), "{}", sh.display());
        assert_eq!(find_program(sh.to_str().expect("utf8")), Some(sh));
        assert_eq!(find_program("/definitely/not/python"), None);
        assert_eq!(find_program("trtmc-no-such-program"), None);
    }

    #[test]
    fn gpu_uuids_are_hashed_and_the_visible_devices_marked() {
        let listing = "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-0b1c2d3e-1111-2222-3333-444455556666)\n\
                       GPU 1: NVIDIA A100-SXM4-80GB (UUID: GPU-99999999-1111-2222-3333-444455556666)\n";
        let plain = gpu_listing(listing, None);
        assert_eq!(plain.len(), 2);
        assert!(
            plain
                .iter()
                .all(|l| !l.contains("GPU-") && l.contains("uuid-sha256:"))
        );
        assert_ne!(plain[0], plain[1], "two cards stay apart");
        assert!(plain[0].starts_with("GPU 0: NVIDIA A100-SXM4-80GB (UUID: uuid-sha256:"));
        let picked = gpu_listing(listing, Some("1"));
        assert!(
            picked[1].ends_with("(CUDA_VISIBLE_DEVICES: device 0)"),
            "{picked:?}"
        );
        assert!(!picked[0].contains("CUDA_VISIBLE_DEVICES"));
        let by_uuid = gpu_listing(listing, Some("GPU-99999999-1111-2222-3333-444455556666,0"));
        assert!(by_uuid[1].ends_with("device 0)") && by_uuid[0].ends_with("device 1)"));

        assert_eq!(selected_gpu(None).as_deref(), Some("0"));
        assert_eq!(selected_gpu(Some("2,3")).as_deref(), Some("2"));
        assert_eq!(selected_gpu(Some("")), None);
        assert_eq!(selected_gpu(Some("-1")), None);
        assert_eq!(
            cuda_visible_devices(Some("1,x,2")),
            Some(vec!["1".to_string()])
        );
        assert_eq!(selected_gpu(Some("MIG-abc")).as_deref(), Some("MIG-abc"));
    }

    #[test]
    fn a_uuid_prefix_is_completed_for_nvidia_smi() {
        // An H200's listing as nvidia-smi 580 prints it, and a MIG listing.
        let h200 = "GPU 0: NVIDIA H200 (UUID: GPU-6382956c-9884-02b8-fe54-b6df8093e0e0)\n";
        assert_eq!(
            nvidia_smi_id("GPU-6382956c", h200),
            "GPU-6382956c-9884-02b8-fe54-b6df8093e0e0"
        );
        assert_eq!(
            nvidia_smi_id("GPU-6382956c-9884-02b8-fe54-b6df8093e0e0", h200),
            "GPU-6382956c-9884-02b8-fe54-b6df8093e0e0"
        );
        assert_eq!(nvidia_smi_id("0", h200), "0", "an index as it is");
        assert_eq!(
            nvidia_smi_id("GPU-ffff", h200),
            "GPU-ffff",
            "no such device"
        );
        let two = "GPU 0: A (UUID: GPU-aa11-0)\nGPU 1: B (UUID: GPU-aa22-0)\n";
        assert_eq!(
            nvidia_smi_id("GPU-aa", two),
            "GPU-aa",
            "ambiguous: left as given"
        );
        assert_eq!(nvidia_smi_id("GPU-aa2", two), "GPU-aa22-0");
        let mig = "GPU 0: NVIDIA A100 (UUID: GPU-0b1c)\n  MIG 1g.10gb     Device  0: (UUID: MIG-5e6f7a8b-0000)\n";
        assert_eq!(nvidia_smi_id("MIG-5e6f", mig), "MIG-5e6f7a8b-0000");
    }

    #[test]
    fn describes_this_machine() {
        let m = machine();
        assert!(m.logical_cpus >= 1);
        assert_eq!(m.arch, std::env::consts::ARCH);
        let line = m.fingerprint_line();
        assert!(
            line.starts_with(&m.cpu_model) && line.contains("logical cores"),
            "{line}"
        );
    }
}
