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
