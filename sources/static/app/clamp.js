/* Long passages: a visible "…" where a passage is cut, and a button to read the whole of it. */
import { $$ } from "./dom.js";

export function clampTexts(root) {
  $$("[data-clamp]", root).forEach((text) => {
    if (text.dataset.clampReady || text.scrollHeight <= text.clientHeight + 1) return;
    text.dataset.clampReady = "1";
    text.classList.add("cut");
    const button = document.createElement("button");
    button.type = "button";
    button.className = "btn ghost small clamp-toggle";
    button.textContent = "Show the whole passage";
    button.setAttribute("aria-expanded", "false");
    button.addEventListener("click", () => {
      const open = text.classList.toggle("open");
      button.textContent = open ? "Show less" : "Show the whole passage";
      button.setAttribute("aria-expanded", String(open));
    });
    text.after(button);
  });
}
