/* The chunking preview: the passages the typed settings make, before they are saved. */
import { $ } from "./dom.js";
import { postJSON, readJSON } from "./http.js";
import { busy, clearErrors, showErrors } from "./feedback.js";

function drawChunks(out, preview) {
  out.textContent = "";
  const line = (cls, text) => {
    const p = document.createElement("p");
    p.className = cls;
    p.textContent = text;
    return p;
  };
  if (preview.notice) return out.append(line("muted small", preview.notice));
  const shown = preview.chunks.length;
  const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;
  let summary = `${plural(preview.total, "passage")} from ${preview.documents} of ${plural(preview.documents_total, "document")}`;
  if (preview.total > shown) summary += `; the first ${shown} shown`;
  const head = line("small", summary + ".");
  head.dataset.chunkSummary = "";
  const list = document.createElement("ol");
  list.className = "chunk-list";
  for (const chunk of preview.chunks) {
    const item = document.createElement("li");
    item.dataset.chunk = "";
    const about = document.createElement("div");
    about.className = "muted small";
    about.textContent = `${chunk.document} \u00b7 passage ${chunk.position + 1} \u00b7 ${chunk.text.length} characters`;
    const text = document.createElement("pre");
    text.textContent = chunk.text;
    item.append(about, text);
    list.append(item);
  }
  out.append(head, list);
}

export function chunkPreviewButtons() {
  document.addEventListener("click", async (event) => {
    const button = event.target.closest("[data-chunk-preview]");
    if (!button) return;
    event.preventDefault();
    const box = button.closest("[data-chunking]");
    const form = button.closest("form");
    const fields = Object.fromEntries(new FormData(form).entries());
    const body = {};
    for (const name of ["chunk_size", "chunk_overlap", "record_separator", "preview_text", "content"]) {
      if (name in fields) body[name] = fields[name];
    }
    busy(button, true);
    const response = await postJSON(box.dataset.previewUrl, body);
    busy(button, false);
    const result = await readJSON(response);
    clearErrors(form);
    if (!response.ok) return showErrors(form, result);
    drawChunks($("[data-chunk-preview-out]", box), result);
  });
}
