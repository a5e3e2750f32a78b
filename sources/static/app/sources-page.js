/* The sources page: a live table, search and filters, bulk and row actions, adding sources. */
import { $ } from "./dom.js";
import { liveSourceTable } from "./source-table.js";
import { bulkActions } from "./source-bulk.js";
import { keepTimesFresh } from "./relative-time.js";
import { actionForms, deleteWithConfirmation, previewInDialog, reuploadButtons } from "./source-row-actions.js";
import { addSourceForm } from "./add-source.js";
import { discoverPages } from "./discover-pages.js";

export function sourcesPage(page) {
  // Search, filters and sort: a menu applies at once; the search box on Enter (or Apply).
  const tools = $("[data-list-tools]", page);
  if (tools) tools.addEventListener("change", (event) => {
    if (event.target.matches("select")) tools.requestSubmit();
  });

  const updatePicked = bulkActions(page);
  const { refresh, schedule } = liveSourceTable(page, updatePicked);
  if (page.dataset.active === "1") schedule();
  keepTimesFresh(page);

  actionForms(page, refresh);
  deleteWithConfirmation(page, refresh);
  previewInDialog(page);
  reuploadButtons(page, refresh);

  const addForm = $("[data-add-form]");
  if (addForm) addSourceForm(addForm, refresh);
  const discoverDialog = $("#discover-dialog");
  if (discoverDialog) discoverPages(discoverDialog, refresh);
}
