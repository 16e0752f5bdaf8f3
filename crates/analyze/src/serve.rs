//! `analyze serve DIR`: a loopback-only static file server for previewing a report folder.
//!
//! The report works from `file://` without it; the server exists for browsers or setups that
//! prefer http. It answers GET/HEAD for files inside the folder and nothing else.

use std::net::SocketAddr;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("{0} is not a loopback address; the preview server only listens on 127.0.0.0/8 or ::1")]
    NotLoopback(SocketAddr),
    #[error("{0} has no index.html; pass a folder created by `trtmc-bench analyze package`")]
    NotAReport(PathBuf),
    #[error("cannot listen on {addr}: {message}")]
    Bind { addr: SocketAddr, message: String },
}

fn content_type(path: &Path) -> &'static str {
    match path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("json") => "application/json",
        Some("md") => "text/markdown; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        _ => "application/octet-stream",
    }
}

/// Maps a request path to a file inside `root`, refusing anything that could leave it.
pub fn resolve(root: &Path, url: &str) -> Option<PathBuf> {
    let path = url.split(['?', '#']).next().unwrap_or("");
    let decoded = percent_encoding::percent_decode_str(path)
        .decode_utf8()
        .ok()?;
    let relative = decoded.trim_start_matches('/');
    let relative = if relative.is_empty() {
        "index.html"
    } else {
        relative
    };
    let rel = Path::new(relative);
    if rel.components().any(|c| !matches!(c, Component::Normal(_))) {
        return None;
    }
    let full = root.join(rel).canonicalize().ok()?;
    (full.starts_with(root) && full.is_file()).then_some(full)
}

/// Serves `dir` on `addr` until `stop` is set; `ready` receives the bound address (port 0 picks one).
pub fn serve(
    dir: &Path,
    addr: SocketAddr,
    stop: &AtomicBool,
    ready: impl FnOnce(SocketAddr),
) -> Result<(), ServeError> {
    if !addr.ip().is_loopback() {
        return Err(ServeError::NotLoopback(addr));
    }
    let root = dir
        .canonicalize()
        .map_err(|_| ServeError::NotAReport(dir.to_owned()))?;
    if !root.join("index.html").is_file() {
        return Err(ServeError::NotAReport(dir.to_owned()));
    }
    let server = tiny_http::Server::http(addr).map_err(|e| ServeError::Bind {
        addr,
        message: e.to_string(),
    })?;
    let bound = server.server_addr().to_ip().unwrap_or(addr);
    ready(bound);
    while !stop.load(Ordering::Relaxed) {
        let request = match server.recv_timeout(Duration::from_millis(200)) {
            Ok(Some(r)) => r,
            Ok(None) => continue,
            Err(_) => break,
        };
        let method_ok = matches!(
            request.method(),
            tiny_http::Method::Get | tiny_http::Method::Head
        );
        let file = if method_ok {
            resolve(&root, request.url())
        } else {
            None
        };
        let response = match file.and_then(|f| std::fs::read(&f).ok().map(|b| (f, b))) {
            Some((path, body)) => {
                let mut r = tiny_http::Response::from_data(body);
                for (k, v) in [
                    ("Content-Type", content_type(&path)),
                    ("X-Content-Type-Options", "nosniff"),
                    ("Cache-Control", "no-store"),
                ] {
                    if let Ok(h) = tiny_http::Header::from_bytes(k.as_bytes(), v.as_bytes()) {
                        r.add_header(h);
                    }
                }
                r
            }
            None => tiny_http::Response::from_string(if method_ok {
                "not found"
            } else {
                "method not allowed"
            })
            .with_status_code(if method_ok { 404 } else { 405 }),
        };
        // A client that went away is not the server's problem.
        let _ = request.respond(response);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_stays_inside_the_root() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("index.html"), "x").expect("write");
        let root = dir.path().canonicalize().expect("canonical");
        assert_eq!(resolve(&root, "/"), Some(root.join("index.html")));
        assert_eq!(
            resolve(&root, "/index.html?x=1"),
            Some(root.join("index.html"))
        );
        assert_eq!(resolve(&root, "/../etc/passwd"), None);
        assert_eq!(resolve(&root, "/%2e%2e/etc/passwd"), None);
        assert_eq!(resolve(&root, "/missing.js"), None);
        assert_eq!(resolve(&root, "/%zz"), None);
    }

    #[test]
    fn refuses_non_loopback_addresses() {
        let stop = AtomicBool::new(true);
        let err = serve(
            Path::new("."),
            "0.0.0.0:0".parse().expect("addr"),
            &stop,
            |_| {},
        )
        .expect_err("refused");
        assert!(matches!(err, ServeError::NotLoopback(_)));
    }
}
