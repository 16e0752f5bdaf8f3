//! Provenance: which program, runtimes and machine produced a result.

use trtmc_core::artifacts::{MachineInfo, ProgramInfo};

pub fn program() -> ProgramInfo {
    ProgramInfo {
        name: "trtmc-bench".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        revision: env!("TRTMC_REVISION").into(),
        build_profile: if cfg!(debug_assertions) {
            "debug".into()
        } else {
            "release".into()
        },
    }
}

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
    let gpus = crate::launch::find_on_path("nvidia-smi")
        .and_then(|smi| std::process::Command::new(smi).arg("-L").output().ok())
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .map(str::to_string)
                .filter(|l| !l.is_empty())
                .collect()
        })
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
