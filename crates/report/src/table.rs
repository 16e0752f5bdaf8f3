//! Sortable, filterable data tables (the shared script sorts and filters them in the browser).
//!
//! ```
//! use trtmc_report::table::{Cell, Column, Table};
//! let mut t = Table::new("cases", vec![Column::text("model").filter(), Column::num("p50 ms")]);
//! t.push(vec![Cell::text("tiny-cnn"), Cell::num(1.234, "1.23")]);
//! let html = t.render();
//! assert!(html.as_str().contains("data-sort=\"1.234\""));
//! ```

use std::collections::BTreeSet;

use crate::html::{Markup, el, escape, text};

/// One column: a title, numeric or text alignment, an optional tooltip, and whether the filter bar offers
/// a drop-down of the column's distinct values.
#[derive(Debug, Clone)]
pub struct Column {
    /// The header text.
    pub title: String,
    /// Laid out as numbers (class `num`) instead of names.
    pub numeric: bool,
    /// The header's tooltip.
    pub help: Option<String>,
    /// Whether the filter bar offers a drop-down of the column's values.
    pub filter: bool,
}

impl Column {
    /// A text column.
    pub fn text(title: &str) -> Self {
        Column {
            title: title.into(),
            numeric: false,
            help: None,
            filter: false,
        }
    }
    /// A numeric column.
    pub fn num(title: &str) -> Self {
        Column {
            numeric: true,
            ..Column::text(title)
        }
    }
    /// Offer a drop-down filter over this column's values.
    pub fn filter(mut self) -> Self {
        self.filter = true;
        self
    }
    /// A tooltip explaining the column.
    pub fn help(mut self, help: &str) -> Self {
        self.help = Some(help.into());
        self
    }
}

/// One cell: its markup, the key it sorts by (`data-sort`; numbers sort numerically), and its plain value
/// for drop-down filters.
#[derive(Debug, Clone, Default)]
pub struct Cell {
    /// What the cell shows.
    pub body: Markup,
    /// The sort key (`data-sort`), when it differs from the shown text.
    pub sort: Option<String>,
    /// The plain value the drop-down filters match.
    pub value: String,
}

impl Cell {
    /// Escaped text.
    pub fn text(s: &str) -> Self {
        Cell {
            body: text(s),
            sort: None,
            value: s.into(),
        }
    }
    /// A number shown as `display`, sorted by `value` (non-finite values sort last).
    pub fn num(value: f64, display: &str) -> Self {
        Cell {
            body: text(display),
            sort: Some(if value.is_finite() {
                format!("{value}")
            } else {
                String::new()
            }),
            value: display.into(),
        }
    }
    /// An integer.
    pub fn int(value: u64) -> Self {
        Cell {
            body: text(&value.to_string()),
            sort: Some(value.to_string()),
            value: value.to_string(),
        }
    }
    /// Arbitrary markup with the plain `value` used for sorting and filtering.
    pub fn markup(body: Markup, value: &str) -> Self {
        Cell {
            body,
            sort: Some(value.into()),
            value: value.into(),
        }
    }
    /// An empty cell (sorts last).
    pub fn empty() -> Self {
        Cell {
            body: Markup::default(),
            sort: Some(String::new()),
            value: String::new(),
        }
    }
}

/// A table with a filter bar (search box, drop-downs for filter columns, a clear button and a row count).
#[derive(Debug, Clone)]
pub struct Table {
    /// The table's HTML id.
    pub id: String,
    /// The columns, in order.
    pub columns: Vec<Column>,
    /// The rows, one cell per column.
    pub rows: Vec<Vec<Cell>>,
    /// Show the filter bar (default true).
    pub filters: bool,
    /// Wrap in a scroll box with sticky headers (default true).
    pub scroll: bool,
    /// Accessible name of the table.
    pub label: String,
}

impl Table {
    /// An empty table with filters and scrolling on, labelled by its id.
    pub fn new(id: &str, columns: Vec<Column>) -> Self {
        Table {
            id: id.into(),
            label: id.into(),
            columns,
            rows: Vec::new(),
            filters: true,
            scroll: true,
        }
    }

    /// Appends a row.
    pub fn push(&mut self, row: Vec<Cell>) {
        self.rows.push(row);
    }

