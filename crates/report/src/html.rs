//! Escaped HTML building blocks and the page shell every trtmc report uses.
//!
//! [`Markup`] is HTML that is known to be safe: it is only ever made by escaping text ([`text`]), by the
//! components of this crate, or explicitly with [`Markup::trusted`] for literal markup written in code.
//! Every string that comes from a user or a file goes through [`text`] / [`escape`], so a model called
//! `<script>alert(1)</script>` shows up as those characters, never as an element.
//!
//! [`Page`] renders a complete self-contained document: the shared theme ([`crate::theme::CSS`]) and
//! script ([`crate::theme::JS`]) are inlined, and a Content-Security-Policy admits exactly those two blocks
//! (by SHA-256 hash) and `data:` images, nothing else: no network, no CDN, and no injected script could
//! run even if an escape were missed.

use std::fmt::Write as _;

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use sha2::{Digest, Sha256};

use crate::theme;

/// HTML that is safe to insert as is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Markup(String);

impl Markup {
    /// Literal markup written in code (never pass user or file input here: use [`text`]).
    pub fn trusted(s: impl Into<String>) -> Self {
        Markup(s.into())
    }
    /// The markup as HTML text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
    /// The markup as HTML text, by value.
    pub fn into_string(self) -> String {
        self.0
    }
    /// Whether there is no markup at all (nothing to render).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// Appends `other` after this markup.
    pub fn push(&mut self, other: &Markup) {
        self.0.push_str(&other.0);
    }
    /// Appends escaped text.
    pub fn push_text(&mut self, s: &str) {
        escape_into(&mut self.0, s);
    }
    /// Appends literal markup written in code.
    pub fn push_trusted(&mut self, s: &str) {
        self.0.push_str(s);
    }
    /// Concatenates pieces.
    pub fn concat<'a>(parts: impl IntoIterator<Item = &'a Markup>) -> Markup {
        let mut out = Markup::default();
        for p in parts {
            out.push(p);
        }
        out
    }
}

impl std::fmt::Display for Markup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Escapes text for element content and quoted attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    escape_into(&mut out, s);
    out
}

fn escape_into(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters other than tab/newline have no business in a report.
            c if c.is_control() && c != '\n' && c != '\t' => out.push('\u{fffd}'),
            _ => out.push(c),
        }
    }
}

/// Escaped text as markup.
pub fn text(s: &str) -> Markup {
    Markup(escape(s))
}

/// Characters after which an identifier may break: `tiny-cnn.classify/tiny-cnn/batch8` wraps after a
/// dot, hyphen, underscore, slash or colon, never inside `classify`.
const BREAK_AFTER: &[char] = &['.', '-', '_', '/', ':', ',', '=', '@', '+'];

/// Escaped text with a `<wbr>` (an optional line break) after each of [`BREAK_AFTER`], for identifiers
/// and paths in narrow cells: the browser breaks them at those points when it must, and never mid-word.
/// A separator between two digits (`1.039`, `1.31.1`) stays unbroken.
pub fn breakable(s: &str) -> Markup {
    let mut out = Markup::default();
    let mut start = 0;
    let mut previous = None;
    let mut chars = s.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let end = i + c.len_utf8();
        let next = chars.peek().map(|(_, n)| *n);
        let in_number = previous.is_some_and(|p: char| p.is_ascii_digit())
            && next.is_some_and(|n| n.is_ascii_digit());
        previous = Some(c);
        if BREAK_AFTER.contains(&c) && next.is_some_and(|n| !n.is_whitespace()) && !in_number {
            escape_into(&mut out.0, &s[start..end]);
            out.0.push_str("<wbr>");
            start = end;
        }
    }
    escape_into(&mut out.0, &s[start..]);
    out
}

/// A link to a file of the report's folder (`path` relative to it, or absolute) showing `label`.
pub fn file_link(path: &str, label: &Markup) -> Markup {
    el("a", &[("href", &href_for_path(path))], label)
}

/// An element with escaped attribute values around `body`: `el("td", &[("class", "num")], &text("1"))`.
pub fn el(tag: &str, attrs: &[(&str, &str)], body: &Markup) -> Markup {
    let mut m = open(tag, attrs);
    m.push(body);
    let _ = write!(m.0, "</{tag}>");
    m
}

/// An opening tag with escaped attribute values.
pub fn open(tag: &str, attrs: &[(&str, &str)]) -> Markup {
    let mut out = format!("<{tag}");
    for (k, v) in attrs {
        out.push(' ');
        out.push_str(k);
        out.push_str("=\"");
        escape_into(&mut out, v);
        out.push('"');
    }
    out.push('>');
    Markup(out)
}

