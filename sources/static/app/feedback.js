/* What the person sees while and after something happens: toasts, field errors, busy buttons. */
import { $, $$ } from "./dom.js";

export function flash(text, kind) {
  // Toasts in a corner, so the page does not jump under the person's pointer.
  let box = $(".toasts");
  if (!box) {
    box = document.createElement("div");
    box.className = "toasts";
    box.setAttribute("aria-live", "polite");
    document.body.append(box);
  }
  const item = document.createElement("div");
  item.className = "flash-msg " + (kind || "success");
  item.setAttribute("role", "status");
  item.textContent = text;
  box.append(item);
  setTimeout(() => item.remove(), 6000);
}

export function clearErrors(root) {
  $$("[data-error-for]", root).forEach((el) => (el.textContent = ""));
  $$(".has-error", root).forEach((el) => el.classList.remove("has-error"));
}

export function showErrors(root, errors) {
  clearErrors(root);
  const general = $('[data-error-for="__all__"]', root);
  for (const [field, list] of Object.entries(errors || {})) {
    const text = [].concat(list).join(" ");
    const target = $(`[data-error-for="${CSS.escape(field)}"]`, root) || general;
    if (!target) continue;
    target.textContent = target.textContent ? target.textContent + " " + text : text;
    const wrap = target.closest(".field");
    if (wrap) wrap.classList.add("has-error");
  }
}

export function busy(button, on) {
  if (!button) return;
  if (on) {
    // The label as it is now: it may have changed since the last time (Add source, Upload, Upload 3 files).
    button.dataset.label = button.innerHTML;
    button.disabled = true;
    button.innerHTML = '<span class="spinner" aria-hidden="true"></span>' + button.dataset.label;
  } else {
    button.disabled = false;
    if (button.dataset.label) button.innerHTML = button.dataset.label;
    delete button.dataset.label;
  }
}
