/* The settings page's widget preview follows the theme fields as they are edited. */
import { $ } from "./dom.js";

export function themePreview(preview) {
  const field = (name) => $(`[data-theme="${name}"]`);
  const luminance = (hex) => {
    const [r, g, b] = [1, 3, 5].map((i) => {
      const c = parseInt(hex.slice(i, i + 2), 16) / 255;
      return c <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4);
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  function update() {
    const accent = (field("accent") || {}).value || "#2f6df6";
    if (/^#[0-9a-f]{6}$/i.test(accent)) {
      const l = luminance(accent);
      const white = 1.05 / (l + 0.05);
      const dark = (l + 0.05) / (luminance("#111827") + 0.05);
      preview.style.setProperty("--wp-accent", accent);
      preview.style.setProperty("--wp-on-accent", white >= dark ? "#fff" : "#111827");
    }
    preview.classList.toggle("left", (field("position") || {}).value === "left");
    $("[data-wp-greeting]", preview).textContent = (field("greeting") || {}).value || "Hi! How can I help?";
    $("[data-wp-label]", preview).textContent = (field("label") || {}).value || "";
  }
  ["accent", "position", "greeting", "label"].forEach((name) => {
    const input = field(name);
    if (input) input.addEventListener("input", update);
    if (input) input.addEventListener("change", update);
  });
  update();
}
