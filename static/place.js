// Places what the server positioned: `data-x` and `data-w` (left and width, % of the track),
// `data-y` and `data-h` (top and height, px), `data-depth` (the `--depth` the CSS indents by).
// The pages' Content-Security-Policy refuses `style` attributes in HTML; styles set through the
// CSSOM by the page's own script are allowed, so positions come as numbers and are set here.
(() => {
  "use strict";

  const PLACES = [["x", "left", "%"], ["w", "width", "%"], ["y", "top", "px"], ["h", "height", "px"], ["depth", "--depth", ""]];
  const SELECTOR = PLACES.map(([key]) => `[data-${key}]`).join(", ");

  function place(root) {
    const elements = root.matches(SELECTOR) ? [root, ...root.querySelectorAll(SELECTOR)] : root.querySelectorAll(SELECTOR);
    for (const element of elements) {
      for (const [key, property, unit] of PLACES) {
        const value = Number(element.dataset[key] ?? NaN);
        if (Number.isFinite(value)) element.style.setProperty(property, `${value}${unit}`);
      }
    }
  }

  document.addEventListener("DOMContentLoaded", () => place(document.body));
  // New content (a swap, a history restore) comes with htmx:load; the body's own is the first load.
  document.addEventListener("htmx:load", (event) => { if (event.detail.elt !== document.body) place(event.detail.elt); });
  // A history snapshot is HTML that htmx parses again on "back", where the policy would refuse any
  // style attribute in it: whatever the CSSOM set (here, or by a page's script) is taken out for the
  // snapshot and put back right after it is taken.
  document.addEventListener("htmx:beforeHistorySave", (event) => {
    const styled = [...event.detail.historyElt.querySelectorAll("[style]")].map((element) => [element, element.style.cssText]);
    for (const [element] of styled) element.removeAttribute("style");
    queueMicrotask(() => { for (const [element, css] of styled) element.style.cssText = css; });
  });
})();