/// A relative link target made from a path: each segment percent-encoded, `/` kept. Absolute paths and
/// `..` segments are allowed (a collection may sit beside its runs); schemes are not, since every segment
/// is encoded (`javascript:` becomes `javascript%3A`).
pub fn href_for_path(path: &str) -> String {
    let out = path
        .split('/')
        .map(|seg| utf8_percent_encode(seg, PATH_SEGMENT).to_string())
        .collect::<Vec<_>>()
        .join("/");
    if path.starts_with('/') {
        format!("file://{out}")
    } else {
        out
    }
}

/// What a path segment keeps unescaped: RFC 3986's unreserved characters. Everything else, `:` included,
/// is escaped, so no segment can start a scheme.
const PATH_SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// A status pill (`valid`, `invalid`, `completed`, `failed`, `partial`, …); the class picks the colour.
pub fn pill(label: &str, class: &str) -> Markup {
    el("span", &[("class", &format!("pill {class}"))], &text(label))
}

/// A definition grid of label/value pairs.
pub fn key_values(pairs: &[(&str, Markup)]) -> Markup {
    let mut m = Markup::trusted("<div class=\"kv\">");
    for (k, v) in pairs {
        m.push(&el("div", &[], &text(k)));
        m.push(&el("div", &[], v));
    }
    m.push_trusted("</div>");
    m
}

/// A coloured message box: `kind` is `error`, `warn` or `info`.
pub fn banner(kind: &str, body: &Markup) -> Markup {
    el("p", &[("class", &format!("banner {kind}"))], body)
}

/// One section of a page: a panel with an id (the navigation links to it) and a heading.
#[derive(Debug, Clone)]
pub struct Section {
    /// The panel's HTML id, the navigation's link target.
    pub id: String,
    /// The heading, as text (escaped when rendered).
    pub heading: String,
    /// The panel's content.
    pub body: Markup,
}

impl Section {
    /// A section with this id, heading and content.
    pub fn new(id: impl Into<String>, heading: impl Into<String>, body: Markup) -> Self {
        Section {
            id: id.into(),
            heading: heading.into(),
            body,
        }
    }
}

/// A complete report page: header (eyebrow, title, subtitle lines, status pill), navigation, sections,
/// footer, self-check marker, with the shared theme and script inlined.
#[derive(Debug, Clone, Default)]
pub struct Page {
    /// What kind of report this is (`run`, `report`, `tune`, `matrix`, `analyze`): shown as the eyebrow
    /// `trtmc-bench <kind>` and as `data-report-kind` on `<body>`.
    pub kind: String,
    /// The page's heading and `<title>`.
    pub title: String,
    /// Lines under the title, one paragraph each.
    pub subtitle: Vec<Markup>,
    /// The overall status pill, when the page has one.
    pub status: Option<Markup>,
    /// Notices shown above the sections.
    pub banners: Vec<Markup>,
    /// The page's panels, in order; the navigation lists them.
    pub sections: Vec<Section>,
    /// Content of the footer.
    pub footer: Markup,
    /// Extra CSS appended after the shared theme (keep it small; prefer theme classes).
    pub extra_css: String,
}

impl Page {
    /// An empty page of this kind and title.
    pub fn new(kind: &str, title: &str) -> Self {
        Page {
            kind: kind.into(),
            title: title.into(),
            ..Default::default()
        }
    }

