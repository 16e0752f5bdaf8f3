// Sortable, filterable tables; works from file:// with no network.
document.querySelectorAll("table.sortable").forEach(function (table) {
  table.querySelectorAll("th").forEach(function (th, column) {
    th.addEventListener("click", function () {
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      var ascending = th.dataset.order !== "asc";
      th.dataset.order = ascending ? "asc" : "desc";
      rows.sort(function (a, b) {
        var x = a.cells[column] ? a.cells[column].textContent.trim() : "";
        var y = b.cells[column] ? b.cells[column].textContent.trim() : "";
        var nx = parseFloat(x), ny = parseFloat(y);
        var cmp = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y);
        return ascending ? cmp : -cmp;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
var filter = document.getElementById("filter");
if (filter) {
  filter.addEventListener("input", function () {
    var needle = filter.value.toLowerCase();
    document.querySelectorAll("#summary-table tbody tr").forEach(function (row) {
      row.style.display = row.textContent.toLowerCase().indexOf(needle) >= 0 ? "" : "none";
    });
  });
}
