/* Grounded admin UI: progressive enhancement on top of server-rendered pages. Native ES modules, no build
 * step: base.html loads this module, which loads the rest.
 * Every page works without JavaScript (forms post, links open pages); with it, dialogs open in place,
 * the sources table refreshes itself while work is in flight, and uploads show their progress. */
import { $ } from "./dom.js";
import { installDialogs } from "./dialogs.js";
import { autosubmitMenus, copyButtons } from "./every-page.js";
import { chunkPreviewButtons } from "./chunk-preview.js";
import { clampTexts } from "./clamp.js";
import { sourcesPage } from "./sources-page.js";
import { previewChat } from "./preview-chat.js";
import { themePreview } from "./theme-preview.js";

document.documentElement.classList.add("js");

installDialogs();
autosubmitMenus();
copyButtons();
chunkPreviewButtons();
clampTexts(document);

const page = $("#sources-page");
if (page) sourcesPage(page);
const chat = $("[data-preview-chat]");
if (chat) previewChat(chat);
const widgetPreview = $("[data-widget-preview]");
if (widgetPreview) themePreview(widgetPreview);
