/* Bulk actions on the sources page: the ticked rows' checkboxes belong to the bulk form (form="bulk-form"). */
import { $, $$ } from "./dom.js";

// Returns updatePicked(), which the table calls after it replaced rows.
export function bulkActions(page) {
  const bulk = $("[data-bulk-form]", page);
  function updatePicked() {
    if (!bulk) return;
    const picked = $$("[data-pick]:checked", page).length;
    $("[data-bulk-count]", bulk).textContent = picked
      ? `${picked} source${picked === 1 ? "" : "s"} ticked`
      : "Tick sources to act on several at once.";
    $$("[data-bulk]", bulk).forEach((button) => (button.disabled = picked === 0));
    const all = $("[data-pick-all]", page);
    if (all) all.checked = picked > 0 && picked === $$("[data-pick]", page).length;
  }
  page.addEventListener("change", (event) => {
    if (event.target.matches("[data-pick-all]")) {
      $$("[data-pick]", page).forEach((box) => (box.checked = event.target.checked));
    }
    if (event.target.matches("[data-pick], [data-pick-all]")) updatePicked();
  });
  if (bulk) bulk.addEventListener("submit", (event) => {
    const action = event.submitter && event.submitter.value;
    const picked = $$("[data-pick]:checked", page).length;
    if (action === "delete" && !window.confirm(`Delete ${picked} source${picked === 1 ? "" : "s"}? This can't be undone.`)) {
      event.preventDefault();
    }
  });
  updatePicked();
  return updatePicked;
}
