/* Dialogs: opened by [data-open-dialog], closed by [data-close-dialog] or a click on the backdrop. */
import { $, $$ } from "./dom.js";

export function openDialog(dialog) {
  if (!dialog) return;
  if (dialog.open && !dialog.matches(":modal")) dialog.close();
  if (!dialog.open) dialog.showModal();
  const first = $("[autofocus], input:not([type=hidden]):not([type=radio]):not([disabled]), textarea", dialog);
  if (first && first.offsetParent !== null) first.focus();
}

export function installDialogs() {
  document.addEventListener("click", (event) => {
    const opener = event.target.closest("[data-open-dialog]");
    if (opener) {
      event.preventDefault();
      openDialog(document.getElementById(opener.dataset.openDialog));
      return;
    }
    const closer = event.target.closest("[data-close-dialog]");
    if (closer) {
      event.preventDefault();
      const dialog = closer.closest("dialog");
      if (dialog) dialog.close();
    }
  });
  // A click on the backdrop (the dialog element itself, outside its content) closes it.
  document.addEventListener("mousedown", (event) => {
    if (event.target.tagName === "DIALOG" && event.target.matches(":modal")) {
      const box = event.target.getBoundingClientRect();
      const inside =
        event.clientX >= box.left && event.clientX <= box.right && event.clientY >= box.top && event.clientY <= box.bottom;
      if (!inside) event.target.close();
    }
  });

  // Rendered open by the server (a form posted without JavaScript came back with errors): make it modal.
  $$("dialog[open]").forEach((dialog) => openDialog(dialog));
  if (new URLSearchParams(location.search).has("add") || new URLSearchParams(location.search).has("discover")) {
    history.replaceState(null, "", location.pathname);
  }
}
