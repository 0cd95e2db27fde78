// The run page: zoom, pan and brush on the timeline, selecting spans, folding the tree, keys.
// State lives in the URL: the server answers every request with the URL to show (HX-Push-Url for
// a selection, HX-Replace-Url for a zoom step), so a reload or a copied link shows the same view.
(() => {
  "use strict";

  const WIDTH_COOKIE = "devtool_timeline_width";
  const ZOOM_STEP = 2;
  const MIN_WINDOW_MS = 0.001;

  const $ = (selector, root = document) => root.querySelector(selector);

  // Brings `element` into view inside its scrolling pane only (scrollIntoView would scroll the page
  // too, and a link opened at 1024×768 would show the tree but not the run's title).
  function reveal(element, pane, center = false) {
    if (!element || !pane) return;
    const box = element.getBoundingClientRect(), view = pane.getBoundingClientRect();
    const sticky = pane.querySelector(":scope > .tree-search");
    const top = view.top + (sticky && sticky.contains(element) ? 0 : sticky ? sticky.offsetHeight : 0);
    if (center) pane.scrollTop += box.top - top - (view.bottom - top - box.height) / 2;
    else if (box.top < top) pane.scrollTop -= top - box.top;
    else if (box.bottom > view.bottom) pane.scrollTop += box.bottom - view.bottom;
  }
  const revealRow = (row, center) => row && reveal(row, row.closest(".tree-pane"), center);

  // The tree and the detail fill the window below the timeline (at least 320 px), each scrolling
  // on its own; the timeline's height changes with its lanes, so this is done after every swap.
  function fitPanes() {
    const lower = $("#selection");
    if (!lower) return;
    const top = lower.getBoundingClientRect().top + window.scrollY;
    lower.style.height = `${Math.max(320, Math.floor(window.innerHeight - top - 12))}px`;
  }
  const workspace = () => $("#workspace");
  const timeline = () => $("#timeline");

  function paneWidth() {
    const pane = $(".timeline-pane");
    return pane ? Math.max(200, Math.floor(pane.clientWidth - 22)) : 1200;
  }

  function currentWindow() {
    const t = timeline();
    return {
      start: +t.dataset.start, end: +t.dataset.end,
      runStart: +t.dataset.runStart, runEnd: +t.dataset.runEnd, width: +t.dataset.width,
    };
  }

  function fmt(ms) { return ms.toFixed(3).replace(/\.?0+$/, ""); }

  function query(span, start, end, extra = {}) {
    const params = new URLSearchParams();
    if (span) params.set("span", span);
    if (start !== null && end !== null) { params.set("start", fmt(start)); params.set("end", fmt(end)); }
    for (const [key, value] of Object.entries(extra)) params.set(key, value);
    return params.toString();
  }

  // The window to ask for, or nulls for the whole run (so the URL stays short and follows a live run).
  function clampWindow(start, end) {
    const { runStart, runEnd } = currentWindow();
    const width = Math.max(end - start, MIN_WINDOW_MS);
    if (width >= runEnd - runStart) return [null, null];
    if (start < runStart) [start, end] = [runStart, runStart + width];
    if (end > runEnd) [start, end] = [runEnd - width, runEnd];
    return [start, end];
  }

  // Zoom steps come fast (keys, wheel, a width fix at load): only the answer to the latest is drawn.
  let timelineRequest = 0;
  function zoomTo(start, end) {
    const [s, e] = clampWindow(start, end);
    // The page says where its parts are (`data-*-url`): the server owns its URLs.
    const url = `${workspace().dataset.timelineUrl}?${query(workspace().dataset.span, s, e, { w: paneWidth() })}`;
    timelineRequest += 1;
    htmx.ajax("GET", url, { target: "#timeline", swap: "outerHTML", headers: { "X-Timeline-Request": String(timelineRequest) } });
  }

  // A history entry keeps the page as its URL says: no half-made keyboard move in it.
  document.addEventListener("htmx:beforeHistorySave", () => {
    document.querySelectorAll("#tree .row.pending").forEach((row) => row.classList.remove("pending"));
  });

  document.addEventListener("htmx:beforeSwap", (event) => {
    const sent = event.detail.requestConfig && event.detail.requestConfig.headers["X-Timeline-Request"];
    if (sent && Number(sent) !== timelineRequest) event.detail.shouldSwap = false;
  });

  function zoomBy(factor, centerMs) {
    const { start, end } = currentWindow();
    const center = centerMs ?? (start + end) / 2;
    zoomTo(center - (center - start) / factor, center + (end - center) / factor);
  }

  function select(span) {
    const { start, end, runStart, runEnd } = currentWindow();
    const whole = start <= runStart && end >= runEnd;
    const url = `${workspace().dataset.selectUrl}?${query(span, whole ? null : start, whole ? null : end)}`;
    // The timeline stays: only the tree and the detail are asked for; the bar is marked when they
    // arrive (marking it now would put the new selection in the history entry of the old one).
    htmx.ajax("GET", url, { target: "#selection", swap: "outerHTML" });
  }

  // A click on a merged bar selects the first span it holds and zooms in on the bar, in one request
  // for the whole workspace (the server finds the span; the URL it pushes names it).
  function pickFrom(bar) {
    const start = +bar.dataset.start, end = +bar.dataset.end;
    const pad = Math.max((end - start) * 0.1, MIN_WINDOW_MS);
    const [s, e] = clampWindow(start - pad, end + pad);
    const pick = `${bar.dataset.row},${start},${end},${bar.dataset.kind}`;
    const url = `${workspace().dataset.pageUrl}?${query(null, s, e, { pick, w: paneWidth() })}`;
    timelineRequest += 1;
    htmx.ajax("GET", url, { target: "#workspace", swap: "outerHTML" });
  }

  // The selected span's bar, or the merged bar that holds it (same row and kind, its start inside).
  function markSelectedBar() {
    const selection = $("#selection");
    if (selection) workspace().dataset.span = selection.dataset.span;
    const span = workspace().dataset.span;
    document.querySelectorAll("#bars rect.selected").forEach((bar) => bar.classList.remove("selected"));
    if (!span) return;
    const own = document.querySelectorAll(`#bars rect[data-span="${CSS.escape(span)}"]`);
    own.forEach((bar) => bar.classList.add("selected"));
    if (own.length || !selection || !selection.dataset.row) return;
    const { row, kind } = selection.dataset, at = +selection.dataset.start;
    for (const bar of document.querySelectorAll(`#bars rect[data-count][data-row="${CSS.escape(row)}"]`)) {
      if (bar.dataset.kind === kind && +bar.dataset.start <= at && at <= +bar.dataset.end) bar.classList.add("selected");
    }
  }

  // -- timeline: click, brush, wheel -------------------------------------------------------------

  let brush = null;

  function msAt(clientX) {
    const bars = $("#bars");
    const { start, end, width } = currentWindow();
    const x = clientX - bars.getBoundingClientRect().left;
    return start + (x / width) * (end - start);
  }

  document.addEventListener("mousedown", (event) => {
    if (event.button !== 0 || !event.target.closest("#bars")) return;
    const host = timeline();
    const left = host.getBoundingClientRect().left;
    const box = document.createElement("div");
    box.className = "brush";
    host.appendChild(box);
    brush = { x0: event.clientX, left, box, target: event.target };
    event.preventDefault();
  });

  document.addEventListener("mousemove", (event) => {
    if (!brush) return;
    const [a, b] = [brush.x0, event.clientX].sort((p, q) => p - q);
    Object.assign(brush.box.style, { left: `${a - brush.left}px`, width: `${b - a}px` });
  });

  document.addEventListener("mouseup", (event) => {
    if (!brush) return;
    const { x0, box, target } = brush;
    brush = null;
    box.remove();
    if (Math.abs(event.clientX - x0) > 4) {
      const [a, b] = [msAt(x0), msAt(event.clientX)].sort((p, q) => p - q);
      zoomTo(a, b);
    } else if (target.matches("rect.bar[data-span]")) {
      select(target.dataset.span);
    } else if (target.matches("rect.bar[data-count]")) {
      pickFrom(target);
    }
  });

  let wheel = null;
  document.addEventListener("wheel", (event) => {
    if (!event.target.closest("#bars")) return;
    event.preventDefault();
    const { start, end } = currentWindow();
    wheel = wheel || { factor: 1, shift: 0, at: msAt(event.clientX) };
    if (event.shiftKey || Math.abs(event.deltaX) > Math.abs(event.deltaY)) {
      wheel.shift += ((event.deltaX || event.deltaY) / paneWidth()) * (end - start);
    } else {
      wheel.factor *= Math.exp(-event.deltaY * 0.002);
    }
    clearTimeout(wheel.timer);
    wheel.timer = setTimeout(() => {
      const { factor, shift, at } = wheel;
      wheel = null;
      const s = at - (at - start) / factor + shift, e = at + (end - at) / factor + shift;
      zoomTo(s, e);
    }, 120);
  }, { passive: false });

  // -- tooltip -------------------------------------------------------------------------------------

  const tip = document.createElement("div");
  tip.className = "tooltip";
  tip.hidden = true;
  document.addEventListener("DOMContentLoaded", () => document.body.appendChild(tip));
  document.addEventListener("mouseover", (event) => {
    const bar = event.target.closest && event.target.closest("rect.bar");
    if (!bar) { tip.hidden = true; return; }
    tip.textContent = bar.dataset.title;
    tip.hidden = false;
  });
  document.addEventListener("mousemove", (event) => {
    if (!tip.hidden) Object.assign(tip.style, { left: `${event.clientX + 12}px`, top: `${event.clientY + 14}px` });
  });

  // -- buttons, overview, selection links ------------------------------------------------------------

  document.addEventListener("click", (event) => {
    const zoom = event.target.closest("[data-zoom]");
    if (zoom) {
      const how = zoom.dataset.zoom;
      if (how === "reset") zoomTo(-Infinity, Infinity);
      else zoomBy(how === "in" ? ZOOM_STEP : 1 / ZOOM_STEP);
      return;
    }
    const overview = event.target.closest("#overview");
    if (overview) {
      const { start, end, runStart, runEnd } = currentWindow();
      const fraction = (event.clientX - overview.getBoundingClientRect().left) / overview.clientWidth;
      const center = runStart + fraction * (runEnd - runStart);
      zoomTo(center - (end - start) / 2, center + (end - start) / 2);
      return;
    }
    const toggle = event.target.closest("button.toggle");
    if (toggle) { fold(toggle.closest("li.node")); return; }
    const link = event.target.closest("a.select[data-span]");
    if (link && !(event.metaKey || event.ctrlKey || event.shiftKey || event.button)) {
      event.preventDefault();
      select(link.dataset.span);
    }
  });

  function fold(node, open) {
    const children = $(":scope > ul.children", node);
    if (!children) return;
    const expand = open ?? node.getAttribute("aria-expanded") !== "true";
    node.setAttribute("aria-expanded", String(expand));
    children.hidden = !expand;
    if (expand && !children.children.length) {
      htmx.ajax("GET", $(":scope > .row .toggle", node).dataset.children, { target: children, swap: "innerHTML" });
    }
  }

  // -- keys ------------------------------------------------------------------------------------------

  let pending = null;
  function moveSelection(link) {
    document.querySelectorAll("#tree .row.pending").forEach((row) => row.classList.remove("pending"));
    link.closest(".row").classList.add("pending");
    link.focus({ preventScroll: true });  // the focus goes with the selection: Tab continues from here
    revealRow(link.closest(".row"));
    clearTimeout(pending);
    pending = setTimeout(() => select(link.dataset.span), 180);
  }

  // The find box: ↓/↑ move through its hits, Enter opens the chosen one (the first by default; when
  // the hits for what was typed have not come yet, the first of them once they do).
  let openWhenFound = false;
  const hits = () => [...document.querySelectorAll("#search-results a.select")];
  const hitsAnswer = () => { const list = $("#search-results .hits"); return list ? list.dataset.q : null; };

  function chooseHit(link) {
    hits().forEach((a) => { a.classList.toggle("active", a === link); a.setAttribute("aria-selected", String(a === link)); });
    if (link) reveal(link, $("#search-results .hits"));
  }

  function findBoxKey(event, box) {
    const found = hits();
    const current = found.findIndex((a) => a.classList.contains("active"));
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      if (!found.length) return;
      const step = event.key === "ArrowDown" ? 1 : -1;
      chooseHit(found[current < 0 ? (step > 0 ? 0 : found.length - 1) : Math.min(found.length - 1, Math.max(0, current + step))]);
    } else if (event.key === "Enter") {
      event.preventDefault();
      if (found.length && hitsAnswer() === box.value.trim()) select(found[Math.max(current, 0)].dataset.span);
      else if (box.value.trim()) openWhenFound = true;
    } else if (event.key === "Escape") {
      box.blur();
    }
  }

  document.addEventListener("htmx:afterSwap", (event) => {
    if (!event.detail.target || event.detail.target.id !== "search-results") return;
    const found = hits();
    if (found.length) chooseHit(found[0]);
    if (openWhenFound && found.length && hitsAnswer() === $("#span-search").value.trim()) {
      openWhenFound = false;
      select(found[0].dataset.span);
    }
  });

  document.addEventListener("keydown", (event) => {
    if (!workspace() || event.metaKey || event.ctrlKey || event.altKey) return;
    if (event.target.id === "span-search") { findBoxKey(event, event.target); return; }
    const typing = event.target.closest("input, textarea, select");
    if (typing) {
      if (event.key === "Escape") event.target.blur();
      return;
    }
    if (event.key === "/") { event.preventDefault(); $("#span-search").focus(); return; }
    if (event.key === "[") { zoomBy(1 / ZOOM_STEP); return; }
    if (event.key === "]") { zoomBy(ZOOM_STEP); return; }
    const links = [...document.querySelectorAll("#tree .row a.select")].filter((a) => a.offsetParent !== null);
    if (!links.length) return;
    const pending = links.findIndex((a) => a.closest(".row").classList.contains("pending"));
    const current = pending >= 0 ? pending : links.findIndex((a) => a.closest(".row").classList.contains("selected"));
    const node = current >= 0 ? links[current].closest("li.node") : null;
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      const next = current < 0 ? 0 : Math.min(links.length - 1, Math.max(0, current + (event.key === "ArrowDown" ? 1 : -1)));
      moveSelection(links[next]);
    } else if (event.key === "ArrowRight" && node) {
      event.preventDefault();
      if (node.getAttribute("aria-expanded") === "false") fold(node, true);
      else if (current + 1 < links.length) moveSelection(links[current + 1]);
    } else if (event.key === "ArrowLeft" && node) {
      event.preventDefault();
      if (node.getAttribute("aria-expanded") === "true") fold(node, false);
      else {
        const parent = node.parentElement.closest("li.node");
        if (parent) moveSelection($(":scope > .row a.select", parent));
      }
    }
  });

  // -- after each swap: the overview's window, the drawn width, the selected node in view --------------

  // After any swap: the overview's window box, and the pane's width remembered for the next page.
  function settle() {
    const t = timeline();
    if (!t) return;
    const { start, end, runStart, runEnd } = currentWindow();
    const box = $("#overview-window");
    if (box) {
      const total = Math.max(runEnd - runStart, 1e-9), strip = +$("#overview").getAttribute("width");
      const x = Math.max(0, ((start - runStart) / total) * strip);
      box.setAttribute("x", x.toFixed(1));
      box.setAttribute("width", Math.max(2, ((Math.min(end, runEnd) - Math.max(start, runStart)) / total) * strip).toFixed(1));
    }
    document.cookie = `${WIDTH_COOKIE}=${paneWidth()}; path=/; SameSite=Lax; max-age=31536000`;
  }

  // On load and on resize only: a timeline drawn for another width is asked for again at this one.
  // (Never after a swap: a zoom already asked at the pane's width, and a second request would race it.)
  function fitWidth() {
    const t = timeline();
    if (!t || timelineRequest > 0 && !resized) return;
    resized = false;
    const { start, end, width } = currentWindow();
    if (Math.abs(paneWidth() - width) > 8) zoomTo(start, end);
  }

  document.addEventListener("htmx:afterSettle", (event) => {
    settle();
    markSelectedBar();
    fitPanes();
    if (event.detail.target && ["workspace", "selection"].includes(event.detail.target.id)) {
      revealRow($("#tree .row.selected"));
      // The swap took the focused row with it: the focus goes to the selected one, not back to the top.
      const link = $("#tree .row.selected a.select");
      if (link && (!document.activeElement || document.activeElement === document.body)) link.focus({ preventScroll: true });
    }
  });
  document.addEventListener("DOMContentLoaded", () => {
    settle();
    fitWidth();
    fitPanes();
    revealRow($("#tree .row.selected"), true);
  });
  let resizing = null;
  let resized = false;
  window.addEventListener("resize", () => {
    clearTimeout(resizing);
    resizing = setTimeout(() => { resized = true; fitWidth(); settle(); fitPanes(); }, 250);
  });
})();
