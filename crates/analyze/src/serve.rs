//! `analyze serve DIR`: a loopback-only static file server for previewing a report folder.
//!
//! The report works from `file://` without it; the server exists for browsers or setups that
//! prefer http. It answers GET/HEAD for files inside the folder and nothing else:
//! - a request whose `Host` header is not the bound address or a loopback name (`localhost`,
//!   `127.0.0.1`, `[::1]`, with the bound port or none) gets 421 Misdirected Request, so a page of
//!   another site that a DNS rebinding points at this port reads nothing;
//! - any other method gets 405 with `Allow: GET, HEAD`;
//! - each connection is served on a thread of its own (at most [`MAX_CONNECTIONS`] at once; more get
//!   503), with read and write timeouts, so a client that stops reading never blocks another.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

/// Connections served at once; a further one is answered 503 and closed.
pub const MAX_CONNECTIONS: usize = 32;
/// How long a client may take to send its request head.
pub const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one write to a client may block (a client that stops reading is dropped after it).
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest request head read (request line and headers).
const MAX_HEAD: u64 = 16 * 1024;
/// How often the accept loop looks at `stop`.
const POLL: Duration = Duration::from_millis(20);

/// Why the preview server cannot start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// `--bind` names an address other than a loopback one.
    #[error("{0} is not a loopback address; the preview server only listens on 127.0.0.0/8 or ::1")]
    NotLoopback(SocketAddr),
    /// The folder is not a packaged report (it has no `index.html`).
    #[error("{0} has no index.html; pass a folder created by `trtmc-bench analyze package`")]
    NotAReport(PathBuf),
    /// The address cannot be listened on (in use, not permitted, …).
    #[error("cannot listen on {addr}: {message}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The system's error.
        message: String,
    },
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

/// Whether a request's `Host` header names this server: the bound address or a loopback name, with
/// the bound port or no port.
pub fn host_allowed(host: &str, bound: SocketAddr) -> bool {
    let host = host.trim().to_ascii_lowercase();
    let (name, port) = match host.rsplit_once(':') {
        // An IPv6 literal without a port ends with `]`.
        Some((name, port)) if !port.contains(']') => (name.to_string(), Some(port.to_string())),
        _ => (host.clone(), None),
    };
    if port.is_some_and(|p| p != bound.port().to_string()) {
        return false;
    }
    let literal = name.trim_start_matches('[').trim_end_matches(']');
    name == "localhost"
        || literal
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip == bound.ip() || (ip.is_loopback() && bound.ip().is_loopback()))
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
    let bind_error = |e: std::io::Error| ServeError::Bind {
        addr,
        message: e.to_string(),
    };
    let listener = TcpListener::bind(addr).map_err(bind_error)?;
    listener.set_nonblocking(true).map_err(bind_error)?;
    let bound = listener.local_addr().unwrap_or(addr);
    ready(bound);
    let root = Arc::new(root);
    let live = Arc::new(AtomicUsize::new(0));
    while !stop.load(Ordering::Relaxed) {
        let stream = match listener.accept() {
            Ok((stream, _)) => stream,
            Err(_) => {
                // Nothing waiting (or a connection that failed before it was accepted).
                std::thread::sleep(POLL);
                continue;
            }
        };
        if stream.set_nonblocking(false).is_err() {
            continue;
        }
        if live.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
            live.fetch_sub(1, Ordering::SeqCst);
            // A few bytes into a fresh socket's buffer: this write does not block.
            let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
            let _ = respond_text(&stream, 503, "too many connections", &[]);
            continue;
        }
        let (client_root, client_live) = (Arc::clone(&root), Arc::clone(&live));
        let spawned = std::thread::Builder::new()
            .name("serve-client".into())
            .spawn(move || {
                let _ = handle(stream, &client_root, bound);
                client_live.fetch_sub(1, Ordering::SeqCst);
            });
        if spawned.is_err() {
            live.fetch_sub(1, Ordering::SeqCst);
        }
    }
    Ok(())
}

/// Reads one request from `stream` and answers it; the connection is closed afterwards.
fn handle(stream: TcpStream, root: &Path, bound: SocketAddr) -> std::io::Result<()> {
    stream.set_read_timeout(Some(READ_TIMEOUT))?;
    stream.set_write_timeout(Some(WRITE_TIMEOUT))?;
    let mut reader = BufReader::new((&stream).take(MAX_HEAD));
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let mut host = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            // The head was cut short (or too long): not a request.
            return respond_text(&stream, 400, "bad request", &[]);
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.trim().eq_ignore_ascii_case("host")
        {
            host = Some(value.trim().to_string());
        }
    }
    let mut words = request_line.split_whitespace();
    let (Some(method), Some(target)) = (words.next(), words.next()) else {
        return respond_text(&stream, 400, "bad request", &[]);
    };
    if !host.as_deref().is_some_and(|h| host_allowed(h, bound)) {
        return respond_text(
            &stream,
            421,
            "this server answers only requests for its own loopback address (Host header)",
            &[],
        );
    }
    let head_only = match method {
        "GET" => false,
        "HEAD" => true,
        _ => {
            return respond_text(
                &stream,
                405,
                "method not allowed",
                &[("Allow", "GET, HEAD")],
            );
        }
    };
    let Some((path, mut file)) =
        resolve(root, target).and_then(|p| std::fs::File::open(&p).ok().map(|f| (p, f)))
    else {
        return respond_text(&stream, 404, "not found", &[]);
    };
    let length = file.metadata()?.len();
    let mut out = &stream;
    write_head(
        &mut out,
        200,
        length,
        &[
            ("Content-Type", content_type(&path)),
            ("X-Content-Type-Options", "nosniff"),
            ("Cache-Control", "no-store"),
        ],
    )?;
    if !head_only {
        std::io::copy(&mut file, &mut out)?;
    }
    out.flush()
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        421 => "Misdirected Request",
        _ => "Service Unavailable",
    }
}

fn write_head(
    out: &mut impl Write,
    status: u16,
    length: u64,
    headers: &[(&str, &str)],
) -> std::io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Length: {length}\r\nConnection: close\r\n",
        reason(status)
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    out.write_all(head.as_bytes())
}

fn respond_text(
    mut stream: &TcpStream,
    status: u16,
    body: &str,
    headers: &[(&str, &str)],
) -> std::io::Result<()> {
    let mut all = vec![("Content-Type", "text/plain; charset=utf-8")];
    all.extend_from_slice(headers);
    write_head(&mut stream, status, body.len() as u64, &all)?;
    stream.write_all(body.as_bytes())?;
    stream.flush()
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

    #[test]
    fn the_host_header_must_name_this_server() {
        let bound: SocketAddr = "127.0.0.1:8765".parse().expect("addr");
        for ok in [
            "127.0.0.1:8765",
            "localhost:8765",
            "LOCALHOST",
            "[::1]:8765",
            "127.0.0.1",
        ] {
            assert!(host_allowed(ok, bound), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:8765",
            "127.0.0.1:9999",
            "10.0.0.1:8765",
            "",
        ] {
            assert!(!host_allowed(bad, bound), "{bad}");
        }
    }
}
