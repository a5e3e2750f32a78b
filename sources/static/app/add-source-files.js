/* The files of the "Add source" dialog: picked or dropped, listed with a remove button, checked against
 * the limits the server applies before any upload. */
import { $ } from "./dom.js";
import { clearErrors, showErrors } from "./feedback.js";

export function humanSize(bytes) {
  if (bytes >= 1048576) return (bytes / 1048576).toFixed(1) + " MB";
  if (bytes >= 1024) return Math.round(bytes / 1024) + " KB";
  return bytes + " B";
}

// Returns the picked files (files()), render() to redraw the list and the submit label, and clear().
export function filePicker(form, takesFiles) {
  const fileInput = $("input[type=file]", form);
  const list = $("[data-file-list]", form);
  const dropzone = $("[data-dropzone]", form);
  const submit = $("[data-submit]", form);
  const maxFiles = Number(form.dataset.maxFiles);
  let files = [];

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

  return {
    files: () => files,
    render: renderFiles,
    clear() {
      files = [];
      renderFiles();
    },
  };
}
