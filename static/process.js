// The process page: up/down (or k/j) step through the journal's entries, and after every swap the
// selected entry's row is scrolled into view in the entries table. A row is one link (process.css).
(() => {
  "use strict";

  // Scrolls the entries table only (scrollIntoView would move the page too, past its title).
  function revealSelected() {
    const row = document.querySelector("#entries tr.selected");
    const pane = document.getElementById("entries-scroll");
    if (!row || !pane) return;
    const box = row.getBoundingClientRect(), view = pane.getBoundingClientRect();
    const head = pane.querySelector("thead")?.offsetHeight ?? 0;
    if (box.top < view.top + head) pane.scrollTop -= view.top + head - box.top;
    else if (box.bottom > view.bottom) pane.scrollTop += box.bottom - view.bottom;
  }

  function step(delta) {
    const rows = Array.from(document.querySelectorAll("#entries tr.entry-row"));
    if (!rows.length) return;
    const at = rows.findIndex((row) => row.classList.contains("selected"));
    const next = at < 0 ? (delta > 0 ? 0 : rows.length - 1) : at + delta;
    if (next < 0 || next >= rows.length) {
      // Past the first or last row of this page: the next page of the table, if there is one.
      const link = document.querySelector(delta > 0 ? ".ptable-pages a:last-child" : ".ptable-pages a:first-child");
      if (link && link.textContent.includes(delta > 0 ? "later" : "earlier")) link.click();
      return;
    }
    rows[next].querySelector("a.entry-link")?.click();
  }

  document.addEventListener("keydown", (event) => {
    if (!document.getElementById("process-workspace")) return;
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    if (event.target.closest?.("input, textarea, select, [contenteditable]")) return;
    if (event.key === "ArrowDown" || event.key === "j") step(1);
    else if (event.key === "ArrowUp" || event.key === "k") step(-1);
    else return;
    event.preventDefault();
  });
  document.addEventListener("htmx:afterSettle", (event) => {
    if (event.detail.target?.id !== "process-workspace") return;
    revealSelected();
    // The swap took the focused link with it: the focus goes to the selected entry (Tab goes on from there).
    const link = document.querySelector("#entries tr.selected a.entry-link");
    if (link && (!document.activeElement || document.activeElement === document.body)) link.focus({ preventScroll: true });
  });
  document.addEventListener("DOMContentLoaded", revealSelected);
})();
