// trtmc report script: sortable and filterable tables, and a self-check that tests read.
// Plain ES5-style DOM code, no libraries, no network; works from file://.
(function () {
  "use strict";
  var body = document.body;
  var errors = 0;
  window.addEventListener("error", function () {
    errors += 1;
    body.setAttribute("data-report-errors", String(errors));
  });

  function cellKey(row, column) {
    var cell = row.cells[column];
    if (!cell) { return ""; }
    var sort = cell.getAttribute("data-sort");
    return sort !== null ? sort : cell.textContent.trim();
  }

  function compareKeys(x, y) {
    var nx = x === "" ? NaN : Number(x), ny = y === "" ? NaN : Number(y);
    var xNum = !isNaN(nx), yNum = !isNaN(ny);
    if (xNum && yNum) { return nx - ny; }
    if (xNum !== yNum) { return xNum ? -1 : 1; } // numbers before blanks and text
    return x.localeCompare(y, undefined, { numeric: true, sensitivity: "base" });
  }

  function makeSortable(table) {
    var headers = table.tHead ? table.tHead.rows[0].cells : [];
    Array.prototype.forEach.call(headers, function (th, column) {
      th.tabIndex = 0;
      th.setAttribute("aria-sort", "none");
      function sort() {
        var tbody = table.tBodies[0];
        var ascending = th.getAttribute("aria-sort") !== "ascending";
        var rows = Array.prototype.slice.call(tbody.rows);
        var keyed = rows.map(function (row, i) { return { row: row, key: cellKey(row, column), i: i }; });
        keyed.sort(function (a, b) {
          var c = compareKeys(a.key, b.key);
          if (c === 0) { c = a.i - b.i; return c; }
          return ascending ? c : -c;
        });
        var fragment = document.createDocumentFragment();
        keyed.forEach(function (k) { fragment.appendChild(k.row); });
        tbody.appendChild(fragment);
        Array.prototype.forEach.call(headers, function (other) {
          other.classList.remove("sorted", "asc");
          other.setAttribute("aria-sort", "none");
        });
        th.classList.add("sorted");
        if (ascending) { th.classList.add("asc"); }
        th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      }
      th.addEventListener("click", sort);
      th.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sort(); }
      });
    });
  }

  function makeFilter(box) {
    var table = document.getElementById(box.getAttribute("data-for"));
    if (!table || !table.tBodies[0]) { return; }
    var search = box.querySelector("input[type=search]");
    var selects = Array.prototype.slice.call(box.querySelectorAll("select[data-column]"));
    var count = box.querySelector(".count");
    var texts = null;
    function apply() {
      var rows = table.tBodies[0].rows;
      if (texts === null) {
        texts = new Map();
        Array.prototype.forEach.call(rows, function (row) { texts.set(row, row.textContent.toLowerCase()); });
      }
      var needle = search ? search.value.trim().toLowerCase() : "";
      var wanted = selects.map(function (s) { return { column: Number(s.getAttribute("data-column")), value: s.value }; })
        .filter(function (w) { return w.value !== ""; });
      var shown = 0;
      Array.prototype.forEach.call(rows, function (row) {
        var ok = needle === "" || texts.get(row).indexOf(needle) >= 0;
        for (var i = 0; ok && i < wanted.length; i++) {
          var cell = row.cells[wanted[i].column];
          var value = cell ? (cell.getAttribute("data-value") || cell.textContent.trim()) : "";
          ok = value === wanted[i].value;
        }
        row.hidden = !ok;
        if (ok) { shown += 1; }
      });
      if (count) { count.textContent = shown + " of " + rows.length + " rows"; }
    }
    if (search) { search.addEventListener("input", apply); }
    selects.forEach(function (s) { s.addEventListener("change", apply); });
    var clear = box.querySelector("button.clear");
    if (clear) {
      clear.addEventListener("click", function () {
        if (search) { search.value = ""; }
        selects.forEach(function (s) { s.value = ""; });
        apply();
      });
    }
    if (count) { count.textContent = table.tBodies[0].rows.length + " rows"; }
  }

  var tables = document.querySelectorAll("table.sortable");
  Array.prototype.forEach.call(tables, makeSortable);
  Array.prototype.forEach.call(document.querySelectorAll(".filters[data-for]"), makeFilter);

  // Self-test for headless browsers (open report.html#selftest): sorts and filters every table through
  // the same event handlers a person uses and records what happened in #self-check.
  function selfTest() {
    var problems = [];
    var t0 = performance.now();
    Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
      var tbody = table.tBodies[0];
      if (!tbody || tbody.rows.length < 2 || !table.tHead) { return; }
      var headers = table.tHead.rows[0].cells;
      var column = -1;
      for (var c = 0; c < headers.length && column < 0; c++) {
        if (headers[c].classList.contains("num")) {
          var key = cellKey(tbody.rows[0], c);
          if (key !== "" && !isNaN(Number(key))) { column = c; }
        }
      }
      if (column < 0) { return; }
      function keys() {
        return Array.prototype.map.call(tbody.rows, function (r) { return cellKey(r, column); })
          .filter(function (k) { return k !== ""; }).map(Number);
      }
      headers[column].click();
      var up = keys();
      for (var i = 1; i < up.length; i++) { if (up[i - 1] > up[i]) { problems.push(table.id + " ascending"); break; } }
      headers[column].click();
      var down = keys();
      for (var j = 1; j < down.length; j++) { if (down[j - 1] < down[j]) { problems.push(table.id + " descending"); break; } }
      var box = document.querySelector(".filters[data-for='" + table.id + "']");
      var search = box && box.querySelector("input[type=search]");
      if (search) {
        var needle = tbody.rows[tbody.rows.length - 1].cells[1].textContent.trim().toLowerCase();
        search.value = needle;
        search.dispatchEvent(new Event("input"));
        var shown = Array.prototype.filter.call(tbody.rows, function (r) { return !r.hidden; });
        if (shown.length < 1) { problems.push(table.id + " filter hides every row"); }
        shown.forEach(function (r) {
          if (r.textContent.toLowerCase().indexOf(needle) < 0) { problems.push(table.id + " filter shows a non-matching row"); }
        });
        search.value = "zz-no-row-has-this-zz";
        search.dispatchEvent(new Event("input"));
        if (Array.prototype.some.call(tbody.rows, function (r) { return !r.hidden; })) { problems.push(table.id + " filter shows rows it should hide"); }
        search.value = "";
        search.dispatchEvent(new Event("input"));
        if (Array.prototype.some.call(tbody.rows, function (r) { return r.hidden; })) { problems.push(table.id + " clearing the filter"); }
      }
    });
    body.setAttribute("data-selftest", problems.length === 0 ? "pass" : "fail");
    body.setAttribute("data-selftest-ms", String(Math.round(performance.now() - t0)));
    return problems;
  }

  // Layout check for headless browsers (open report.html#wrapcheck at the width to check): walks every
  // rendered text outside SVG character by character and counts line breaks inside a word, i.e. between
  // two non-space characters of one text node where the first is not a separator an identifier may break
  // after (`<wbr>` splits text nodes, so its breaks are not counted). Also counts table cells whose
  // content is wider than the cell. Recorded as data-midword-breaks, data-midword-samples (the first few,
  // `before|after`), data-wrapcheck-chars, data-overflowing-cells and data-wide-boxes (scroll boxes,
  // panels and figures wider than they are shown) on <body>.
  function wrapCheck() {
    var breaks = 0, samples = [], chars = 0;
    var root = document.querySelector("main") || body;
    var walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    var range = document.createRange();
    for (var node = walker.nextNode(); node; node = walker.nextNode()) {
      var parent = node.parentElement;
      if (!parent || parent.closest("svg, script, style")) { continue; }
      var s = node.data, lastTop = null, lastHeight = 0;
      for (var i = 0; i < s.length; i++) {
        var ch = s.charAt(i);
        if (/\s/.test(ch)) { lastTop = null; continue; }
        range.setStart(node, i);
        range.setEnd(node, i + 1);
        var rects = range.getClientRects();
        if (rects.length === 0) { lastTop = null; continue; }
        chars += 1;
        var r = rects[rects.length - 1];
        if (lastTop !== null && r.top > lastTop + lastHeight / 2 && !/[.\-_\/:,=@+)\]}]/.test(s.charAt(i - 1))) {
          breaks += 1;
          if (samples.length < 5) { samples.push(s.slice(Math.max(0, i - 12), i) + "|" + s.slice(i, i + 12)); }
        }
        lastTop = r.top;
        lastHeight = r.height;
      }
    }
    var overflowing = 0;
    Array.prototype.forEach.call(root.querySelectorAll("td, th"), function (cell) {
      if (cell.getClientRects().length && cell.scrollWidth > cell.clientWidth + 1) { overflowing += 1; }
    });
    // Boxes that scroll sideways at this width (a table wider than its panel).
    var wide = [];
    Array.prototype.forEach.call(root.querySelectorAll(".scroll, .panel, figure"), function (box) {
      if (box.getClientRects().length && box.scrollWidth > box.clientWidth + 1) {
        wide.push((box.id || box.className) + " " + box.scrollWidth + ">" + box.clientWidth);
      }
    });
    body.setAttribute("data-wide-boxes", String(wide.length));
    body.setAttribute("data-wide-samples", wide.slice(0, 5).join(" ; "));
    body.setAttribute("data-midword-breaks", String(breaks));
    body.setAttribute("data-midword-samples", samples.join(" ; "));
    body.setAttribute("data-wrapcheck-chars", String(chars));
    body.setAttribute("data-overflowing-cells", String(overflowing));
  }
  if (location.hash === "#wrapcheck") { wrapCheck(); }

  var rows = 0;
  Array.prototype.forEach.call(document.querySelectorAll("table.grid"), function (t) {
    if (t.tBodies[0]) { rows += t.tBodies[0].rows.length; }
  });
  // Reading a layout property forces the first layout now, so data-ready-ms covers parsing, styling,
  // laying out every table row and this script (what the render benchmark reads).
  void body.offsetHeight;
  var readyMs = Math.round(performance.now());
  body.setAttribute("data-ready-ms", String(readyMs));
  body.setAttribute("data-report-ready", "true");
  var problems = location.hash === "#selftest" ? selfTest() : [];
  var check = document.getElementById("self-check");
  if (check) {
    var dark = window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
    check.textContent = "ready errors=" + errors + " tables=" + document.querySelectorAll("table.grid").length +
      " rows=" + rows + " svgs=" + document.querySelectorAll("svg").length +
      " scripts=" + document.querySelectorAll("script").length + " ms=" + readyMs +
      " theme=" + (dark ? "dark" : "light") +
      " bg=" + getComputedStyle(document.documentElement).backgroundColor.replace(/ /g, "") +
      (problems.length ? " problems=" + problems.join(";") : "");
  }
})();
