/* Small things on every page: menus that submit their form, copy buttons. */
import { $, $$ } from "./dom.js";

export function autosubmitMenus() {
  $$("form[data-autosubmit] select").forEach((select) =>
    select.addEventListener("change", () => select.form.submit())
  );
}

export function copyButtons() {
  document.addEventListener("click", async (event) => {
    const button = event.target.closest("[data-copy]");
    if (!button) return;
    const source = $(button.dataset.copy);
    const text = source ? source.textContent.trim() : "";
    let copied = false;
    try {
      await navigator.clipboard.writeText(text);
      copied = true;
    } catch (_error) {
      const area = document.createElement("textarea");
      area.value = text;
      document.body.append(area);
      area.select();
      copied = document.execCommand("copy");
      area.remove();
    }
    button.textContent = copied ? "Copied" : "Select and copy";
    setTimeout(() => (button.textContent = "Copy"), 1800);
  });
}
