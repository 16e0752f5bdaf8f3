//! The machine a result or a tuning cache was produced on, and the programs it has.

use std::path::PathBuf;

use crate::artifacts::MachineInfo;

/// An executable program: `name` as a path when it holds a `/`, else the first match on `PATH`.
pub fn find_program(name: &str) -> Option<PathBuf> {
    which::which(name).ok()
}

/// Describes this machine: host, OS and kernel, CPU model and count, memory, and the GPUs `nvidia-smi -L`
/// lists (none when it is not on `PATH`).
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
    let gpus = find_program("nvidia-smi")
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

impl MachineInfo {
    /// One line for a tuning cache's fingerprint: CPU model, logical cores, OS family and architecture.
    /// Host name, kernel and distribution are left out, so that neither a kernel update nor a sibling
    /// node makes a cache look foreign.
    pub fn fingerprint_line(&self) -> String {
        format!(
            "{}; {} logical cores; {} {}",
            self.cpu_model,
            self.logical_cpus,
            std::env::consts::OS,
            self.arch
        )
    }
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
