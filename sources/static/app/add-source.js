/* The "Add source" dialog: uploads files with their progress, or posts the chosen kind's fields. */
import { $, $$ } from "./dom.js";
import { messagesOf, postJSON, readJSON, upload } from "./http.js";
import { busy, clearErrors, flash, showErrors } from "./feedback.js";
import { filePicker, humanSize } from "./add-source-files.js";

async function uploadFiles(form, files, kind, done) {
  const maxFiles = Number(form.dataset.maxFiles);
  if (!files.length) return showErrors(form, { file: ["Choose at least one file."] });
  if (files.length > maxFiles) return showErrors(form, { file: [`At most ${maxFiles} files at once.`] });
  const big = files.find((file) => file.size > Number(form.dataset.maxBytes));
  if (big) {
    return showErrors(form, {
      file: [`${big.name} is ${humanSize(big.size)}; the limit per file is ${form.dataset.maxLabel}.`],
    });
  }
  const data = new FormData();
  data.append("kind", kind);
  // Audiences and metadata apply to every file of the upload.
  for (const name of ["audiences", "metadata"]) data.append(name, new FormData(form).get(name) || "");
  files.forEach((file) => data.append("file", file, file.name));
  const progress = $("[data-progress]", form);
  const bar = $("[data-progress-bar]", form);
  const label = $("[data-progress-label]", form);
  const submit = $("[data-submit]", form);
  progress.hidden = false;
  bar.style.width = "0%";
  label.textContent = "Uploading…";
  busy(submit, true);
  const { status, body } = await upload(form.action, data, {
    onProgress: (pct) => {
      bar.style.width = pct + "%";
      bar.parentElement.setAttribute("aria-valuenow", String(pct));
      label.textContent = pct < 100 ? `Uploading… ${pct}%` : "Uploaded; saving…";
    },
  });
  busy(submit, false);
  if (status === 201) return done((body.sources || []).length);
  progress.hidden = true;
  if (status === 402) flash(messagesOf(body).join(" "), "error"); // the plan refused: a banner too
  return showErrors(form, body);
}

async function postFields(form, chosen, done) {
  const fields = Object.fromEntries(new FormData(form).entries());
  const payload = { kind: chosen.value, title: fields.title || "" };
  // The chosen kind's own fields (data-fields on its tab), as the server's form does.
  for (const name of (chosen.dataset.fields || "").split(" ").filter(Boolean)) payload[name] = fields[name] || "";
  if (chosen.dataset.resyncable !== undefined) payload.schedule = fields.schedule || "";
  payload.audiences = fields.audiences || "";
  payload.metadata = fields.metadata || "";
  for (const name of ["chunk_size", "chunk_overlap", "record_separator"]) payload[name] = fields[name] || "";
  const submit = $("[data-submit]", form);
  busy(submit, true);
  const response = await postJSON(form.action, payload);
  busy(submit, false);
  const body = await readJSON(response);
  if (response.status === 201) return done((body.sources || []).length);
  if (response.status === 402) flash(messagesOf(body).join(" "), "error"); // the plan refused: a banner too
  showErrors(form, response.status === 403 ? { __all__: [body.detail] } : body);
}

export function addSourceForm(form, refresh) {
  const dialog = form.closest("dialog");
  const progress = $("[data-progress]", form);
  const chosen = () => $("input[name=kind]:checked", form) || { value: "", dataset: {} };
  const takesFiles = () => "files" in chosen().dataset;
  const picker = filePicker(form, takesFiles);

  // Closing the dialog (Cancel, ×, Escape, the backdrop) forgets old messages; what was typed stays.
  dialog.addEventListener("close", () => {
    clearErrors(form);
    progress.hidden = true;
    $$("[data-chunk-preview-out]", form).forEach((out) => (out.textContent = ""));
  });
  form.addEventListener("change", (event) => {
    if (event.target.name === "kind") {
      clearErrors(form);
      picker.render();
    }
  });

  function done(count) {
    dialog.close();
    form.reset();
    picker.clear();
    progress.hidden = true;
    clearErrors(form);
    flash(count > 1 ? `Added ${count} sources. Their progress shows below.` : "Added. Its progress shows below.");
    refresh();
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearErrors(form);
    if (takesFiles()) return uploadFiles(form, picker.files(), chosen().value, done);
    return postFields(form, chosen(), done);
  });
}
