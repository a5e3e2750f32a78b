/* What a row of the sources table does in place: reindex and recrawl, delete, preview, re-upload. */
import { $, csrf } from "./dom.js";
import { messagesOf, readJSON, upload } from "./http.js";
import { busy, clearErrors, flash, showErrors } from "./feedback.js";
import { openDialog } from "./dialogs.js";
import { clampTexts } from "./clamp.js";

// Reindex and recrawl.
export function actionForms(page, refresh) {
  page.addEventListener("submit", async (event) => {
    const form = event.target.closest("form[data-action]");
    if (!form) return;
    event.preventDefault();
    const button = $("button", form);
    busy(button, true);
    const response = await fetch(form.action, {
      method: "POST",
      credentials: "same-origin",
      headers: { Accept: "application/json", "X-CSRFToken": csrf() },
    });
    busy(button, false);
    const title = form.closest("tr").querySelector("[data-field=title]").textContent;
    if (response.ok) {
      flash(`${title}: ${form.dataset.started || form.dataset.action + " started"}.`);
    } else {
      flash(`${title}: ${messagesOf(await readJSON(response)).join(" ") || "that didn't work."}`, "error");
    }
    refresh();
  });
}

// Delete, with a confirmation naming what goes.
export function deleteWithConfirmation(page, refresh) {
  const deleteDialog = $("#delete-dialog");
  page.addEventListener("click", (event) => {
    const link = event.target.closest("a[data-delete]");
    if (!link || !deleteDialog) return;
    event.preventDefault();
    const form = $("form", deleteDialog);
    form.action = link.href;
    const pages = Number(link.dataset.pages);
    const chunks = Number(link.dataset.chunks);
    const summary = $("[data-delete-summary]", deleteDialog);
    summary.textContent = "";
    summary.append("This removes ");
    const strong = document.createElement("strong");
    strong.textContent = link.dataset.title;
    summary.append(strong, ` with its ${pages} page${pages === 1 ? "" : "s"} and ${chunks} chunk${chunks === 1 ? "" : "s"}.`);
    clearErrors(deleteDialog);
    deleteDialog.dataset.title = link.dataset.title;
    openDialog(deleteDialog);
  });
  if (deleteDialog) {
    $("form", deleteDialog).addEventListener("submit", async (event) => {
      event.preventDefault();
      const form = event.target;
      const button = $("[data-confirm-delete]", form);
      busy(button, true);
      const response = await fetch(form.action, {
        method: "POST",
        credentials: "same-origin",
        headers: { Accept: "application/json", "X-CSRFToken": csrf() },
      });
      busy(button, false);
      if (response.ok) {
        deleteDialog.close();
        flash(`Deleted ${deleteDialog.dataset.title}.`);
        refresh();
      } else {
        showErrors(form, (await readJSON(response)) || { __all__: ["That didn't work."] });
      }
    });
  }
}

// Preview in a dialog.
export function previewInDialog(page) {
  const previewDialog = $("#preview-dialog");
  page.addEventListener("click", async (event) => {
    const link = event.target.closest("a[data-preview]");
    if (!link || !previewDialog) return;
    event.preventDefault();
    const body = $("[data-preview-body]", previewDialog);
    body.innerHTML = '<p class="muted">Loading…</p>';
    $("[data-preview-link]", previewDialog).href = link.href;
    $("#preview-title", previewDialog).textContent =
      link.closest("tr").querySelector("[data-field=title]").textContent;
    openDialog(previewDialog);
    const response = await fetch(link.href + "?fragment=1", { credentials: "same-origin" });
    body.innerHTML = response.ok ? await response.text() : '<p class="field-error">The preview could not be loaded.</p>';
    clampTexts(body);
  });
}

// Re-upload a file whose stored text is gone: the button picks the file, choosing it uploads it.
export function reuploadButtons(page, refresh) {
  page.addEventListener("click", (event) => {
    const button = event.target.closest("[data-reupload-button]");
    if (!button) return;
    event.preventDefault();
    $("[data-reupload-input]", button.form).click();
  });
  page.addEventListener("change", (event) => {
    const input = event.target.closest("[data-reupload-input]");
    if (!input || !input.files.length) return;
    const form = input.form;
    const data = new FormData(form);
    const button = $("[data-reupload-button]", form);
    upload(form.action, data, {
      onProgress: (pct) => (button.textContent = `Uploading ${pct}%`),
    }).then(({ status, body }) => {
      if (status >= 200 && status < 300) flash("Uploaded again; it is being indexed.");
      else flash(messagesOf(body).join(" ") || "The upload failed.", "error");
      refresh();
    });
  });
}
