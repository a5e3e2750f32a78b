/* The "Discover pages" dialog: find a site's pages, tick the ones to add, add them in one go. */
import { $, $$ } from "./dom.js";
import { postJSON, readJSON } from "./http.js";
import { busy, clearErrors, flash, showErrors } from "./feedback.js";

function pageItem(found) {
  const li = document.createElement("li");
  const labelEl = document.createElement("label");
  const box = document.createElement("input");
  box.type = "checkbox";
  box.dataset.page = "";
  box.value = found.url;
  box.dataset.title = found.title || "";
  box.checked = !found.added;
  box.disabled = found.added;
  const text = document.createElement("span");
  const title = document.createElement("span");
  title.className = "t";
  title.textContent = found.title || found.url.replace(/^https?:\/\//, "");
  const url = document.createElement("span");
  url.className = "u";
  url.textContent = found.url;
  text.append(title, url);
  const tag = document.createElement("span");
  tag.className = "badge plain tag";
  tag.textContent = found.added ? "Already added" : { home: "Home page", sitemap: "Sitemap", common_path: "Common page" }[found.found_by] || found.found_by;
  labelEl.append(box, text, tag);
  li.append(labelEl);
  return li;
}

export function discoverPages(dialog, refresh) {
  const form = $("[data-discover-form]", dialog);
  const results = $("[data-discover-results]", dialog);
  const list = $("[data-page-list]", dialog);
  const addButton = $("[data-add-picked]", dialog);
  const checkAll = $("[data-check-all]", dialog);

  const boxes = () => $$("input[data-page]:not(:disabled)", list);
  function updateCount() {
    const picked = boxes().filter((box) => box.checked).length;
    addButton.disabled = picked === 0;
    addButton.textContent = picked ? `Add ${picked} page${picked === 1 ? "" : "s"}` : "Add pages";
    $("[data-picked-count]", dialog).textContent = `${picked} ticked`;
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearErrors(dialog);
    const submit = $("[data-submit]", form);
    busy(submit, true);
    const response = await postJSON(form.action, { domain: form.domain.value });
    busy(submit, false);
    const body = await readJSON(response);
    if (!response.ok) {
      results.hidden = true;
      showErrors(dialog, response.status === 403 ? { domain: [body.detail] } : body);
      return;
    }
    list.textContent = "";
    for (const found of body.pages) list.append(pageItem(found));
    $("[data-found-count]", dialog).textContent = body.pages.length
      ? `${body.pages.length} page${body.pages.length === 1 ? "" : "s"} found`
      : "No pages found";
    checkAll.checked = true;
    results.hidden = false;
    updateCount();
  });
  list.addEventListener("change", updateCount);
  checkAll.addEventListener("change", () => {
    boxes().forEach((box) => (box.checked = checkAll.checked));
    updateCount();
  });
  addButton.addEventListener("click", async () => {
    const pages = boxes()
      .filter((box) => box.checked)
      .map((box) => ({ url: box.value, title: box.dataset.title }));
    busy(addButton, true);
    const response = await postJSON(addButton.dataset.url, { pages });
    busy(addButton, false);
    const body = await readJSON(response);
    if (response.ok) {
      const failed = Object.entries(body.errors || {});
      dialog.close();
      results.hidden = true;
      form.reset();
      flash(`Added ${body.sources.length} page${body.sources.length === 1 ? "" : "s"}.`);
      if (failed.length) flash(failed.map(([url, msgs]) => `${url}: ${msgs.join(" ")}`).join(" · "), "error");
      refresh();
      updateCount();
    } else if (body.errors) {
      showErrors(dialog, { pages: Object.entries(body.errors).map(([url, msgs]) => `${url}: ${msgs.join(" ")}`) });
    } else {
      showErrors(dialog, body.detail ? { pages: [body.detail] } : body);
    }
  });
}
