"use strict";
// Sortable tables: click a heading to sort by it (numbers as numbers).
document.querySelectorAll("table.sortable").forEach(function (table) {
  var heads = table.tHead.rows[0].cells;
  Array.prototype.forEach.call(heads, function (th, col) {
    th.addEventListener("click", function () {
      var asc = th.getAttribute("aria-sort") !== "ascending";
      Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", asc ? "ascending" : "descending");
      var num = th.dataset.type === "num";
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = a.cells[col].textContent.trim(), y = b.cells[col].textContent.trim();
        var r;
        if (num) {
          var fx = parseFloat(x), fy = parseFloat(y);
          if (isNaN(fx)) fx = -Infinity;
          if (isNaN(fy)) fy = -Infinity;
          r = fx - fy;
        } else {
          r = x.localeCompare(y);
        }
        return asc ? r : -r;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
// A link to a cell (#c<id>) highlights every trial of that cell.
function highlight() {
  document.querySelectorAll("tr.hl").forEach(function (r) { r.classList.remove("hl"); });
  var m = /^#c(\d+)$/.exec(location.hash);
  if (!m) return;
  document.querySelectorAll('#trial-table tr[data-cell="' + m[1] + '"]').forEach(function (r) { r.classList.add("hl"); });
}
window.addEventListener("hashchange", highlight);
highlight();