    /// The table, with its filter bar when `filters` is on.
    pub fn render(&self) -> Markup {
        let mut out = Markup::default();
        if self.filters {
            out.push_trusted(&format!(
                "<div class=\"filters\" data-for=\"{}\">",
                escape(&self.id)
            ));
            out.push_trusted(&format!(
                "<input type=\"search\" placeholder=\"Filter rows…\" aria-label=\"Filter {}\">",
                escape(&self.label)
            ));
            for (i, col) in self.columns.iter().enumerate() {
                if !col.filter {
                    continue;
                }
                let values: BTreeSet<&str> = self
                    .rows
                    .iter()
                    .filter_map(|r| r.get(i))
                    .map(|c| c.value.as_str())
                    .filter(|v| !v.is_empty())
                    .collect();
                if values.len() < 2 {
                    continue;
                }
                out.push_trusted(&format!(
                    "<select data-column=\"{i}\" aria-label=\"Filter by {t}\"><option value=\"\">all {t}</option>",
                    t = escape(&col.title)
                ));
                for v in values {
                    out.push_trusted(&format!(
                        "<option value=\"{v}\">{v}</option>",
                        v = escape(v)
                    ));
                }
                out.push_trusted("</select>");
            }
            out.push_trusted(
                "<button type=\"button\" class=\"clear\">Clear</button><span class=\"count muted\"></span></div>",
            );
        }
        if self.scroll {
            out.push_trusted("<div class=\"scroll\">");
        }
        out.push_trusted(&format!(
            "<table id=\"{}\" class=\"grid sortable\" aria-label=\"{}\"><thead><tr>",
            escape(&self.id),
            escape(&self.label)
        ));
        for col in &self.columns {
            let mut attrs: Vec<(&str, &str)> = Vec::new();
            if col.numeric {
                attrs.push(("class", "num"));
            }
            if let Some(h) = &col.help {
                attrs.push(("title", h));
            }
            out.push(&el("th", &attrs, &text(&col.title)));
        }
        out.push_trusted("</tr></thead><tbody>\n");
        let filter_columns: Vec<bool> = self.columns.iter().map(|c| c.filter).collect();
        for row in &self.rows {
            out.push_trusted("<tr>");
            for (i, cell) in row.iter().enumerate() {
                let numeric = self.columns.get(i).is_some_and(|c| c.numeric);
                let mut s = String::from("<td");
                if numeric {
                    s.push_str(" class=\"num\"");
                } else {
                    s.push_str(" class=\"name\"");
                }
                if let Some(key) = &cell.sort {
                    s.push_str(" data-sort=\"");
                    s.push_str(&escape(key));
                    s.push('"');
                }
                if filter_columns.get(i).copied().unwrap_or(false) {
                    s.push_str(" data-value=\"");
                    s.push_str(&escape(&cell.value));
                    s.push('"');
                }
                s.push('>');
                out.push_trusted(&s);
                out.push(&cell.body);
                out.push_trusted("</td>");
            }
            out.push_trusted("</tr>\n");
        }
        out.push_trusted("</tbody></table>");
        if self.scroll {
            out.push_trusted("</div>");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_and_filter_options_are_escaped() {
        let probe = "<script>alert(1)</script>\"'";
        let mut t = Table::new("t", vec![Column::text("model").filter(), Column::num("ms")]);
        t.push(vec![Cell::text(probe), Cell::num(1.5, "1.50")]);
        t.push(vec![Cell::text("b"), Cell::num(f64::NAN, "–")]);
        let html = t.render().into_string();
        assert!(!html.contains("<script"), "{html}");
        assert_eq!(
            html.matches("&lt;script&gt;").count(),
            4,
            "cell, data-value, option value and option text"
        );
        assert!(html.contains("<select data-column=\"0\""));
        assert!(html.contains("data-sort=\"1.5\""));
        assert!(html.contains("data-sort=\"\""), "NaN sorts as blank");
    }

    #[test]
    fn a_column_with_one_value_gets_no_drop_down() {
        let mut t = Table::new("t", vec![Column::text("runtime").filter()]);
        t.push(vec![Cell::text("tract")]);
        t.push(vec![Cell::text("tract")]);
        assert!(!t.render().as_str().contains("<select"));
    }
}
