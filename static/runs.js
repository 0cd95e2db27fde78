// The runs page: the filter form follows the URL (history, "show all"), files can be dropped anywhere
// on the page, and the answer to a refused upload or filter (a 4xx) is swapped in: it says what is wrong.
(() => {
  "use strict";

  function syncFilter() {
    const form = document.getElementById("runs-filter");
    if (!form) return;
    const params = new URLSearchParams(location.search);
    const q = form.querySelector("[name=q]");
    if (q && document.activeElement !== q) q.value = params.get("q") || "";
    const status = params.get("status") || "";
    for (const radio of form.querySelectorAll("[name=status]")) radio.checked = radio.value === status;
  }

  function showRefusal(text) {
    const box = document.getElementById("upload-result");
    if (!box) return;
    const note = document.createElement("div");
    note.className = "upload-outcome upload-failed";
    note.setAttribute("role", "alert");
    const p = document.createElement("p");
    p.className = "upload-error";
    p.textContent = text;
    note.append(p);
    box.replaceChildren(note);
  }

  function tooBig(form, files) {
    const limit = Number(form.dataset.maxBytes || 0);
    const total = Array.from(files).reduce((sum, file) => sum + file.size, 0);
    if (!limit || total <= limit) return false;
    showRefusal(`Not loaded: ${files.length === 1 ? files[0].name : files.length + " files"} ` +
      `(${(total / 1048576).toFixed(1)} MiB) is over the upload limit of ${form.dataset.maxLabel}.`);
    return true;
  }

  function send(form, files) {
    const input = form.querySelector("input[type=file]");
    if (files && files !== input.files) input.files = files;
    showChosen(input);
    if (!input.files.length || tooBig(form, input.files)) return;
    form.requestSubmit();
  }

  // The files stay chosen after a refused upload (named under the drop zone), so ticking "load the
  // good lines" and pressing Load, or the outcome's own button, sends them again; a load clears them.
  function showChosen(input) {
    const chosen = document.getElementById("upload-chosen");
    if (!chosen) return;
    const names = Array.from(input.files).map((file) => file.name);
    chosen.textContent = names.length ? `chosen: ${names.join(", ")}` : "";
  }

  function wireUpload() {
    const form = document.getElementById("upload-form");
    if (!form || form.dataset.wired) return;
    form.dataset.wired = "1";
    const input = form.querySelector("input[type=file]");
    input.addEventListener("change", () => send(form));
    // A chosen file uploads at once: Load with nothing chosen (the file went already) opens the file
    // picker, instead of sending an empty form whose refusal would replace the last upload's outcome.
    form.addEventListener("htmx:confirm", (event) => {
      if (event.detail.elt !== form || input.files.length) return;
      event.preventDefault();
      input.click();
    });
    form.addEventListener("htmx:afterRequest", (event) => {
      // By status: a refusal is swapped in as a page (htmx:beforeSwap below), which htmx then calls a success.
      if (event.detail.xhr && event.detail.xhr.status < 300) input.value = "";
      showChosen(input);
    });
  }

  document.addEventListener("click", (event) => {
    const retry = event.target.closest("button.upload-retry");
    const form = document.getElementById("upload-form");
    if (!retry || !form) return;
    form.querySelector("input[name=bad_lines]").checked = retry.dataset.retry === "skip";
    send(form);
  });

  const carriesFiles = (event) => Array.from(event.dataTransfer?.types || []).includes("Files");
  let depth = 0;
  document.addEventListener("dragenter", (event) => {
    if (!carriesFiles(event) || !document.getElementById("upload-form")) return;
    depth += 1;
    document.body.classList.add("dragging-file");
  });
  document.addEventListener("dragleave", () => {
    depth = Math.max(0, depth - 1);
    if (!depth) document.body.classList.remove("dragging-file");
  });
  document.addEventListener("dragover", (event) => {
    if (carriesFiles(event) && document.getElementById("upload-form")) event.preventDefault();
  });
  document.addEventListener("drop", (event) => {
    const form = document.getElementById("upload-form");
    depth = 0;
    document.body.classList.remove("dragging-file");
    if (!form || !carriesFiles(event)) return;
    event.preventDefault();
    send(form, event.dataTransfer.files);
  });

  document.addEventListener("htmx:configRequest", (event) => {
    if (event.detail.elt.id !== "runs-filter") return;
    // Empty fields stay out of the pushed URL: `/?q=acme`, not `/?q=acme&status=`.
    for (const key of ["q", "status"]) if (event.detail.parameters[key] === "") delete event.detail.parameters[key];
  });
  document.addEventListener("htmx:beforeSwap", (event) => {
    const status = event.detail.xhr.status;
    const from = event.detail.requestConfig?.elt;
    if (status >= 400 && status < 500 && from?.closest?.(".runs-page")) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });
  document.addEventListener("htmx:sendError", (event) => {
    if (event.detail.elt?.id === "upload-form") showRefusal("Not loaded: the server could not be reached.");
  });
  document.addEventListener("htmx:pushedIntoHistory", syncFilter);
  document.addEventListener("htmx:historyRestore", () => { syncFilter(); wireUpload(); });
  window.addEventListener("popstate", syncFilter);
  document.addEventListener("DOMContentLoaded", () => { syncFilter(); wireUpload(); });
})();
