// The run page's "why" keys and marks: `n`/`p` select the next/previous span where a failure began
// (the cause bar's `data-errors`), "errors only" dims what did not fail, turns whose answer was
// refused are drawn failed on the timeline, and the text found (the find box's, or `?q=` of a link
// from the runs search) is marked in the selected span's detail and scrolled into view.
(() => {
  "use strict";

  const $ = (selector, root = document) => root.querySelector(selector);
  const ERRORS_ONLY = "errors-only";

  // Selecting goes through run.js's own click handling: a link to the span, clicked.
  function open(span) {
    const workspace = $("#workspace");
    if (!workspace || !span) return;
    const link = document.createElement("a");
    link.className = "select";
    link.dataset.span = span;
    link.href = `${workspace.dataset.pageUrl}?span=${encodeURIComponent(span)}`;
    link.hidden = true;
    workspace.appendChild(link);
    link.click();
    link.remove();
  }

  const listOf = (name) => {
    const cause = $("#cause");
    return cause && cause.dataset[name] ? cause.dataset[name].split(" ") : [];
  };

  // The error last asked for, until its selection arrives: keys pressed meanwhile step on from it.
  let wanted = null;

  function step(forward) {
    const errors = listOf("errors");
    if (!errors.length) return;
    const current = wanted ?? (($("#selection") || {}).dataset?.span || "");
    const at = errors.indexOf(current);
    let next;
    if (at < 0) next = forward ? 0 : errors.length - 1;
    else next = Math.min(errors.length - 1, Math.max(0, at + (forward ? 1 : -1)));
    if (errors[next] === current) return;
    wanted = errors[next];
    open(wanted);
  }

  document.addEventListener("keydown", (event) => {
    if (!$("#workspace") || event.metaKey || event.ctrlKey || event.altKey) return;
    if (event.target.closest("input, textarea, select")) return;
    if (event.key === "n" || event.key === "p") {
      event.preventDefault();
      step(event.key === "n");
    }
  });

  document.addEventListener("change", (event) => {
    if (event.target.id !== ERRORS_ONLY) return;
    document.body.classList.toggle(ERRORS_ONLY, event.target.checked);
  });

  // The text to mark: what the find box holds, else the `q` of the address (a link from the runs search).
  function findText() {
    const box = $("#span-search");
    const typed = box ? box.value.trim() : "";
    return typed || new URLSearchParams(location.search).get("q") || "";
  }

  // Wraps each match of `text` in the detail pane's text in <mark class="found"> (text nodes only: the
  // detail's HTML is never parsed again), opens the <details> around the first and scrolls to it.
  function markFound() {
    const detail = $("#detail");
    const text = findText().toLowerCase();
    if (!detail || !text) return;
    const walker = document.createTreeWalker(detail, NodeFilter.SHOW_TEXT);
    const nodes = [];
    while (walker.nextNode()) {
      const node = walker.currentNode;
      // A <textarea>'s text is its value, not drawn nodes (the fork editor's): a mark there never shows.
      if (node.parentElement.closest("mark.found, textarea") || !node.nodeValue.toLowerCase().includes(text)) continue;
      nodes.push(node);
    }
    let first = null;
    for (const node of nodes) {
      let rest = node;
      let at = rest.nodeValue.toLowerCase().indexOf(text);
      while (at >= 0) {
        const hit = rest.splitText(at);
        rest = hit.splitText(text.length);
        const mark = document.createElement("mark");
        mark.className = "found";
        hit.parentNode.replaceChild(mark, hit);
        mark.appendChild(hit);
        first = first || mark;
        at = rest.nodeValue.toLowerCase().indexOf(text);
      }
    }
    if (!first) return;
    for (let up = first.parentElement; up; up = up.parentElement) if (up.tagName === "DETAILS") up.open = true;
    const pane = detail.closest(".detail-pane") || detail;
    const box = first.getBoundingClientRect(), view = pane.getBoundingClientRect();
    pane.scrollTop += box.top - view.top - view.height / 3;
  }

  // A refused turn's bar is drawn failed, as its row in the tree is (its span completed: the run's
  // count of failed spans, and the bars of its status, stay the store's).
  function markAttempts() {
    for (const span of listOf("attempts")) {
      document.querySelectorAll(`#bars rect[data-span="${CSS.escape(span)}"]`).forEach((bar) => bar.classList.add("attempt"));
    }
  }

  function settle(event) {
    const box = $("#" + ERRORS_ONLY);
    if (box) box.checked = document.body.classList.contains(ERRORS_ONLY);
    const current = ($("#selection") || {}).dataset?.span || "";
    if (current === wanted) wanted = null;
    document.querySelectorAll("#cause a.select").forEach((a) => a.classList.toggle("current", a.dataset.span === current));
    markAttempts();
    // Only a newly shown detail: while the find box is typed in, its hits change, not the detail.
    const target = event && event.detail && event.detail.target;
    if (!target || ["selection", "workspace"].includes(target.id)) markFound();
  }

  document.addEventListener("htmx:afterSettle", settle);
  document.addEventListener("DOMContentLoaded", () => {
    // A link from the runs search (`?q=`): the find box shows the text, and its hits.
    const q = new URLSearchParams(location.search).get("q");
    const box = $("#span-search");
    if (q && box && !box.value) {
      box.value = q;
      htmx.trigger(box, "search");
    }
    settle(null);
  });
})();