    /// The complete, self-contained HTML document.
    pub fn render(&self) -> String {
        let css = if self.extra_css.is_empty() {
            theme::CSS.to_string()
        } else {
            format!("{}\n{}", theme::CSS, self.extra_css)
        };
        let js = theme::JS;
        let csp = format!(
            "default-src 'none'; style-src 'sha256-{}'; script-src 'sha256-{}'; img-src data:; base-uri 'none'; form-action 'none'",
            sha256_base64(css.as_bytes()),
            sha256_base64(js.as_bytes())
        );
        let body_len: usize = self.sections.iter().map(|s| s.body.0.len()).sum();
        let mut out = String::with_capacity(body_len + css.len() + js.len() + 4096);
        out.push_str("<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
        out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
        out.push_str("<meta name=\"color-scheme\" content=\"light dark\">\n");
        // Built from constants and base64 hashes only: nothing to escape.
        let _ = writeln!(
            out,
            "<meta http-equiv=\"Content-Security-Policy\" content=\"{csp}\">"
        );
        let _ = writeln!(out, "<title>{}</title>", escape(&self.title));
        out.push_str("<style>");
        out.push_str(&css);
        out.push_str("</style>\n</head>\n");
        let _ = writeln!(
            out,
            "<body data-report-kind=\"{}\" data-report-ready=\"false\" data-report-errors=\"0\">",
            escape(&self.kind)
        );
        out.push_str("<header class=\"top\">\n<div class=\"title\">\n");
        let _ = writeln!(
            out,
            "<p class=\"eyebrow\">trtmc-bench {}</p>",
            escape(&self.kind)
        );
        let _ = writeln!(out, "<h1 id=\"title\">{}</h1>", escape(&self.title));
        for line in &self.subtitle {
            let _ = writeln!(out, "<p class=\"muted subtitle\">{line}</p>");
        }
        out.push_str("</div>\n");
        if let Some(status) = &self.status {
            let _ = writeln!(out, "<div id=\"overall-status\">{status}</div>");
        }
        out.push_str("</header>\n");
        if self.sections.len() > 1 {
            out.push_str("<nav class=\"tabs\" aria-label=\"Sections\">");
            for s in &self.sections {
                let _ = write!(
                    out,
                    "<a href=\"#{}\">{}</a>",
                    escape(&s.id),
                    escape(&s.heading)
                );
            }
            out.push_str("</nav>\n");
        }
        for b in &self.banners {
            out.push_str(&b.0);
            out.push('\n');
        }
        out.push_str("<main>\n");
        for s in &self.sections {
            let _ = write!(
                out,
                "<section id=\"{id}\" class=\"panel\" aria-labelledby=\"{id}-h\">\n<h2 id=\"{id}-h\">{h}</h2>\n",
                id = escape(&s.id),
                h = escape(&s.heading)
            );
            out.push_str(&s.body.0);
            out.push_str("\n</section>\n");
        }
        out.push_str("</main>\n");
        let _ = writeln!(out, "<footer class=\"muted\">{}</footer>", self.footer);
        out.push_str("<div id=\"self-check\" hidden></div>\n<script>");
        out.push_str(js);
        out.push_str("</script>\n</body>\n</html>\n");
        out
    }
}

/// SHA-256 of `bytes` in standard base64, as CSP hash sources want it.
pub fn sha256_base64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(Sha256::digest(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_everywhere() {
        let probe = "<script>alert(1)</script>\"'&";
        assert_eq!(
            text(probe).as_str(),
            "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;"
        );
        let cell = el("td", &[("title", probe)], &text(probe));
        assert!(!cell.as_str().contains("<script"), "{cell}");
        assert!(cell.as_str().starts_with("<td title=\"&lt;script"));
        assert_eq!(escape("a\u{1b}[31mb"), "a\u{fffd}[31mb");
    }

    #[test]
    fn identifiers_break_only_after_separators_and_stay_escaped() {
        assert_eq!(
            breakable("tiny-cnn.classify/single").as_str(),
            "tiny-<wbr>cnn.<wbr>classify/<wbr>single"
        );
        assert_eq!(
            breakable("a.").as_str(),
            "a.",
            "no break after the last character"
        );
        assert_eq!(
            breakable("<b>.x").as_str(),
            "&lt;b&gt;.<wbr>x",
            "the text between breaks is escaped"
        );
        assert_eq!(breakable("").as_str(), "");
        assert_eq!(
            breakable("ratio 1.039, onnxruntime 1.31.1").as_str(),
            "ratio 1.039, onnxruntime 1.31.1",
            "numbers stay whole"
        );
    }

    #[test]
    fn csp_hashes_are_base64_sha256() {
        // sha256("abc") from FIPS 180-2, base64-encoded.
        assert_eq!(
            sha256_base64(b"abc"),
            "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0="
        );
    }

    #[test]
    fn hrefs_cannot_carry_a_scheme_or_break_the_attribute() {
        assert_eq!(
            href_for_path("runs/a b/report.html"),
            "runs/a%20b/report.html"
        );
        assert_eq!(
            href_for_path("javascript:alert(1)"),
            "javascript%3Aalert%281%29"
        );
        assert_eq!(href_for_path("../x\"/r.html"), "../x%22/r.html");
        assert_eq!(href_for_path("/abs/r.html"), "file:///abs/r.html");
    }

    #[test]
    fn page_has_a_csp_that_admits_exactly_its_own_blocks() {
        let mut page = Page::new("run", "t <b>");
        page.sections
            .push(Section::new("summary", "Summary", text("x")));
        let html = page.render();
        assert!(html.contains("<title>t &lt;b&gt;</title>"));
        let js_hash = sha256_base64(theme::JS.as_bytes());
        assert!(html.contains(&format!("script-src 'sha256-{js_hash}'")));
        assert!(html.contains("data-report-kind=\"run\""));
        assert!(!html.contains("http://") && !html.contains("https://"));
    }
}
