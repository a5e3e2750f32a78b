/* The sources table keeps itself current while work is in flight: it polls the page's JSON and
 * replaces the rows that changed, keeping what the person opened or ticked. */
import { $, $$ } from "./dom.js";

function rowFrom(html) {
  const template = document.createElement("template");
  template.innerHTML = html.trim();
  return template.content.firstElementChild;
}

function applyRows(tbody, rows) {
  const existing = new Map($$("tr[data-source-id]", tbody).map((tr) => [tr.dataset.sourceId, tr]));
  let previous = null;
  for (const row of rows) {
    const key = String(row.id);
    let tr = existing.get(key);
    if (!tr || tr.dataset.version !== row.version) {
      const fresh = rowFrom(row.html);
      if (tr) {
        // Keep what the person opened.
        if ($("details[open]", tr)) {
          const details = $("details", fresh);
          if (details) details.open = true;
        }
        if (tr.dataset.status !== row.status) fresh.classList.add("flash");
        const picked = $("[data-pick]", tr);
        if (picked && picked.checked) $("[data-pick]", fresh).checked = true; // keep what was ticked
        tr.replaceWith(fresh);
      } else {
        fresh.classList.add("flash");
      }
      tr = fresh;
    }
    existing.delete(key);
    const expected = previous ? previous.nextElementSibling : tbody.firstElementChild;
    if (expected !== tr) tbody.insertBefore(tr, expected);
    previous = tr;
  }
  existing.forEach((tr) => tr.remove());
}

function applyCounts(page, data) {
  const counts = data.counts;
  $$("[data-count]", page).forEach((el) => (el.textContent = counts[el.dataset.count]));
  const tabCount = $(".tabs a.active .count");
  if (tabCount) tabCount.textContent = counts.total;
  $("[data-stats]", page).hidden = counts.total === 0;
  $("[data-sources-card]", page).hidden = counts.total === 0;
  $("[data-sources-empty]", page).hidden = counts.total !== 0;
  $("[data-live]", page).hidden = !data.active;
  const noMatch = $("[data-no-match]", page);
  if (noMatch) noMatch.hidden = data.rows.length > 0;
  const matched = $("[data-matched]", page);
  if (matched && data.matched_label) matched.textContent = data.matched_label;
  page.dataset.active = data.active ? "1" : "0";
}

// Returns refresh() (fetch and apply now) and schedule() (refresh after the poll interval).
// afterApply runs after each applied refresh.
export function liveSourceTable(page, afterApply) {
  const jsonUrl = page.dataset.jsonUrl;
  const pollMs = Number(page.dataset.pollMs) || 2000;
  const tbody = $("#source-rows");
  let timer = null;

  function schedule() {
    clearTimeout(timer);
    timer = setTimeout(refresh, pollMs);
  }

  async function refresh() {
    clearTimeout(timer);
    let data;
    try {
      const response = await fetch(jsonUrl, { headers: { Accept: "application/json" }, credentials: "same-origin" });
      if (!response.ok) throw new Error(String(response.status));
      data = await response.json();
    } catch (_error) {
      schedule(); // a blip (server restart, network): try again
      return;
    }
    applyRows(tbody, data.rows);
    applyCounts(page, data);
    afterApply();
    if (data.active) schedule();
  }

  return { refresh, schedule };
}
