// gpassk view: table sorting, the problems grid's filters and reloading when the run grows
// (readable math is the server's). Text only ever moves through textContent: nothing from a run
// becomes markup.
"use strict";

function cellValue(td) {
  const v = td.dataset.sort;
  if (v !== undefined) return parseFloat(v);
  const t = td.textContent.trim();
  const n = parseFloat(t);
  return /^[-+]?[0-9.]+/.test(t) && !isNaN(n) ? n : t.toLowerCase();
}

function sortBy(table, col, th) {
  const body = table.tBodies[0];
  const asc = th.getAttribute("aria-sort") !== "ascending";
  for (const h of table.tHead.rows[0].cells) h.removeAttribute("aria-sort");
  th.setAttribute("aria-sort", asc ? "ascending" : "descending");
  const rows = Array.from(body.rows);
  rows.sort((a, b) => {
    const x = cellValue(a.cells[col]), y = cellValue(b.cells[col]);
    const c = typeof x === typeof y ? (x < y ? -1 : x > y ? 1 : 0) : (typeof x === "number" ? -1 : 1);
    return asc ? c : -c;
  });
  for (const r of rows) body.appendChild(r);
}

function sortable() {
  for (const table of document.querySelectorAll("table.sortable")) {
    Array.from(table.tHead.rows[0].cells).forEach((th, i) => {
      th.addEventListener("click", () => sortBy(table, i, th));
      // Arrived from a model's value on the run page: its problems, least solved first.
      if (th.querySelector(".focus")) sortBy(table, i, th);
    });
  }
}

function filters() {
  const boxes = document.querySelectorAll("[data-filter]");
  if (!boxes.length) return;
  const apply = () => {
    let shown = 0;
    for (const row of document.querySelectorAll("table.grid tbody tr")) {
      let ok = true;
      for (const b of boxes) {
        const key = b.dataset.filter;
        if (key === "text") {
          const q = b.value.trim().toLowerCase();
          if (q && !row.dataset.text.toLowerCase().includes(q)) ok = false;
        } else if (b.checked && row.dataset[key] !== "1") ok = false;
      }
      row.hidden = !ok;
      if (ok) shown += 1;
    }
    const count = document.querySelector("[data-count]");
    if (count) count.textContent = String(shown);
  };
  for (const b of boxes) b.addEventListener("input", apply);
  apply();
}

function poll() {
  const url = document.body.dataset.poll;
  if (!url) return;
  let first = null;
  const tick = () => {
    fetch(url, { cache: "no-store" })
      .then((r) => (r.ok ? r.json() : null))
      .then((stamp) => {
        if (stamp === null) return;
        if (first === null) first = stamp;
        else if (stamp !== first && !document.querySelector("details[open]")) location.reload();
      })
      .catch(() => {});
  };
  tick();
  setInterval(tick, 3000);
}

// `#measure` or `#measure=420` (scripts/view-browser.sh): lays the page out that wide and writes
// its content width against the width it has, and its height, into the page, for a headless
// browser to read.
function measure() {
  const m = /^#measure(?:=(\d+))?$/.exec(location.hash);
  if (!m) return;
  if (m[1]) document.documentElement.style.width = m[1] + "px";
  setTimeout(() => {
    const out = document.createElement("pre");
    out.id = "measure";
    const b = document.body;
    const height = document.documentElement.scrollHeight;
    out.textContent = JSON.stringify({ page: b.scrollWidth, frame: b.clientWidth, height });
    b.appendChild(out);
  }, 200);
}

document.addEventListener("DOMContentLoaded", () => {
  measure();
  sortable();
  filters();
  poll();
});
