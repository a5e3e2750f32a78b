/* "just now" becomes "3 minutes ago" without a reload (the server wrote it once). */
import { $$ } from "./dom.js";

function ago(iso) {
  const seconds = (Date.now() - new Date(iso).getTime()) / 1000;
  if (!(seconds >= 60)) return "just now";
  const [size, unit] = [[31536000, "year"], [2592000, "month"], [604800, "week"], [86400, "day"], [3600, "hour"], [60, "minute"]].find(([s]) => seconds >= s);
  const n = Math.floor(seconds / size);
  return `${n} ${unit}${n === 1 ? "" : "s"} ago`;
}

export function keepTimesFresh(page) {
  setInterval(() => $$("[data-ago]", page).forEach((cell) => (cell.textContent = ago(cell.dataset.ago))), 30000);
}
