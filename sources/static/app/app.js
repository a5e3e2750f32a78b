/* Grounded admin UI: progressive enhancement on top of server-rendered pages. Plain JS, no build step.
 * Every page works without this file (forms post, links open pages); with it, dialogs open in place,
 * the sources table refreshes itself while work is in flight, and uploads show their progress. */
(function () {
  "use strict";
  document.documentElement.classList.add("js");

  const $ = (selector, root) => (root || document).querySelector(selector);
  const $$ = (selector, root) => Array.from((root || document).querySelectorAll(selector));
  const csrf = () => ($('meta[name="csrf-token"]') || {}).content || "";

  function postJSON(url, body) {
    return fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": csrf() },
      body: JSON.stringify(body || {}),
    });
  }

  async function readJSON(response) {
    try {
      return await response.json();
    } catch (_error) {
      return {};
    }
  }

  function messagesOf(errors) {
    if (!errors || typeof errors !== "object") return [];
    if (errors.detail) return [String(errors.detail)];
    return Object.values(errors).flat().map(String);
  }

  // --- flash messages ------------------------------------------------------------------------------
  function flash(text, kind) {
    // Toasts in a corner, so the page does not jump under the person's pointer.
    let box = $(".toasts");
    if (!box) {
      box = document.createElement("div");
      box.className = "toasts";
      box.setAttribute("aria-live", "polite");
      document.body.append(box);
    }
    const item = document.createElement("div");
    item.className = "flash-msg " + (kind || "success");
    item.setAttribute("role", "status");
    item.textContent = text;
    box.append(item);
    setTimeout(() => item.remove(), 6000);
  }

  // --- field errors ----------------------------------------------------------------------------------
  function clearErrors(root) {
    $$("[data-error-for]", root).forEach((el) => (el.textContent = ""));
    $$(".has-error", root).forEach((el) => el.classList.remove("has-error"));
  }

  function showErrors(root, errors) {
    clearErrors(root);
    const general = $('[data-error-for="__all__"]', root);
    for (const [field, list] of Object.entries(errors || {})) {
      const text = [].concat(list).join(" ");
      const target = $(`[data-error-for="${CSS.escape(field)}"]`, root) || general;
      if (!target) continue;
      target.textContent = target.textContent ? target.textContent + " " + text : text;
      const wrap = target.closest(".field");
      if (wrap) wrap.classList.add("has-error");
    }
  }

  function busy(button, on) {
    if (!button) return;
    if (on) {
      // The label as it is now: it may have changed since the last time (Add source, Upload, Upload 3 files).
      button.dataset.label = button.innerHTML;
      button.disabled = true;
      button.innerHTML = '<span class="spinner" aria-hidden="true"></span>' + button.dataset.label;
    } else {
      button.disabled = false;
      if (button.dataset.label) button.innerHTML = button.dataset.label;
      delete button.dataset.label;
    }
  }

  // --- dialogs -------------------------------------------------------------------------------------------
  function openDialog(dialog) {
    if (!dialog) return;
    if (dialog.open && !dialog.matches(":modal")) dialog.close();
    if (!dialog.open) dialog.showModal();
    const first = $("[autofocus], input:not([type=hidden]):not([type=radio]):not([disabled]), textarea", dialog);
    if (first && first.offsetParent !== null) first.focus();
  }

  document.addEventListener("click", (event) => {
    const opener = event.target.closest("[data-open-dialog]");
    if (opener) {
      event.preventDefault();
      openDialog(document.getElementById(opener.dataset.openDialog));
      return;
    }
    const closer = event.target.closest("[data-close-dialog]");
    if (closer) {
      event.preventDefault();
      const dialog = closer.closest("dialog");
      if (dialog) dialog.close();
    }
  });
  // A click on the backdrop (the dialog element itself, outside its content) closes it.
  document.addEventListener("mousedown", (event) => {
    if (event.target.tagName === "DIALOG" && event.target.matches(":modal")) {
      const box = event.target.getBoundingClientRect();
      const inside =
        event.clientX >= box.left && event.clientX <= box.right && event.clientY >= box.top && event.clientY <= box.bottom;
      if (!inside) event.target.close();
    }
  });

  // Rendered open by the server (a form posted without JavaScript came back with errors): make it modal.
  $$("dialog[open]").forEach((dialog) => openDialog(dialog));
  if (new URLSearchParams(location.search).has("add") || new URLSearchParams(location.search).has("discover")) {
    history.replaceState(null, "", location.pathname);
  }

  // --- small things on every page ------------------------------------------------------------------------
  $$("form[data-autosubmit] select").forEach((select) =>
    select.addEventListener("change", () => select.form.submit())
  );

  document.addEventListener("click", async (event) => {
    const button = event.target.closest("[data-copy]");
    if (!button) return;
    const source = $(button.dataset.copy);
    const text = source ? source.textContent.trim() : "";
    let copied = false;
    try {
      await navigator.clipboard.writeText(text);
      copied = true;
    } catch (_error) {
      const area = document.createElement("textarea");
      area.value = text;
      document.body.append(area);
      area.select();
      copied = document.execCommand("copy");
      area.remove();
    }
    button.textContent = copied ? "Copied" : "Select and copy";
    setTimeout(() => (button.textContent = "Copy"), 1800);
  });

  // --- chunking preview: the passages the typed settings make, before they are saved ----------------------
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

  // --- long passages: a visible "…" where a passage is cut, and a button to read the whole of it -----------
  function clampTexts(root) {
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
  clampTexts(document);

  // --- the sources page -------------------------------------------------------------------------------------
  const page = $("#sources-page");
  if (page) sourcesPage(page);

  function sourcesPage(page) {
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
      apply(data);
      if (data.active) schedule();
    }

    function rowFrom(html) {
      const template = document.createElement("template");
      template.innerHTML = html.trim();
      return template.content.firstElementChild;
    }

    function apply(data) {
      const existing = new Map($$("tr[data-source-id]", tbody).map((tr) => [tr.dataset.sourceId, tr]));
      let previous = null;
      for (const row of data.rows) {
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
      updatePicked();
    }

    // Search, filters and sort: a menu applies at once; the search box on Enter (or Apply).
    const tools = $("[data-list-tools]", page);
    if (tools) tools.addEventListener("change", (event) => {
      if (event.target.matches("select")) tools.requestSubmit();
    });

    // Bulk actions: the ticked rows' checkboxes belong to the bulk form (form="bulk-form").
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

    if (page.dataset.active === "1") schedule();

    // "just now" becomes "3 minutes ago" without a reload (the server wrote it once).
    function ago(iso) {
      const seconds = (Date.now() - new Date(iso).getTime()) / 1000;
      if (!(seconds >= 60)) return "just now";
      const [size, unit] = [[31536000, "year"], [2592000, "month"], [604800, "week"], [86400, "day"], [3600, "hour"], [60, "minute"]].find(([s]) => seconds >= s);
      const n = Math.floor(seconds / size);
      return `${n} ${unit}${n === 1 ? "" : "s"} ago`;
    }
    setInterval(() => $$("[data-ago]", page).forEach((cell) => (cell.textContent = ago(cell.dataset.ago))), 30000);

    // Reindex and recrawl.
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

    // Delete, with a confirmation naming what goes.
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

    // Preview in a dialog.
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

    // Re-upload a file whose stored text is gone: the button picks the file, choosing it uploads it.
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

    const addForm = $("[data-add-form]");
    if (addForm) addSourceForm(addForm, refresh);
    const discoverDialog = $("#discover-dialog");
    if (discoverDialog) discoverPages(discoverDialog, refresh);
  }

  // XMLHttpRequest rather than fetch: only it reports upload progress.
  function upload(url, formData, { onProgress } = {}) {
    return new Promise((resolve) => {
      const xhr = new XMLHttpRequest();
      xhr.open("POST", url);
      xhr.setRequestHeader("Accept", "application/json");
      xhr.setRequestHeader("X-CSRFToken", csrf());
      xhr.upload.onprogress = (event) => {
        if (event.lengthComputable && onProgress) onProgress(Math.round((event.loaded / event.total) * 100));
      };
      xhr.onload = () => {
        let body = {};
        try {
          body = JSON.parse(xhr.responseText || "{}");
        } catch (_error) {
          body = { __all__: [`The server answered ${xhr.status}.`] };
        }
        resolve({ status: xhr.status, body });
      };
      xhr.onerror = () => resolve({ status: 0, body: { __all__: ["The connection failed; check it and try again."] } });
      xhr.send(formData);
    });
  }

  function humanSize(bytes) {
    if (bytes >= 1048576) return (bytes / 1048576).toFixed(1) + " MB";
    if (bytes >= 1024) return Math.round(bytes / 1024) + " KB";
    return bytes + " B";
  }

  function addSourceForm(form, refresh) {
    const dialog = form.closest("dialog");
    const fileInput = $("input[type=file]", form);
    const list = $("[data-file-list]", form);
    const dropzone = $("[data-dropzone]", form);
    const progress = $("[data-progress]", form);
    const bar = $("[data-progress-bar]", form);
    const label = $("[data-progress-label]", form);
    const submit = $("[data-submit]", form);
    const maxFiles = Number(form.dataset.maxFiles);
    let files = [];

    const chosen = () => $("input[name=kind]:checked", form) || { value: "", dataset: {} };
    const kind = () => chosen().value;
    const takesFiles = () => "files" in chosen().dataset;

    function renderFiles() {
      list.textContent = "";
      files.forEach((file, index) => {
        const li = document.createElement("li");
        const name = document.createElement("span");
        name.textContent = file.name;
        const size = document.createElement("span");
        size.className = "muted";
        size.textContent = humanSize(file.size);
        const remove = document.createElement("button");
        remove.type = "button";
        remove.className = "close-x";
        remove.textContent = "\u00d7";
        remove.setAttribute("aria-label", `Remove ${file.name}`);
        remove.dataset.removeFile = String(index);
        li.append(name, size, remove);
        list.append(li);
      });
      submit.textContent = takesFiles() && files.length > 1 ? `Upload ${files.length} files` : takesFiles() ? "Upload" : "Add source";
    }

    // Checked when picked, not only on submit: the limits the server applies, said before any upload.
    function checkFiles() {
      clearErrors(form);
      if (files.length > maxFiles) return showErrors(form, { file: [`At most ${maxFiles} files at once.`] });
      const big = files.find((file) => file.size > Number(form.dataset.maxBytes));
      if (big) {
        showErrors(form, {
          file: [`${big.name} is ${humanSize(big.size)}; the limit per file is ${form.dataset.maxLabel}.`],
        });
      }
    }
    fileInput.addEventListener("change", () => {
      files = Array.from(fileInput.files);
      fileInput.value = ""; // so picking the same file again after removing it is noticed
      renderFiles();
      checkFiles();
    });
    list.addEventListener("click", (event) => {
      const remove = event.target.closest("[data-remove-file]");
      if (!remove) return;
      files.splice(Number(remove.dataset.removeFile), 1);
      renderFiles();
      checkFiles();
    });
    // Closing the dialog (Cancel, ×, Escape, the backdrop) forgets old messages; what was typed stays.
    dialog.addEventListener("close", () => {
      clearErrors(form);
      progress.hidden = true;
      $$("[data-chunk-preview-out]", form).forEach((out) => (out.textContent = ""));
    });
    dropzone.addEventListener("dragover", (event) => {
      event.preventDefault();
      dropzone.classList.add("over");
    });
    dropzone.addEventListener("dragleave", () => dropzone.classList.remove("over"));
    dropzone.addEventListener("drop", (event) => {
      event.preventDefault();
      dropzone.classList.remove("over");
      files = Array.from(event.dataTransfer.files);
      renderFiles();
      checkFiles();
    });
    form.addEventListener("change", (event) => {
      if (event.target.name === "kind") {
        clearErrors(form);
        renderFiles();
      }
    });

    function done(count) {
      dialog.close();
      form.reset();
      files = [];
      renderFiles();
      progress.hidden = true;
      clearErrors(form);
      flash(count > 1 ? `Added ${count} sources. Their progress shows below.` : "Added. Its progress shows below.");
      refresh();
    }

    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      clearErrors(form);
      if (takesFiles()) {
        if (!files.length) return showErrors(form, { file: ["Choose at least one file."] });
        if (files.length > maxFiles) return showErrors(form, { file: [`At most ${maxFiles} files at once.`] });
        const big = files.find((file) => file.size > Number(form.dataset.maxBytes));
        if (big) {
          return showErrors(form, {
            file: [`${big.name} is ${humanSize(big.size)}; the limit per file is ${form.dataset.maxLabel}.`],
          });
        }
        const data = new FormData();
        data.append("kind", kind());
        // Audiences and metadata apply to every file of the upload.
        for (const name of ["audiences", "metadata"]) data.append(name, new FormData(form).get(name) || "");
        files.forEach((file) => data.append("file", file, file.name));
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
      const fields = Object.fromEntries(new FormData(form).entries());
      const payload = { kind: kind(), title: fields.title || "" };
      // The chosen kind's own fields (data-fields on its tab), as the server's form does.
      for (const name of (chosen().dataset.fields || "").split(" ").filter(Boolean)) payload[name] = fields[name] || "";
      if (chosen().dataset.resyncable !== undefined) payload.schedule = fields.schedule || "";
      payload.audiences = fields.audiences || "";
      payload.metadata = fields.metadata || "";
      for (const name of ["chunk_size", "chunk_overlap", "record_separator"]) payload[name] = fields[name] || "";
      busy(submit, true);
      const response = await postJSON(form.action, payload);
      busy(submit, false);
      const body = await readJSON(response);
      if (response.status === 201) return done((body.sources || []).length);
      if (response.status === 402) flash(messagesOf(body).join(" "), "error"); // the plan refused: a banner too
      showErrors(form, response.status === 403 ? { __all__: [body.detail] } : body);
    });
  }

  function discoverPages(dialog, refresh) {
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
      for (const found of body.pages) {
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
        list.append(li);
      }
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

  // --- the live preview chat on the settings page --------------------------------------------------------------
  const chat = $("[data-preview-chat]");
  if (chat) previewChat(chat);
  const widgetPreview = $("[data-widget-preview]");
  if (widgetPreview) themePreview(widgetPreview);

  // The settings page's widget preview follows the theme fields as they are edited.
  function themePreview(preview) {
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

  function previewChat(chat) {
    const log = $("[data-chat-log]", chat);
    const form = $("[data-chat-form]", chat);
    const input = form.message;
    const emptyNote = $("[data-chat-empty]", log).cloneNode(true);
    let conversationId = null; // follow-up questions continue the conversation, as in the widget

    $("[data-chat-reset]", chat).addEventListener("click", () => {
      conversationId = null;
      log.replaceChildren(emptyNote.cloneNode(true));
      input.focus();
    });

    function bubble(kind, text) {
      const empty = $("[data-chat-empty]", log);
      if (empty) empty.remove();
      const el = document.createElement("div");
      el.className = "bubble " + kind;
      el.textContent = text || "";
      log.append(el);
      log.scrollTop = log.scrollHeight;
      return el;
    }

    function hitsBlock(event) {
      const details = document.createElement("details");
      details.className = "hits-mini";
      details.open = true;
      details.dataset.hits = String(event.hits.length);
      const summary = document.createElement("summary");
      summary.textContent = `Retrieved ${event.hits.length} passage${event.hits.length === 1 ? "" : "s"} for “${event.query}”`;
      details.append(summary);
      const ol = document.createElement("ol");
      for (const hit of event.hits) {
        const li = document.createElement("li");
        const title = document.createElement("strong");
        title.textContent = hit.title || "Untitled";
        const score = document.createElement("span");
        score.className = "muted";
        score.textContent = ` · score ${Number(hit.score).toFixed(3)}`;
        const text = document.createElement("span");
        text.className = "x";
        text.textContent = hit.text;
        li.append(title, score, text);
        ol.append(li);
      }
      if (!event.hits.length) {
        const none = document.createElement("div");
        none.className = "muted";
        none.textContent = "No passage matched.";
        details.append(none);
      }
      details.append(ol);
      return details;
    }

    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const message = input.value.trim();
      if (!message) return;
      input.value = "";
      const button = $("button", form);
      button.disabled = true;
      bubble("user", message);
      const answer = bubble("bot");
      answer.innerHTML = '<span class="typing">Thinking…</span>';
      let text = "";
      try {
        const response = await fetch(chat.dataset.url, {
          method: "POST",
          credentials: "same-origin",
          headers: { "Content-Type": "application/json", Accept: "text/event-stream", "X-CSRFToken": csrf() },
          body: JSON.stringify({ message, conversation_id: conversationId }),
        });
        if (!response.ok || !response.body) {
          answer.classList.add("error");
          answer.textContent = messagesOf(await readJSON(response)).join(" ") || `The preview failed (${response.status}).`;
          return;
        }
        const reader = response.body.getReader();
        const decoder = new TextDecoder();
        let buffer = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += decoder.decode(value, { stream: true });
          let cut;
          while ((cut = buffer.indexOf("\n\n")) >= 0) {
            const block = buffer.slice(0, cut);
            buffer = buffer.slice(cut + 2);
            const dataLine = block.split("\n").find((line) => line.startsWith("data: "));
            if (!dataLine) continue;
            const data = JSON.parse(dataLine.slice(6));
            if (data.type === "knowledge.hits") {
              log.insertBefore(hitsBlock(data), answer);
            } else if (data.type === "text.delta") {
              text += data.delta;
              answer.textContent = text;
            } else if (data.type === "error") {
              answer.classList.add("error");
              answer.textContent = data.message;
              if (data.detail && data.detail !== data.message) {
                const more = document.createElement("details");
                more.className = "details";
                const summary = document.createElement("summary");
                summary.textContent = "Show details";
                const pre = document.createElement("pre");
                pre.className = "detail";
                pre.textContent = data.detail;
                more.append(summary, pre);
                answer.append(more);
              }
            } else if (data.type === "done") {
              conversationId = data.conversation_id;
              answer.textContent = data.answer;
              answer.dataset.done = "1";
              if (data.metadata && data.metadata.offtopic) {
                const tag = document.createElement("div");
                tag.className = "badge warn";
                tag.style.marginTop = "6px";
                tag.textContent = "Off-topic reply (scope gate)";
                answer.append(document.createElement("br"), tag);
              }
              if (data.sources && data.sources.length) {
                const sources = document.createElement("div");
                sources.className = "muted small";
                sources.style.marginTop = "6px";
                sources.textContent = "Sources: " + data.sources.map((s) => s.title).join(", ");
                answer.append(sources);
              }
            }
            log.scrollTop = log.scrollHeight;
          }
        }
      } catch (_error) {
        answer.classList.add("error");
        answer.textContent = "The connection was lost; try again.";
      } finally {
        button.disabled = false;
        input.focus();
      }
    });
  }
})();
