// Snapshot pages: the fork form's JSON editors check what is typed as it is typed (the server checks
// again), and refusals of htmx forms (a malformed upload) are shown, not dropped.
(() => {
  const check = (editor) => {
    const message = editor.parentElement.querySelector(".json-error");
    let problem = "";
    try {
      const value = JSON.parse(editor.value);
      if (value === null || typeof value !== "object" || Array.isArray(value)) problem = "memory must be a JSON object: { ... }";
    } catch (error) {
      problem = error.message;
    }
    editor.classList.toggle("invalid", problem !== "");
    editor.setAttribute("aria-invalid", problem ? "true" : "false");
    if (message) message.textContent = problem;
    const form = editor.closest("form");
    const save = form && form.querySelector("#save-fork");
    if (save) save.disabled = form.querySelector(".json-editor.invalid") !== null;
  };
  document.addEventListener("input", (event) => {
    if (event.target.matches?.(".json-editor")) check(event.target);
  });
  document.addEventListener("htmx:beforeSwap", (event) => {
    const status = event.detail.xhr.status;
    if (status >= 400 && status < 500 && event.detail.requestConfig?.elt?.closest?.(".snapshots-page")) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });
})();
