//! The shared look: one stylesheet and one script for every trtmc report.
//!
//! Colours are CSS variables with a light and a dark set chosen by `prefers-color-scheme`. The class
//! vocabulary (`header.top`, `.eyebrow`, `.panel`, `.pill`, `table.grid`, `table.sortable`, `.filters`,
//! `.kv`, `.banner`, `.legend`, `.swatch`) is the one the analyze browser app already uses, so that app can
//! adopt [`CSS`] as its stylesheet unchanged.

/// The stylesheet (inlined by [`crate::html::Page`]).
pub const CSS: &str = include_str!("../assets/theme.css");

/// The script: sortable tables (`table.sortable`, numeric keys from `data-sort`), filters
/// (`.filters[data-for=TABLE_ID]` with a search box and `select[data-column=N]`), and the self-check
/// (`<body data-report-ready="true" data-report-errors="0" data-ready-ms="…">`, `#self-check`).
pub const JS: &str = include_str!("../assets/report.js");

/// Series colours (CSS classes `.c0` … `.c7` use the same values): mid-tones that read on both the light
/// and the dark background.
pub const PALETTE: [(u8, u8, u8); 8] = [
    (0x4e, 0x79, 0xa7),
    (0xf2, 0x8e, 0x2b),
    (0x59, 0xa1, 0x4f),
    (0xe1, 0x57, 0x59),
    (0x76, 0xb7, 0xb2),
    (0xb8, 0xa1, 0x1f),
    (0xb0, 0x7a, 0xa1),
    (0x9c, 0x75, 0x5f),
];

#[cfg(test)]
mod tests {
    use super::*;

    /// The custom properties (`--name: value;`) of the first block that starts at `marker`.
    fn variables(css: &str, marker: &str) -> Vec<(String, String)> {
        let start = css
            .find(marker)
            .unwrap_or_else(|| panic!("{marker} missing"));
        let block = &css[start..];
        let end = block.find('}').unwrap_or(block.len());
        block[..end]
            .split(';')
            .filter_map(|decl| {
                let decl = decl.trim();
                let at = decl.find("--")?;
                let (name, value) = decl[at..].split_once(':')?;
                Some((name.trim().to_string(), value.trim().to_string()))
            })
            .collect()
    }

    #[test]
    fn light_and_dark_sets_are_complete() {
        let light = variables(CSS, ":root {");
        let dark = variables(CSS, "@media (prefers-color-scheme: dark)");
        let names = |v: &[(String, String)]| v.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
        assert_eq!(names(&light), names(&dark), "every colour has a dark value");
        assert!(light.len() >= 14, "{light:?}");
        assert!(CSS.contains("color-scheme: light dark"));
    }

    /// The analyze app ships its own stylesheet (its page loads it from a file next to index.html), with
    /// the same colours: a change to the theme must reach both.
    #[test]
    fn the_analyze_app_uses_the_same_colours() {
        let analyze = include_str!("../../analyze/assets/styles.css");
        for marker in [":root {", "@media (prefers-color-scheme: dark)"] {
            assert_eq!(
                variables(analyze, marker),
                variables(CSS, marker),
                "crates/analyze/assets/styles.css `{marker}` differs from the shared theme"
            );
        }
        assert!(analyze.contains("color-scheme: light dark"));
    }
}
