// "Copy link" buttons: copy the page's own address (which holds its whole view state), or the path a
// button names, as an absolute URL. Plain http on a non-loopback host has no Clipboard API, so the
// link is then selected in a field for the user to copy.
document.addEventListener("click", async (event) => {
  const button = event.target.closest("[data-copy-link]");
  if (!button) return;
  const path = button.getAttribute("data-copy-link");
  const link = path ? new URL(path, window.location.origin).href : window.location.href;
  const done = (text) => {
    const previous = button.dataset.label || button.textContent;
    button.dataset.label = previous;
    button.textContent = text;
    setTimeout(() => { button.textContent = previous; }, 1500);
  };
  button.dataset.copied = link;
  if (navigator.clipboard && window.isSecureContext) {
    try {
      await navigator.clipboard.writeText(link);
      done("Copied");
      return;
    } catch (error) {
      // Fall through: show the link to copy by hand.
    }
  }
  let field = button.parentElement.querySelector("input.copy-link-field");
  if (!field) {
    field = document.createElement("input");
    field.className = "copy-link-field";
    field.readOnly = true;
    button.after(field);
  }
  field.value = link;
  field.select();
  done("Select and copy");
});
